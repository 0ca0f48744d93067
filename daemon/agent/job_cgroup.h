// cgroup v2 for the agent's jobs (docs/agent.md, "Containment"): a cgroup
// per job, made beside the agent's own (a child of the agent's cgroup);
// every worker moves itself into it before it execs
// (common::StartOptions::cgroup_procs_fd), so that whatever a worker starts
// — setsid, double fork, daemonized — is in it, and `cgroup.kill` (Linux
// 5.14) ends all of it at once. A cgroup outlives the process that made it:
// its name says whose it is, hvd.<pid>.<start time>.<n>, so that the next
// agent on the host kills and removes those whose maker is gone.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/child_process.h"
#include "common/status.h"

namespace hvd::daemon {

// The directory of this process's cgroup in the cgroup v2 hierarchy
// ("/sys/fs/cgroup/system.slice/hvd-agent.service"), from
// /proc/self/mountinfo and /proc/self/cgroup. kUnavailable saying why not
// (no cgroup2 mount, the process's cgroup not under it).
common::Result<std::string> own_cgroup_dir();

// The name every cgroup this process makes starts with: "hvd.<pid>.<start>."
// (start: the process's start time in clock ticks, /proc/self/stat).
std::string own_cgroup_prefix();

class JobCgroup {
 public:
  // Makes the directory `parent`/`name` and opens its cgroup.procs.
  static common::Result<std::unique_ptr<JobCgroup>> create(const std::string& parent,
                                                           const std::string& name);
  // Kills what is left, waits (bounded) until it is empty and removes the
  // directory; a warning when it cannot.
  ~JobCgroup();
  JobCgroup(const JobCgroup&) = delete;
  JobCgroup& operator=(const JobCgroup&) = delete;

  const std::string& path() const { return path_; }
  // cgroup.procs, open for writing: a process writes "0" to move itself in.
  int procs_fd() const { return procs_.get(); }

  // SIGKILLs every process in the cgroup (cgroup.kill); does not wait.
  void kill() const;
  // kill(), then waits until no process is left or `timeout` passes;
  // true when it is empty.
  bool kill_and_wait(std::chrono::milliseconds timeout) const;
  // Whether a process (a zombie included) is in it (cgroup.events).
  bool populated() const;

 private:
  JobCgroup(std::string path, common::UniqueFd procs)
      : path_(std::move(path)), procs_(std::move(procs)) {}

  std::string path_;
  common::UniqueFd procs_;
};

// SIGKILLs `dir`'s processes (cgroup.kill) and removes it once it is empty
// (waiting up to `timeout`). false (errno set) when it could not be removed.
bool kill_and_remove_cgroup(const std::string& dir, std::chrono::milliseconds timeout);

// Kills and removes the hvd cgroups in `parent` whose maker is gone (its
// pid no longer runs, or runs another program started at another time).
// Returns how many were removed.
int remove_stale_cgroups(const std::string& parent);

}  // namespace hvd::daemon
