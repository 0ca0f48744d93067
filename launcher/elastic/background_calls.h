// Calls that must not hold up hvdrun's driver thread, each on a thread of its
// own: stopping a worker on a host whose agent does not answer (a network
// partition) waits for the Signal's whole deadline, and meanwhile hvdrun
// would forward no output and handle no other event. The calls' results are
// only logged, so nobody waits for them until wait_all() (at the end of the
// job, before the agents' clients go).
#pragma once

#include <functional>
#include <future>
#include <mutex>
#include <vector>

namespace hvd::launcher::elastic {

class BackgroundCalls {
 public:
  BackgroundCalls() = default;
  BackgroundCalls(const BackgroundCalls&) = delete;
  BackgroundCalls& operator=(const BackgroundCalls&) = delete;
  ~BackgroundCalls() { wait_all(); }

  // Starts `call` on its own thread; forgets the calls that have finished.
  void run(std::function<void()> call);

  // Returns once every call started so far has returned (each has its own
  // deadline). Thread-safe; run() may be used again afterwards.
  void wait_all();

  // Calls started and not yet returned.
  size_t pending();

 private:
  void prune_locked();
  std::mutex mu_;
  std::vector<std::future<void>> calls_;
};

}  // namespace hvd::launcher::elastic
