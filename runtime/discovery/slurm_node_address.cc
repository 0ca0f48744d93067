#include "runtime/discovery/slurm_node_address.h"

#include <chrono>
#include <vector>

#include "common/logging.h"
#include "runtime/discovery/command_output.h"

namespace hvd::runtime {

namespace {

constexpr std::chrono::milliseconds kScontrolTimeout{5000};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The value of the first `key`=value token in whitespace-separated text.
std::optional<std::string_view> token_value(std::string_view text, std::string_view key) {
  size_t at = 0;
  while (at < text.size()) {
    while (at < text.size() && is_space(text[at])) ++at;
    size_t end = at;
    while (end < text.size() && !is_space(text[end])) ++end;
    std::string_view token = text.substr(at, end - at);
    if (token.size() > key.size() && token.substr(0, key.size()) == key &&
        token[key.size()] == '=') {
      return token.substr(key.size() + 1);
    }
    at = end;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> slurm_alias_address(std::string_view aliases, std::string_view node) {
  size_t at = 0;
  while (at <= aliases.size()) {
    size_t comma = aliases.find(',', at);
    if (comma == std::string_view::npos) comma = aliases.size();
    std::string_view entry = aliases.substr(at, comma - at);
    at = comma + 1;
    // name:addr:hostname, addr "[v6]" when it is an IPv6 address.
    const size_t colon = entry.find(':');
    if (colon == std::string_view::npos || entry.substr(0, colon) != node) continue;
    std::string_view rest = entry.substr(colon + 1);
    std::string_view address;
    if (!rest.empty() && rest.front() == '[') {
      const size_t close = rest.find(']');
      if (close == std::string_view::npos) continue;
      address = rest.substr(1, close - 1);
    } else {
      address = rest.substr(0, rest.find(':'));
    }
    if (!address.empty()) return std::string(address);
  }
  return std::nullopt;
}

std::optional<std::string> scontrol_node_addr(std::string_view output, std::string_view node) {
  auto name = token_value(output, "NodeName");
  if (!name || *name != node) return std::nullopt;
  auto address = token_value(output, "NodeAddr");
  if (!address || address->empty() || *address == "(null)") return std::nullopt;
  return std::string(*address);
}

std::optional<std::string> query_slurm_node_addr(const std::string& node) {
  auto output = command_output({"scontrol", "show", "node", "-o", node}, kScontrolTimeout);
  if (!output.is_ok()) {
    spdlog::debug("cannot ask Slurm for the address of node {}: {}", node,
                  output.status().message());
    return std::nullopt;
  }
  auto address = scontrol_node_addr(output.value(), node);
  if (!address) spdlog::debug("scontrol show node {} gave no NodeAddr", node);
  return address;
}

SlurmNodeAddress choose_slurm_node_address(const std::string& node,
                                           std::string_view list_variable,
                                           const char* aliases, const NodeAddrQuery& query) {
  const std::string which =
      "Slurm node " + node + ", the first of " + std::string(list_variable);
  if (aliases != nullptr) {
    if (auto address = slurm_alias_address(aliases, node)) {
      return {*address, "the address SLURM_NODE_ALIASES gives " + which};
    }
  }
  if (query) {
    if (auto address = query(node)) {
      return {*address, "the NodeAddr of " + which};
    }
  }
  return {node, which + ", by name: Slurm gave no address for it"};
}

}  // namespace hvd::runtime
