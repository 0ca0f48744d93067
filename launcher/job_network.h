// The network plan (network_plan.h) of a job whose agents answered Info:
// resolves each remote host's name to the IPv4 address hvdrun dials, and,
// when any host is remote, finds the launcher address: the local address the
// kernel routes toward the first remote agent (the first that resolves).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "hvd/v1/agent.pb.h"
#include "launcher/agent_targets.h"
#include "launcher/network_plan.h"

namespace hvd::launcher {

// `infos[i]` is the Info of `targets[i]`'s agent. kInvalidArgument for a
// usage error (an interface no host has); other codes when the network does
// not allow the job (no route, no address).
common::Result<NetworkPlan> plan_job_network(const std::vector<AgentTarget>& targets,
                                             const std::vector<hvd::v1::InfoReply>& infos,
                                             const std::vector<std::string>& interfaces,
                                             int agent_port);

}  // namespace hvd::launcher
