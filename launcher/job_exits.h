// How a job ends, for the job session (launcher/job_session.h), on its
// thread: which slots' workers have exited, the failures gathered while
// they settle, and hvdrun's exit code, recorded once (the first decision
// stands).
//
// When one worker dies, its peers fail a moment later with a transport
// error, usually with the generic exit code 1, and the agent may report
// them in the same batch as the first, in rank order. So failures are
// gathered for kFailureSettle after the first one; the one that decides the
// job is the first that is not a plain "exit code 1" (a signal or a
// specific code), else simply the first.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <vector>

#include "launcher/job_events.h"

namespace hvd::launcher {

inline constexpr std::chrono::milliseconds kFailureSettle{300};

class JobExits {
 public:
  using Clock = std::chrono::steady_clock;

  // `slots` slots (an elastic job's go up to --max-np), the first `running`
  // of them with a worker.
  JobExits(size_t slots, size_t running);

  // The worker of `slot` exited: false when the slot has no running worker
  // (an unknown rank, or one that exited already).
  bool exited(int slot);
  // Elastic jobs: a worker started in `slot`, or went without an exit event
  // (its agent was lost). Neither counts in exited_count().
  void set_running(int slot) { exited_[static_cast<size_t>(slot)] = false; }
  void set_gone(int slot) { exited_[static_cast<size_t>(slot)] = true; }
  bool has_exited(int slot) const { return exited_[static_cast<size_t>(slot)]; }
  // Exit events of running workers so far.
  int exited_count() const { return exited_count_; }

  // A failed worker: the first one starts the settle time.
  void add_failure(const WorkerExited& exit, Clock::time_point now);
  bool settling() const { return settle_deadline_.has_value(); }
  std::optional<Clock::time_point> settle_deadline() const { return settle_deadline_; }
  // The failure that decides the job among those gathered (none: nothing
  // gathered); the settle time ends.
  std::optional<WorkerExited> take_failure();

  // Records hvdrun's exit code unless one is recorded already.
  void decide(int code) {
    if (!code_) code_ = code;
  }
  std::optional<int> code() const { return code_; }

 private:
  std::vector<bool> exited_;  // by slot
  int exited_count_ = 0;
  std::vector<WorkerExited> pending_failures_;
  std::optional<Clock::time_point> settle_deadline_;
  std::optional<int> code_;
};

}  // namespace hvd::launcher
