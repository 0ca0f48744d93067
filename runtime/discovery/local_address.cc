#include "runtime/discovery/local_address.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <optional>
#include <vector>

#include "common/host_lookup.h"
#include "common/local_interfaces.h"
#include "common/route_probe.h"

namespace hvd::runtime {

namespace {

// IPv4 addresses first, then IPv6, each with port 9 (a connected UDP
// socket needs a non-zero port); none when `host` does not resolve.
std::vector<sockaddr_storage> resolve(const std::string& host) {
  auto resolved = common::resolve_host(host);
  if (!resolved.is_ok()) return {};
  std::vector<sockaddr_storage> v4, v6;
  for (sockaddr_storage s : *resolved) {
    if (s.ss_family == AF_INET) {
      reinterpret_cast<sockaddr_in*>(&s)->sin_port = htons(9);
      v4.push_back(s);
    } else {
      reinterpret_cast<sockaddr_in6*>(&s)->sin6_port = htons(9);
      v6.push_back(s);
    }
  }
  v4.insert(v4.end(), v6.begin(), v6.end());
  return v4;
}

bool is_loopback(const sockaddr_storage& s) {
  if (s.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&s);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (s.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&s);
    return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) != 0;
  }
  return false;
}

std::string to_text(const sockaddr_storage& s) { return common::address_text(s); }

// The kernel's source address toward `to`; nullopt when there is no route.
std::optional<sockaddr_storage> source_toward(const sockaddr_storage& to) {
  auto local = common::source_address_toward(to);
  if (!local.is_ok()) return std::nullopt;
  return *local;
}

// The source address of the default route (no packet is sent).
std::optional<sockaddr_storage> default_route_source() {
  sockaddr_storage to{};
  auto* in = reinterpret_cast<sockaddr_in*>(&to);
  in->sin_family = AF_INET;
  in->sin_port = htons(9);
  inet_pton(AF_INET, "192.0.2.1", &in->sin_addr);  // TEST-NET-1: any non-local address does
  auto source = source_toward(to);
  if (source && !is_loopback(*source)) return source;
  return std::nullopt;
}

std::optional<std::string> first_interface_address() {
  for (const common::InterfaceAddress& i : common::interface_addresses()) {
    if (i.family != AF_INET) continue;
    if ((i.flags & IFF_UP) == 0 || (i.flags & IFF_LOOPBACK) != 0) continue;
    return i.address;
  }
  return std::nullopt;
}

}  // namespace

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  auto addresses = resolve(host);
  if (addresses.empty()) return false;
  for (const auto& a : addresses) {
    if (!is_loopback(a)) return false;
  }
  return true;
}

common::Result<std::string> local_address_toward(const std::string& host) {
  auto addresses = resolve(host);
  for (const auto& a : addresses) {
    auto source = source_toward(a);
    if (!source) continue;
    if (!is_loopback(*source)) return to_text(*source);
    break;  // the host is this one, known by a loopback address
  }
  if (auto source = default_route_source()) return to_text(*source);
  if (auto address = first_interface_address()) return *address;
  return common::unavailable(
      "cannot tell which local address the other hosts reach this one at (toward the "
      "rendezvous host '" + host + "'" + (addresses.empty() ? ", which does not resolve" : "") +
      "): set HVD_BIND_ADDRESS to it");
}

}  // namespace hvd::runtime
