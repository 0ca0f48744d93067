#include "runtime/discovery/local_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "common/route_probe.h"

namespace hvd::runtime {

namespace {

struct AddrInfoDeleter {
  void operator()(addrinfo* ai) const { freeaddrinfo(ai); }
};

// IPv4 addresses first, then IPv6.
std::vector<sockaddr_storage> resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* raw = nullptr;
  std::vector<sockaddr_storage> v4, v6;
  if (getaddrinfo(host.c_str(), "9", &hints, &raw) != 0) return {};
  std::unique_ptr<addrinfo, AddrInfoDeleter> list(raw);
  for (addrinfo* ai = raw; ai != nullptr; ai = ai->ai_next) {
    sockaddr_storage s{};
    std::memcpy(&s, ai->ai_addr, ai->ai_addrlen);
    (ai->ai_family == AF_INET ? v4 : v6).push_back(s);
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
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return std::nullopt;
  std::optional<std::string> found;
  for (ifaddrs* i = list; i != nullptr && !found; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if ((i->ifa_flags & IFF_UP) == 0 || (i->ifa_flags & IFF_LOOPBACK) != 0) continue;
    sockaddr_storage s{};
    std::memcpy(&s, i->ifa_addr, sizeof(sockaddr_in));
    found = to_text(s);
  }
  freeifaddrs(list);
  return found;
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
