// The Launch request of each agent: the ranks it starts, each with the
// command, its complete environment and the working directory.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "config/settings.h"
#include "hvd/v1/agent.pb.h"
#include "launcher/agent_targets.h"
#include "launcher/worker_environment.h"

namespace hvd::launcher {

// A job's orphan grace (LaunchRequest.orphan_grace_ms): its heartbeat
// timeout, so that an agent cut off from hvdrun ends the job's workers about
// when hvdrun gives up on them (0: the agent's own --orphan-grace).
std::chrono::milliseconds job_orphan_grace(const config::Settings& settings);

// One request per target, same order; `envs` is indexed by rank.
// `orphan_grace` (the job's heartbeat timeout; 0: none) is how long an agent
// keeps the job's workers once it lost the job's Watch stream
// (LaunchRequest.orphan_grace_ms).
std::vector<hvd::v1::LaunchRequest> launch_requests(
    const std::string& job_id, const std::vector<AgentTarget>& targets,
    const std::vector<Environment>& envs, const std::vector<std::string>& command,
    const std::string& cwd, std::chrono::milliseconds orphan_grace = std::chrono::milliseconds(0));

}  // namespace hvd::launcher
