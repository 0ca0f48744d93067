#include "launcher/agent_targets.h"

namespace hvd::launcher {

std::vector<AgentTarget> plan_agent_targets(const std::vector<RankSlot>& plan,
                                            const LocalIdentity& identity, int agent_port) {
  std::vector<AgentTarget> targets;
  int local_index = -1;
  const std::string* previous_host = nullptr;
  for (const RankSlot& slot : plan) {
    // Ranks are host-major: a new host starts where the host name changes.
    if (previous_host == nullptr || *previous_host != slot.host) {
      if (is_local_host(slot.host, identity)) {
        if (local_index < 0) {
          local_index = static_cast<int>(targets.size());
          targets.push_back(AgentTarget{slot.host, true, "", {}});
        }
      } else {
        targets.push_back(AgentTarget{slot.host, false, host_port(slot.host, agent_port), {}});
      }
    }
    previous_host = &slot.host;
    AgentTarget& target = is_local_host(slot.host, identity)
                              ? targets[static_cast<size_t>(local_index)]
                              : targets.back();
    target.ranks.push_back(slot.rank);
  }
  return targets;
}

const AgentTarget* first_remote(const std::vector<AgentTarget>& targets) {
  for (const auto& target : targets) {
    if (!target.local) return &target;
  }
  return nullptr;
}

std::string host_port(std::string_view host, int port) {
  std::string out(host);
  if (out.find(':') != std::string::npos && out.front() != '[') out = "[" + out + "]";
  return out + ":" + std::to_string(port);
}

std::string describe_ranks(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(ranks[i]);
  }
  return out;
}

}  // namespace hvd::launcher
