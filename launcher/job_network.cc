#include "launcher/job_network.h"

#include "common/logging.h"
#include "launcher/network_probe.h"

namespace hvd::launcher {

common::Result<NetworkPlan> plan_job_network(const std::vector<AgentTarget>& targets,
                                             const std::vector<hvd::v1::InfoReply>& infos,
                                             const std::vector<std::string>& interfaces,
                                             int agent_port) {
  std::vector<HostNetwork> hosts;
  std::string launcher_address;
  common::Status first_error;
  for (size_t i = 0; i < targets.size(); ++i) {
    HostNetwork& host = hosts.emplace_back();
    host.host = targets[i].host;
    host.local = targets[i].local;
    host.info = infos.at(i);
    if (host.local) continue;
    auto dialed = resolve_ipv4(targets[i].host);
    if (!dialed.is_ok()) {
      spdlog::debug("{}", dialed.status().to_string());
      if (first_error.is_ok()) first_error = dialed.status();
      continue;
    }
    host.dialed_address = *dialed;
    if (!launcher_address.empty()) continue;
    auto source = source_address_toward(*dialed, agent_port);
    if (!source.is_ok()) return source.status().with_context("host " + host.host);
    launcher_address = *source;
  }
  if (first_remote(targets) != nullptr && launcher_address.empty()) {
    return common::unavailable("cannot find the address of this host toward the remote hosts: " +
                               first_error.message());
  }
  return plan_network(hosts, interfaces, launcher_address);
}

}  // namespace hvd::launcher
