// Host names and addresses: whether a name resolves (getaddrinfo, any address
// family), the one check behind "host 'h' does not resolve" in hvdrun
// (launcher/host_resolution.h, with a deadline) and in the workers
// (runtime/discovery/foreign_job.cc); and whether an address a process is to
// listen on is this machine's (the gloo transport checks its bind address so,
// before gloo sees it: Debian's gloo resolves the name itself and crashes
// when it does not resolve).
#pragma once

#include <optional>
#include <string>

#include "common/status.h"

namespace hvd::common {

// Why `host` does not resolve (getaddrinfo's error), or nullopt when it does.
std::optional<std::string> resolve_problem(const std::string& host);

// The numeric address (IPv4 first) that `host`, a name or an address, gives
// on this machine: a loopback address (127.x.y.z, ::1) or one of its
// interfaces' (getifaddrs). Else kInvalidArgument with the reason, to
// follow the name in a message ("cannot listen on 'h9': " + reason): "it
// does not resolve: Name or service not known", or "it is not an address of
// this host (it has: 127.0.0.1, 10.0.0.2)" (the wildcard 0.0.0.0 is not one
// either).
Result<std::string> local_listen_address(const std::string& host);

}  // namespace hvd::common
