// No worker's child outlives the agent that started the worker, however the
// agent ends (issue 21: `kill -9` of hvdrun left the workers' children
// running). The workers themselves die with their parent
// (PR_SET_PDEATHSIG), but what they started in their process group would
// live on as orphans. A GroupReaper is a small child process, forked when
// the Supervisor starts its first group and ended when its last group is
// gone: the Supervisor tells it every process group it starts (and every
// group that is gone) over a socket; when the socket ends — its parent
// exited, or was killed — it SIGKILLs each group still listed and exits.
// Its code after fork only makes async-signal-safe calls. Thread-safe.
#pragma once

#include <sys/types.h>

#include <mutex>

namespace hvd::daemon {

class GroupReaper {
 public:
  GroupReaper() = default;
  ~GroupReaper() { stop(); }
  GroupReaper(const GroupReaper&) = delete;
  GroupReaper& operator=(const GroupReaper&) = delete;

  // A new group: forks the reaper first when none runs (when that fails, a
  // warning is logged and the group goes unguarded).
  void add(pid_t pgid);
  void remove(pid_t pgid);
  // Ends the reaper without killing anything (it exits, and is reaped here
  // within a second); the next add() starts another.
  void stop();
  pid_t pid() const;  // -1 when none runs

  // Most groups one reaper keeps (the oldest are dropped past it).
  static constexpr int kMaxGroups = 65536;

 private:
  void start_locked();
  void send_locked(char kind, pid_t pgid);

  mutable std::mutex mu_;
  int write_fd_ = -1;
  pid_t pid_ = -1;
};

}  // namespace hvd::daemon
