#include "launcher/network_plan.h"

#include <arpa/inet.h>

#include <algorithm>

namespace hvd::launcher {

namespace {

bool is_loopback_ipv4(const std::string& address) { return address.rfind("127.", 0) == 0; }

std::string first_ipv4(const hvd::v1::NetworkInterface& iface) {
  for (const auto& address : iface.addresses()) {
    if (is_ipv4(address)) return address;
  }
  return "";
}

std::string join(const std::vector<std::string>& names, const char* separator) {
  std::string out;
  for (const auto& name : names) {
    if (!out.empty()) out += separator;
    out += name;
  }
  return out;
}

common::Result<std::string> interface_address(const HostNetwork& host,
                                              const std::vector<std::string>& wanted) {
  for (const auto& name : wanted) {
    for (const auto& iface : host.info.interfaces()) {
      if (iface.name() != name) continue;
      if (std::string address = first_ipv4(iface); !address.empty()) return address;
    }
  }
  std::vector<std::string> has;
  for (const auto& iface : host.info.interfaces()) {
    if (std::find(has.begin(), has.end(), iface.name()) == has.end()) has.push_back(iface.name());
  }
  return common::invalid_argument("host " + host.host + " has none of the interfaces " +
                                  join(wanted, ",") + " (it has: " +
                                  (has.empty() ? std::string("none") : join(has, ", ")) + ")");
}

common::Result<std::string> remote_address(const HostNetwork& host) {
  std::string fallback;
  for (const auto& iface : host.info.interfaces()) {
    for (const auto& address : iface.addresses()) {
      if (!is_ipv4(address)) continue;
      if (address == host.dialed_address) return address;
      if (fallback.empty() && !is_loopback_ipv4(address)) fallback = address;
    }
  }
  if (fallback.empty()) {
    return common::failed_precondition("host " + host.host +
                                       " has no IPv4 address other than loopback for the "
                                       "workers to bind (its agent's Info lists none)");
  }
  return fallback;
}

}  // namespace

bool is_ipv4(const std::string& address) {
  in_addr parsed{};
  return inet_pton(AF_INET, address.c_str(), &parsed) == 1;
}

common::Result<NetworkPlan> plan_network(const std::vector<HostNetwork>& hosts,
                                         const std::vector<std::string>& interfaces,
                                         const std::string& launcher_address) {
  NetworkPlan plan;
  bool any_remote = std::any_of(hosts.begin(), hosts.end(),
                                [](const HostNetwork& h) { return !h.local; });
  if (!any_remote) {
    // Bound to loopback all the same, but a name no host has is a mistake
    // to report now (a typo, or a flag copied from another cluster).
    for (const auto& host : hosts) {
      if (interfaces.empty()) break;
      if (auto address = interface_address(host, interfaces); !address.is_ok()) {
        return address.status();
      }
    }
    plan.listen_host = kLoopbackAddress;
    plan.advertised_host = kLoopbackAddress;
    plan.bind_addresses.assign(hosts.size(), kLoopbackAddress);
    return plan;
  }
  if (launcher_address.empty()) {
    return common::failed_precondition("no launcher address for a job with remote hosts");
  }
  plan.listen_host = kAnyAddress;
  plan.advertised_host = launcher_address;
  for (const auto& host : hosts) {
    common::Result<std::string> address = launcher_address;
    if (!interfaces.empty()) {
      address = interface_address(host, interfaces);
    } else if (!host.local) {
      address = remote_address(host);
    }
    if (!address.is_ok()) return address.status();
    plan.bind_addresses.push_back(std::move(address).value());
  }
  return plan;
}

}  // namespace hvd::launcher
