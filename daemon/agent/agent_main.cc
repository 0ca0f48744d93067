// hvd-agent: the per-host daemon that starts and supervises the workers of
// hvd jobs for hvdrun on other hosts (docs/agent.md).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <variant>
#include <vector>

#include "common/logging.h"
#include "daemon/agent/agent_cli.h"
#include "daemon/agent/agent_runner.h"
#include "daemon/agent/agent_signals.h"
#include "daemon/agent/host_info.h"
#include "proto/grpc_log.h"

int main(int argc, char** argv) {
  using namespace hvd::daemon;
  // Before any thread exists: only wait_for_stop_signal() takes them.
  block_stop_signals();
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    AgentCliOutcome outcome =
        parse_agent_command_line(args, [](const char* name) { return std::getenv(name); },
                                 default_slots());
    if (const auto* done = std::get_if<AgentCliExit>(&outcome)) {
      std::fputs(done->out.c_str(), stdout);
      std::fputs(done->err.c_str(), stderr);
      return done->code;
    }
    const AgentConfig& config = std::get<AgentConfig>(outcome);
    hvd::common::init_logging("hvd-agent", config.log_level);
    // gRPC's own lines (a failed TLS handshake) in hvd's format.
    hvd::proto::route_grpc_log();
    return run_agent(config, wait_for_stop_signal);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hvd-agent: error: internal error: %s\n", e.what());
    return agent_exit::kFailure;
  }
}
