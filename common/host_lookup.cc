#include "common/host_lookup.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

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

// The numeric addresses of this machine's interfaces, in getifaddrs' order.
std::vector<std::string> interface_addresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    const int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    sockaddr_storage address{};
    std::memcpy(&address, i->ifa_addr, family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
    std::string text = address_text(address);
    if (std::find(out.begin(), out.end(), text) == out.end()) out.push_back(std::move(text));
  }
  freeifaddrs(list);
  return out;
}

}  // namespace

std::optional<std::string> resolve_problem(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* raw = nullptr;
  const int error = getaddrinfo(host.c_str(), nullptr, &hints, &raw);
  if (error == 0) {
    freeaddrinfo(raw);
    return std::nullopt;
  }
  return std::string(gai_strerror(error));
}

Result<std::string> local_listen_address(const std::string& host) {
  if (host.empty()) return invalid_argument("it is empty");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* raw = nullptr;
  const int error = getaddrinfo(host.c_str(), nullptr, &hints, &raw);
  if (error != 0) {
    return invalid_argument(std::string("it does not resolve: ") + gai_strerror(error));
  }
  std::unique_ptr<addrinfo, AddrInfoDeleter> list(raw);
  const std::vector<std::string> local = interface_addresses();
  std::vector<std::string> v4;
  std::vector<std::string> v6;
  for (const addrinfo* a = raw; a != nullptr; a = a->ai_next) {
    if (a->ai_family != AF_INET && a->ai_family != AF_INET6) continue;
    sockaddr_storage address{};
    std::memcpy(&address, a->ai_addr, std::min<size_t>(a->ai_addrlen, sizeof(address)));
    std::string text = address_text(address);
    if (is_loopback(address) || std::find(local.begin(), local.end(), text) != local.end()) {
      (a->ai_family == AF_INET ? v4 : v6).push_back(std::move(text));
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
