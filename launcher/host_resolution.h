// Remote hosts must resolve before hvdrun reaches for their agents: a name
// that does not (`-H nosuchhost:2`, a typo in a hostfile) fails the job at
// once, named, instead of after the start timeout. Each lookup has a
// deadline (a hung resolver must not hang hvdrun).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/agent_targets.h"

namespace hvd::launcher {

// kNotFound naming the first remote target whose host does not resolve (or
// not within `timeout`).
common::Status check_hosts_resolve(const std::vector<AgentTarget>& targets,
                                   std::chrono::milliseconds timeout);

// getaddrinfo for `host` (any family) within `timeout`.
common::Status resolve_host(const std::string& host, std::chrono::milliseconds timeout);

}  // namespace hvd::launcher
