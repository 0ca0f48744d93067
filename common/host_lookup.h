// Host names and addresses: the one call of the resolver (getaddrinfo) that
// hvd makes (hvdrun's network plan, launcher/network_probe.h; a worker's
// bind address, runtime/discovery/local_address.h); whether a name resolves
// (any address family), the check behind "host 'h' does not resolve" in
// hvdrun (launcher/host_resolution.h, with a deadline) and in the workers
// (runtime/discovery/foreign_job.cc); and whether an address a process is to
// listen on is this machine's (the gloo transport checks its bind address so,
// before gloo sees it: Debian's gloo resolves the name itself and crashes
// when it does not resolve).
#pragma once

#include <sys/socket.h>

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace hvd::common {

// The addresses `host` (a name or a numeric address) resolves to, in
// getaddrinfo's order: IPv4 ones for AF_INET, IPv6 ones for AF_INET6, both
// for AF_UNSPEC; ports 0. kNotFound with the resolver's reason alone
// ("Name or service not known"), for the caller to put after the name.
Result<std::vector<sockaddr_storage>> resolve_host(const std::string& host,
                                                   int family = AF_UNSPEC);

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
