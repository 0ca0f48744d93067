#include "common/host_lookup.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "common/local_interfaces.h"
#include "common/route_probe.h"

namespace hvd::common {

namespace {

struct AddrInfoDeleter {
  void operator()(addrinfo* list) const { freeaddrinfo(list); }
};

bool is_loopback(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(address);
    return (ntohl(in.sin_addr.s_addr) >> 24) == 127;
  }
  const auto& in6 = reinterpret_cast<const sockaddr_in6&>(address);
  return address.ss_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&in6.sin6_addr) != 0;
}

}  // namespace

Result<std::vector<sockaddr_storage>> resolve_host(const std::string& host, int family) {
  addrinfo hints{};
  hints.ai_family = family;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* raw = nullptr;
  const int error = getaddrinfo(host.c_str(), nullptr, &hints, &raw);
  if (error != 0) return not_found(gai_strerror(error));
  std::unique_ptr<addrinfo, AddrInfoDeleter> list(raw);
  std::vector<sockaddr_storage> out;
  for (const addrinfo* a = raw; a != nullptr; a = a->ai_next) {
    if (a->ai_family != AF_INET && a->ai_family != AF_INET6) continue;
    sockaddr_storage address{};
    std::memcpy(&address, a->ai_addr, std::min<size_t>(a->ai_addrlen, sizeof(address)));
    out.push_back(address);
  }
  if (out.empty()) return not_found("no address");
  return out;
}

std::optional<std::string> resolve_problem(const std::string& host) {
  auto addresses = resolve_host(host);
  if (addresses.is_ok()) return std::nullopt;
  return addresses.status().message();
}

Result<std::string> local_listen_address(const std::string& host) {
  if (host.empty()) return invalid_argument("it is empty");
  auto addresses = resolve_host(host);
  if (!addresses.is_ok()) {
    return invalid_argument("it does not resolve: " + addresses.status().message());
  }
  std::vector<std::string> local;  // each address once, in getifaddrs' order
  for (const InterfaceAddress& i : interface_addresses()) {
    if (std::find(local.begin(), local.end(), i.address) == local.end()) {
      local.push_back(i.address);
    }
  }
  std::vector<std::string> v4;
  std::vector<std::string> v6;
  for (const sockaddr_storage& address : *addresses) {
    std::string text = address_text(address);
    if (is_loopback(address) || std::find(local.begin(), local.end(), text) != local.end()) {
      (address.ss_family == AF_INET ? v4 : v6).push_back(std::move(text));
    }
  }
  if (!v4.empty()) return v4.front();
  if (!v6.empty()) return v6.front();
  std::string has;
  for (const std::string& address : local) has += (has.empty() ? "" : ", ") + address;
  return invalid_argument("it is not an address of this host (it has: " +
                          (has.empty() ? std::string("none") : has) + ")");
}

}  // namespace hvd::common
