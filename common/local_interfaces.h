// The addresses of this machine's network interfaces, walked once here
// (getifaddrs) for everyone who needs them: the agent's Info
// (daemon/agent/host_info.h), hvdrun's "is this host the local one"
// (launcher/local_host.h), the check of a listening address
// (host_lookup.h) and a worker's fallback bind address
// (runtime/discovery/local_address.h).
#pragma once

#include <string>
#include <vector>

namespace hvd::common {

struct InterfaceAddress {
  std::string interface;  // "eth0"
  int family = 0;         // AF_INET or AF_INET6
  std::string address;    // numeric: "10.0.0.2", "fe80::1" (no scope id)
  unsigned flags = 0;     // the interface's IFF_UP, IFF_LOOPBACK, ...
};

// Every IPv4 and IPv6 address of every interface, in the order getifaddrs
// lists them (twice when it lists one twice); empty when getifaddrs fails.
std::vector<InterfaceAddress> interface_addresses();

}  // namespace hvd::common
