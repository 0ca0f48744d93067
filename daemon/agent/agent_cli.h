// hvd-agent's command line -> AgentConfig (docs/agent.md). Pure: the
// environment and the default slot count are passed in, so tests can
// supply them; nothing is read or opened here.
#pragma once

#include <spdlog/common.h>

#include <chrono>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/cli_values.h"
#include "common/status.h"
#include "daemon/agent/containment.h"
#include "proto/tls_credentials.h"

namespace hvd::daemon {

// hvd's documented agent port (hvdrun's --agent-port defaults to the same).
inline constexpr int kAgentPort = common::kAgentPort;

// Exit codes of hvd-agent.
namespace agent_exit {
inline constexpr int kOk = 0;       // stopped by SIGTERM/SIGINT/SIGHUP; --help, --version
inline constexpr int kFailure = 1;  // cannot listen, internal error
inline constexpr int kUsage = 2;    // bad flag or value, unusable secret or TLS files
}  // namespace agent_exit

struct ListenAddress {
  std::string host;  // without brackets: "0.0.0.0", "::", "node1"
  int port = 0;      // 0: any free port (the chosen one is logged)
};

struct AgentConfig {
  ListenAddress listen{"0.0.0.0", kAgentPort};
  std::string secret_file;  // --secret-file, else $HVD_SECRET_FILE; empty with --secret-stdin
  // --secret-stdin: the secret is the first line of stdin (hvdrun --ssh).
  bool secret_stdin = false;
  // --exit-on-stdin-eof: job-scoped; EOF on stdin (after the secret line)
  // stops the agent like SIGTERM, and the ready line is always printed.
  bool exit_on_stdin_eof = false;
  int slots = 0;            // --slots, else the default given to the parser
  proto::TlsFiles tls;      // all three or none
  std::chrono::milliseconds orphan_grace{30'000};  // 0: never
  // --containment, else $HVD_CONTAINMENT, else auto (containment.h);
  // `containment_source` names where it came from in messages.
  ContainmentMode containment = ContainmentMode::kAuto;
  std::string containment_source = "--containment ";
  spdlog::level::level_enum log_level = spdlog::level::info;
  // --metrics-port: Prometheus /metrics of the agent (0: off; docs/metrics.md),
  // bound to --metrics-address.
  int metrics_port = 0;
  std::string metrics_address = "127.0.0.1";
};

// --help, --version or an error: what to print and the exit code (err: one
// "hvd-agent: error: ..." line).
using AgentCliExit = common::CliExit;

using AgentCliOutcome = std::variant<AgentConfig, AgentCliExit>;

// getenv-like lookup.
using AgentEnvLookup = common::EnvLookup;

// `args` excludes the program name.
AgentCliOutcome parse_agent_command_line(const std::vector<std::string>& args,
                                         const AgentEnvLookup& lookup, int default_slots);

// "ADDR:PORT": an IPv4 address or host name, or an IPv6 address in brackets
// ("[::]:29470"); port 0..65535. kInvalidArgument naming the text otherwise.
common::Result<ListenAddress> parse_listen_address(std::string_view text);

// "host:port" as a client would dial it (IPv6 hosts in brackets).
std::string to_string(const ListenAddress& address);

}  // namespace hvd::daemon
