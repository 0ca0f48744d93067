// The deadlines of the rendezvous service's waiting calls (a Join waiting
// for its round, a Get for its keys, a spare for its promotion): one thread
// for all of them, not one per call (issue 31). at() runs a function at a
// time on that thread; cancel() drops it if it has not run. Functions run
// one at a time, without the timer's lock held: they may call at() and
// cancel(). The thread starts with the first at() and stops in the
// destructor, which drops what has not run. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

namespace hvd::daemon {

class WaitTimer {
 public:
  using Clock = std::chrono::steady_clock;

  WaitTimer() = default;
  ~WaitTimer();
  WaitTimer(const WaitTimer&) = delete;
  WaitTimer& operator=(const WaitTimer&) = delete;

  // Runs `fn` at `when` (at once when it has passed); an id for cancel(),
  // never 0.
  uint64_t at(Clock::time_point when, std::function<void()> fn);
  // Drops the function of `id` unless it runs or ran already.
  void cancel(uint64_t id);
  // Functions waiting to run (tests).
  size_t pending() const;

 private:
  void run();

  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::multimap<Clock::time_point, std::pair<uint64_t, std::function<void()>>> due_;
  std::map<uint64_t, decltype(due_)::iterator> by_id_;
  uint64_t next_id_ = 1;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace hvd::daemon
