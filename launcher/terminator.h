// Ending a job's workers on every agent (HostAgents) for the job session,
// off its thread where it may take a while: Terminate (each worker's
// process group gets SIGTERM, then SIGKILL after the grace period) on a
// thread that pushes TerminateDone when done, and SIGKILL through every
// agent after a second signal to hvdrun. The threads are joined by join()
// and by the destructor.
#pragma once

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "launcher/job_events.h"

namespace hvd::launcher {

class HostAgents;

class Terminator {
 public:
  explicit Terminator(std::chrono::milliseconds grace) : grace_(grace) {}
  ~Terminator() { join(); }
  Terminator(const Terminator&) = delete;
  Terminator& operator=(const Terminator&) = delete;

  // Each worker's SIGTERM to SIGKILL (the terminate_grace setting).
  std::chrono::milliseconds grace() const { return grace_; }
  bool terminating() const { return terminating_; }
  // TerminateDone arrived.
  bool done() const { return done_; }
  void set_done() { done_ = true; }

  // Once: Terminate on every agent, on a thread; TerminateDone on `queue`
  // when it returns. Agents marked in `lost` (their Watch stream failed:
  // they may be gone) get a short deadline.
  void begin(HostAgents& agents, const std::string& job_id, std::vector<bool> lost,
             EventQueue& queue);
  // SIGKILL to every agent's workers, on a thread.
  void kill(HostAgents& agents, const std::string& job_id);
  // Unless terminating already: Terminate on every agent now, waiting for
  // it (every exit path: nothing may be left).
  void terminate_now(HostAgents& agents, const std::string& job_id,
                     const std::vector<bool>& lost);
  void join();

 private:
  const std::chrono::milliseconds grace_;
  bool terminating_ = false;
  bool done_ = false;
  std::thread terminator_;
  std::thread killer_;
};

}  // namespace hvd::launcher
