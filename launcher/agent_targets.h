// Which agent starts which ranks. Every planned host that is this machine
// (local_host.h) is served by the one agent embedded in hvdrun; every other
// planned host by the hvd-agent daemon at HOST:--agent-port. Pure planning:
// nothing here connects or resolves names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "launcher/local_host.h"
#include "launcher/slot_plan.h"

namespace hvd::launcher {

struct AgentTarget {
  // The host as named in -H / the hostfile; for the embedded agent the first
  // local host of the plan. Messages about the agent name this host.
  std::string host;
  bool local = false;    // the agent embedded in hvdrun
  std::string address;   // HOST:PORT to dial; empty for the embedded agent
  std::vector<int> ranks;  // the ranks this agent starts, ascending
};

// One target per remote host that received ranks, plus one for all local
// hosts together (at the position of the first local host), in plan order.
std::vector<AgentTarget> plan_agent_targets(const std::vector<RankSlot>& plan,
                                            const LocalIdentity& identity, int agent_port);

// The first remote target, or nullptr when every host is local.
const AgentTarget* first_remote(const std::vector<AgentTarget>& targets);

// "host:port", IPv6 literals in brackets ("[fd00::2]:29470").
std::string host_port(std::string_view host, int port);

// "rank 2" / "ranks 2, 3".
std::string describe_ranks(const std::vector<int>& ranks);

}  // namespace hvd::launcher
