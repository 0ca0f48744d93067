// Facts about process groups, for the Supervisor. A group can outlive its
// leader (a worker's own children stay in it), and a group whose remaining
// members are zombies (an orphan waiting for init to reap it) is as good as
// gone: nothing in it can run any more.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <vector>

namespace hvd::daemon {

// False once no process is left in the group (kill(-pgid, 0) fails with ESRCH).
bool group_exists(pid_t pgid);

// The groups of `pgids` with at least one member that is not a zombie, in
// the order given. One pass over /proc serves all of them.
std::vector<pid_t> live_groups(const std::vector<pid_t>& pgids);

// Polls live_groups until none of `pgids` is alive or `timeout` passes;
// returns the groups still alive.
std::vector<pid_t> wait_groups_gone(std::vector<pid_t> pgids, std::chrono::milliseconds timeout);

// Sends `sig` to each group; returns the groups that no longer exist.
std::vector<pid_t> signal_groups(const std::vector<pid_t>& pgids, int sig);

}  // namespace hvd::daemon
