// The keeper of a child process (child_process.h, StartOptions::keeper): a
// small process between the caller and the command that is a child
// subreaper (PR_SET_CHILD_SUBREAPER), so that whatever the command starts —
// in its process group, in a new session (setsid), daemonized by a double
// fork — stays its descendant:
//
//   caller ── keeper "hvd-keeper" (own process group, subreaper)
//               └─ command (own process group, PR_SET_PDEATHSIG=SIGKILL)
//                    └─ children, and orphans adopted by the keeper
//
// When the command exits, the keeper SIGKILLs every process left under it
// and exits with the command's status (its exit code, or the same signal).
// When the caller dies (PR_SET_PDEATHSIG=SIGTERM on the keeper; SIGKILL of
// the caller included), or the keeper gets SIGTERM, SIGINT or SIGHUP, it
// SIGKILLs the command and everything under it, then exits. Only a SIGKILL
// of the keeper itself lets orphans go (to init).
#pragma once

#include <sys/types.h>

namespace hvd::common::detail {

// Called in a child right after fork(), with every signal blocked; only
// async-signal-safe calls from here on. `caller` is the pid that forked.
// Forks once more: returns in the new process (the one to exec the
// command), giving its parent's pid (the keeper's); never returns in the
// keeper. The keeper writes the command's pid, or -errno when it could not
// fork, to `report_fd` (4 bytes) and closes it.
pid_t split_keeper(pid_t caller, int report_fd, int devnull_fd);

}  // namespace hvd::common::detail
