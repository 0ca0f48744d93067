// hvdrun's command line (CLI11) -> LaunchOptions. Everything from the first
// argument that is not an option (or after "--") is the command and its own
// arguments, never parsed as hvdrun flags. The options come in groups
// (launcher/cli_groups.h); the helpers and groups hvd-agent shares are in
// common/cli_values.h and common/cli_options.h.
#pragma once

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "common/cli_values.h"
#include "config/settings.h"
#include "launcher/elastic_options.h"
#include "launcher/host_spec.h"
#include "proto/tls_credentials.h"

namespace hvd::launcher {

// hvd's documented agent port (hvd-agent --listen, hvdrun --agent-port).
inline constexpr int kDefaultAgentPort = common::kAgentPort;

struct LaunchOptions {
  int np = 0;
  std::vector<HostSlots> hosts;  // from -H or --hostfile; localhost:np when neither
  std::string output_dir;        // --output-filename; empty: no per-rank logs
  bool verbose = false;
  bool prefix_timestamp = false;  // --prefix-output-with-timestamp
  bool horovod_compat = false;  // --horovod-compat: `import horovod` is hvd's Horovod API
  std::vector<std::pair<std::string, std::string>> extra_env;  // -x, in order
  config::Settings settings;  // default < config file < environment < flags
  // Remote hosts (docs/multihost.md): their hvd-agent's port, the file of the
  // shared secret (--secret-file, else HVD_SECRET_FILE; read only when a
  // planned host is remote), TLS files (all three or none) and the
  // interfaces the workers bind to (--network-interface, in order).
  int agent_port = kDefaultAgentPort;
  std::string secret_file;
  proto::TlsFiles tls;
  std::vector<std::string> network_interfaces;
  // --ssh: each remote host gets a job-scoped hvd-agent started over ssh
  // (launcher/ssh_agents.h) instead of a running daemon. ssh_command is
  // --ssh-command split on spaces (default {"ssh"}); ssh_port 0: ssh's own.
  bool ssh = false;
  int ssh_port = 0;
  std::vector<std::string> ssh_command{"ssh"};
  std::string ssh_agent_path = "hvd-agent";
  ElasticOptions elastic;  // --min-np, --max-np, --reset-limit
  std::vector<std::string> command;
  std::vector<std::string> warnings;  // for the user, one line each
};

// --help, --version or an error: what to print and the exit code (err: one
// "hvdrun: error: ..." line).
using CliExit = common::CliExit;

using CliOutcome = std::variant<LaunchOptions, CliExit>;

// getenv-like lookup, so tests can supply the environment.
using EnvLookup = common::EnvLookup;

// Run under Horovod's name (hvdrun's link `horovodrun`): Horovod's launcher,
// --horovod-compat implied, and remote hosts reached over ssh (--ssh implied)
// unless the agents' credentials are given (--secret-file or
// HVD_SECRET_FILE, --tls-*, --agent-port: their hvd-agent daemons).
enum class Personality { kHvdrun, kHorovodrun };

// `args` excludes the program name.
CliOutcome parse_command_line(const std::vector<std::string>& args, const EnvLookup& lookup,
                              Personality personality = Personality::kHvdrun);

}  // namespace hvd::launcher
