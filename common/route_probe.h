// Which local address the kernel would use to reach another address: a UDP
// socket connected there only consults the routing table (no packet is
// sent); getsockname() then tells the source address chosen. Shared by
// hvdrun (the launcher address workers dial) and the runtime (the address a
// worker's transports listen on under a foreign launcher).
#pragma once

#include <sys/socket.h>

#include <string>

#include "common/status.h"

namespace hvd::common {

// `to` is an AF_INET or AF_INET6 socket address (its port is irrelevant but
// must be set for some kernels: any non-zero port). kUnavailable with the
// system's reason when there is no route.
Result<sockaddr_storage> source_address_toward(const sockaddr_storage& to);

// The numeric text of an AF_INET or AF_INET6 address ("10.0.0.1", "::1").
std::string address_text(const sockaddr_storage& address);

}  // namespace hvd::common
