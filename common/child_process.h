// The fork/exec half of the Supervisor: resolving a command the way a shell
// would, and starting it in its own process group with its output on pipes.
// Used by the agent's Supervisor and by the launcher (discovery script, ssh).
#pragma once

#include <sys/types.h>

#include <map>
#include <string>

#include "common/status.h"
#include "common/process_spec.h"

namespace hvd::common {

// Owns one file descriptor.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// Checks argv, env and cwd of a spec, then resolves argv[0]: a name with a
// '/' is checked as it is (relative to spec.cwd), otherwise it is searched
// in the PATH of spec.env (default /usr/local/bin:/usr/bin:/bin). Returns the
// path to execute. kNotFound "cannot execute 'x': command not found",
// kFailedPrecondition "... permission denied", kInvalidArgument for a bad spec.
Result<std::string> resolve_command(const ProcessSpec& spec);

// How a child is contained (the agent's Supervisor; docs/agent.md,
// "Containment"). By default neither: the command is the caller's child.
struct StartOptions {
  // An open `cgroup.procs` file of a cgroup v2: the child moves itself into
  // that cgroup before it execs (a failure is a line on its stderr and exit
  // code 127), so that everything it starts is in the cgroup too.
  int cgroup_procs_fd = -1;
  // Start the command under a keeper (child_keeper.h): a subreaper that
  // adopts the command's orphans and ends them with the command, or when the
  // caller dies. Then `wait_pid` below is the keeper's.
  bool keeper = false;
};

struct StartedChild {
  pid_t pid = -1;       // the command: its process group is `pid` too
  pid_t wait_pid = -1;  // the caller's child, to wait for: the keeper, or `pid`
  UniqueFd pidfd;       // of wait_pid; invalid where pidfd_open is not available
  UniqueFd stdout_fd;   // read ends, non-blocking, close-on-exec
  UniqueFd stderr_fd;
};

// Forks and execs `path` with exactly spec.argv and spec.env, stdin from
// `devnull_fd`, in a new process group, with PR_SET_PDEATHSIG(SIGKILL): call
// it on the thread that is to own the child. An exec failure shows up as a
// line on the child's stderr and exit code 127 (126 for permission denied).
// With a keeper, the keeper exits with the command's status (exit code or
// signal), and PR_SET_PDEATHSIG ties the command to the keeper.
Result<StartedChild> start_child(const ProcessSpec& spec, const std::string& path,
                                 int devnull_fd, const StartOptions& options = {});

// A close-on-exec descriptor numbered 3 or above (so that dup2 onto 0-2 in a
// child never clobbers another one); takes ownership of `fd`.
UniqueFd above_stdio(int fd);

}  // namespace hvd::common
