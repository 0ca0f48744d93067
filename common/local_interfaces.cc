#include "common/local_interfaces.h"

#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

#include "common/route_probe.h"

namespace hvd::common {

std::vector<InterfaceAddress> interface_addresses() {
  std::vector<InterfaceAddress> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_name == nullptr) continue;
    const int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    sockaddr_storage address{};
    std::memcpy(&address, i->ifa_addr,
                family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
    std::string text = address_text(address);
    if (text.empty()) continue;
    out.push_back({i->ifa_name, family, std::move(text), i->ifa_flags});
  }
  ::freeifaddrs(list);
  return out;
}

}  // namespace hvd::common
