// No worker's child outlives the agent that started the worker, however the
// agent ends (issue 21: `kill -9` of hvdrun left the workers' children
// running). The workers themselves die with their parent
// (PR_SET_PDEATHSIG), but what they started in their process group would
// live on as orphans. A GroupReaper is a small child process, forked when
// the Supervisor starts its first group and ended when its last group is
// gone: the Supervisor tells it every process group it starts (and every
// group that is gone) over a socket; when the socket ends — its parent
// exited, or was killed — it SIGKILLs each group still listed and, when it
// was given the job's cgroup (containment.h), every process in the cgroup
// (cgroup.kill), removes the cgroup once it is empty (within 2 s) and exits.
// It runs in a process group of its own, so that a signal to its parent's
// group (kill -9 -PGID, timeout(1)) does not end it along with its parent.
// Its code after fork only makes async-signal-safe calls. Thread-safe.
#pragma once

#include <sys/types.h>

#include <mutex>
#include <string>
#include <string_view>

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
  // The job's cgroup directory (at most kMaxCgroupPath bytes): killed and
  // removed when the parent dies; told to every reaper started from now on.
  void set_cgroup(const std::string& dir);
  // Ends the reaper without killing anything (it exits, and is reaped here
  // within a second); the next add() starts another.
  void stop();
  pid_t pid() const;  // -1 when none runs

  // Most groups one reaper keeps (the oldest are dropped past it).
  static constexpr int kMaxGroups = 65536;
  static constexpr size_t kMaxCgroupPath = 4000;

 private:
  void start_locked();
  void send_locked(char kind, pid_t pgid);
  void send_text_locked(std::string_view text);

  mutable std::mutex mu_;
  int write_fd_ = -1;
  pid_t pid_ = -1;
  std::string cgroup_;
};

}  // namespace hvd::daemon
