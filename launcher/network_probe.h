// The two facts about the network that network_plan.h needs from the
// system: the IPv4 address a host name resolves to, and the local address
// the kernel would use to reach an address (the launcher address). Neither
// sends a packet.
#pragma once

#include <string>

#include "common/status.h"

namespace hvd::launcher {

// The first IPv4 address getaddrinfo gives for `host` (a name or an IPv4
// literal). kNotFound naming the host and the resolver's reason.
common::Result<std::string> resolve_ipv4(const std::string& host);

// The local source address for packets to `ipv4`:`port`: a UDP socket is
// connected there (which only consults the routing table) and getsockname()
// tells the address chosen. 127.0.0.1 for 127.0.0.1. kUnavailable when there
// is no route.
common::Result<std::string> source_address_toward(const std::string& ipv4, int port);

}  // namespace hvd::launcher
