// Where the ranks of a Slurm step that spans several nodes reach rank 0's
// node, found the way Slurm itself reaches a node: Slurm node names need not
// resolve (Slurm knows each node's address, NodeAddr in slurm.conf). In order:
//   1. SLURM_NODE_ALIASES, which srun exports for cloud and dynamic nodes
//      ("name:addr:hostname,...", an IPv6 address in brackets);
//   2. the node's NodeAddr, asked of Slurm (`scontrol show node -o NAME`),
//      since srun exports no other node's address to the tasks;
//   3. the node name itself.
// The parsing and the choice are pure; query_slurm_node_addr runs scontrol.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace hvd::runtime {

// A node's NodeAddr as Slurm reports it; nullopt when Slurm does not say
// (scontrol missing or failing). Tests pass a fake.
using NodeAddrQuery = std::function<std::optional<std::string>(const std::string& node)>;

// The address SLURM_NODE_ALIASES gives `node` ("(null)", absent entries and
// malformed ones give nullopt).
std::optional<std::string> slurm_alias_address(std::string_view aliases, std::string_view node);

// The NodeAddr of `node` in `scontrol show node -o` output; nullopt when the
// output describes another node or has no NodeAddr.
std::optional<std::string> scontrol_node_addr(std::string_view output, std::string_view node);

// Runs `scontrol show node -o NODE` (5 s at most) and reads its NodeAddr;
// nullopt, logged at debug, when that fails.
std::optional<std::string> query_slurm_node_addr(const std::string& node);

struct SlurmNodeAddress {
  std::string host;    // an address or, when Slurm gives none, the node name
  std::string origin;  // where it came from, for messages
};

// Rank 0's node `node` (the first of `list_variable`): its alias address,
// else its NodeAddr from `query` (none when empty), else its name. The
// origin reads e.g. "the NodeAddr of Slurm node n1, the first of
// SLURM_STEP_NODELIST".
SlurmNodeAddress choose_slurm_node_address(const std::string& node,
                                           std::string_view list_variable,
                                           const char* aliases, const NodeAddrQuery& query);

}  // namespace hvd::runtime
