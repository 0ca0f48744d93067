// Process supervisor: spawns worker processes, each in its own process group
// (and with PR_SET_PDEATHSIG so none outlives a killed parent), contained as
// containment.h says (the job's cgroup, or a keeper per worker), captures
// stdout and stderr line by line, reports exits, and terminates process
// groups (SIGTERM, grace period, SIGKILL), and says when a process stops
// (state T in /proc: SIGSTOP, a debugger) or runs again, sampled every
// kStateSample. One supervisor thread owns every child: it forks, polls the
// pipes and pidfds, samples and reaps. Output flow control: while the
// owner's output_room() says no, the pipes are not read, so the processes
// block in their writes once the pipes are full (as on a slow terminal); a
// process blocked so is alive and running, not stopped.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/process_spec.h"
#include "common/status.h"

namespace hvd::daemon {

using common::ProcessSpec;
using common::Result;
using common::Status;


struct ProcessEvent {
  // kState: the process stopped, or runs again (`stopped`). A process starts
  // running (no event); its events come before its kExit.
  enum class Kind { kOutput, kExit, kState };
  Kind kind = Kind::kOutput;
  int rank = 0;
  int64_t pid = 0;
  bool is_stderr = false;  // kOutput
  std::string text;        // kOutput: one line, without '\n'
  int exit_code = 0;       // kExit, when signal == 0
  int signal = 0;          // kExit: the signal that ended the process, or 0
  bool stopped = false;    // kState
};

class Supervisor {
 public:
  // How often the state of every process is read (proc_state.h).
  static constexpr std::chrono::milliseconds kStateSample{500};

  // Called on the supervisor thread, in order; all output a process wrote
  // before it exited is delivered before its kExit event. Lines of one
  // stream keep their order; stdout and stderr of a process interleave only
  // roughly. Output written after the exit by the process's own children
  // (which may hold the pipes) is not delivered. The sink must return
  // quickly and must not call terminate_all() or destroy the Supervisor.
  using EventSink = std::function<void(const ProcessEvent&)>;

  // Whether the sink takes more output now; empty: always. Called on the
  // supervisor thread before each read of a pipe (it must be quick). Once it
  // turns true again, call the output_waker(). Only what a process left in
  // its pipes when it exited is read regardless (its exit event follows it).
  using OutputRoom = std::function<bool()>;

  explicit Supervisor(EventSink sink, OutputRoom output_room = {});
  // SIGKILLs every process group still alive, then joins the thread.
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Resolves argv[0] against the PATH of spec.env first: kNotFound
  // "cannot execute 'x': command not found" (or kFailedPrecondition
  // "... permission denied") without forking. Returns the pid.
  Result<int64_t> spawn(const ProcessSpec& spec);

  // Sends sig to every process group spawned here that is still alive.
  void signal_all(int sig);
  // Sends sig to the process group of `rank`'s latest worker; false when
  // there is none or it is gone.
  bool signal_rank(int rank, int sig);

  // SIGTERM to every live process group, SIGKILL to those still alive after
  // `grace`; returns once every group is gone. Returns how many needed SIGKILL.
  // A group counts as gone once only zombies are left in it (an orphaned
  // grandchild waits for init to reap it). It also waits (up to 1 s) for the
  // leaders to be reaped, so their kExit events are out when it returns.
  // Then what is left in the job's cgroup (outside the groups) is SIGKILLed.
  int terminate_all(std::chrono::milliseconds grace);

  // Wakes the supervisor thread to read the pipes again (output_room() may
  // have turned true). It may outlive the Supervisor (then it does nothing).
  std::function<void()> output_waker() const;

  // Number of spawned processes that have not been reaped yet; drops before
  // the process's kExit event is delivered.
  int running() const;

  // Every method is thread-safe.

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hvd::daemon
