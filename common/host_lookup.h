// Whether a host name resolves (getaddrinfo, any address family): the one
// check behind "host 'h' does not resolve" in hvdrun (launcher/
// host_resolution.h, with a deadline) and in the workers
// (runtime/discovery/foreign_job.cc).
#pragma once

#include <optional>
#include <string>

namespace hvd::common {

// Why `host` does not resolve (getaddrinfo's error), or nullopt when it does.
std::optional<std::string> resolve_problem(const std::string& host);

}  // namespace hvd::common
