// Which local address other hosts reach this one at, asked of the kernel's
// routing table (a UDP socket connected toward a host sends nothing; its
// local end is the source address the kernel would use). Used for the
// transports' listening address when a foreign launcher started the workers
// and HVD_BIND_ADDRESS is not set.
#pragma once

#include <optional>
#include <string>

#include "common/status.h"

namespace hvd::runtime {


// True when every address `host` resolves to is a loopback address
// (127.0.0.0/8, ::1), or it is "localhost"; false when it does not resolve.
bool is_loopback_host(const std::string& host);

// The local source address toward `host` (IPv4 when it has one). When that
// is a loopback address (Debian maps its own host name to 127.0.1.1), the
// source address of the default route, else the first non-loopback IPv4
// address of an interface that is up. kUnavailable naming the host and
// HVD_BIND_ADDRESS when none can be found.
common::Result<std::string> local_address_toward(const std::string& host);

}  // namespace hvd::runtime
