// Runs hvd-agent from a parsed AgentConfig: reads the secret and the TLS
// files, serves the Agent service until told to stop, then terminates every
// job's workers. Separate from main() so that tests can run an agent in
// process with their own stop trigger.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "daemon/agent/agent_cli.h"

namespace hvd::daemon {

// SIGTERM -> SIGKILL grace for every job's workers when the agent stops.
inline constexpr std::chrono::milliseconds kAgentShutdownGrace{5'000};

// Blocks until `wait_for_stop` returns (the signal number that stopped the
// agent; 0 when none). Errors are printed as one "hvd-agent: error: ..." line
// on stderr. Returns the exit code (agent_exit): kUsage for an unusable
// secret or TLS file, kFailure when it cannot listen. `on_listening` (may be
// empty) gets the address once clients can connect ("127.0.0.1:41234").
int run_agent(const AgentConfig& config, const std::function<int()>& wait_for_stop,
              const std::function<void(const std::string&)>& on_listening = nullptr);

}  // namespace hvd::daemon
