// hvdrun's options for remote hosts: their hvd-agent (port, secret, TLS,
// the workers' interfaces) or --ssh (cli_groups.h: RemoteArgs, SshArgs).
#include <sstream>

#include "launcher/cli_groups.h"

namespace hvd::launcher::cli {

namespace {

// --network-interface eth0,ib0 -> {"eth0", "ib0"}; blanks around names ignored.
common::Result<std::vector<std::string>> parse_interfaces(const std::string& text) {
  std::vector<std::string> names;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string name = text.substr(start, comma == std::string::npos ? comma : comma - start);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (name.empty() || name.find_first_of(" \t/") != std::string::npos) {
      return common::invalid_argument("--network-interface '" + text + "': '" + name +
                                      "' is not an interface name");
    }
    names.push_back(std::move(name));
    if (comma == std::string::npos) return names;
    start = comma + 1;
  }
}

// --agent-port, --ssh-port: a TCP port, 1..65535.
common::Status parse_port_flag(const std::string& flag, const std::string& text, int& port) {
  auto number = common::parse_port(text);
  if (!number) {
    return common::invalid_argument(flag + " '" + text + "': not a port number (1-65535)");
  }
  port = *number;
  return common::Status::ok();
}

}  // namespace

void RemoteArgs::add_to(CLI::App& app) {
  agent_port_opt = app.add_option("--agent-port", agent_port,
                                  "Port of the hvd-agent on every remote host (default 29470)")
                       ->type_name("N");
  secret.add_to(app,
                "File (mode 0600) of the secret the remote hvd-agents share "
                "[env HVD_SECRET_FILE]");
  common::add_tls_options(app, tls.cert, tls.key, tls.ca,
                          "PEM certificate hvdrun presents to the agents (TLS)",
                          "PEM CA bundle the agents' certificates must chain to");
  interfaces_opt =
      app.add_option("--network-interface,--network-interfaces", network_interfaces,
                     "Interfaces the workers bind to, first one a host has wins (remote jobs)")
          ->type_name("NAME[,NAME]");
}

common::Status RemoteArgs::apply(const EnvLookup& lookup, LaunchOptions& options) const {
  if (agent_port_opt->count() > 0) {
    if (common::Status s = parse_port_flag("--agent-port", agent_port, options.agent_port);
        !s.is_ok()) {
      return s;
    }
  }
  auto secret_file = secret.file_name(lookup);
  if (!secret_file.is_ok()) return secret_file.status();
  options.secret_file = *secret_file;
  if (common::Status s = proto::check_tls_files(tls); !s.is_ok()) return s;
  options.tls = tls;
  if (interfaces_opt->count() > 0) {
    auto names = parse_interfaces(network_interfaces);
    if (!names.is_ok()) return names.status();
    options.network_interfaces = std::move(names).value();
  }
  return common::Status::ok();
}

void SshArgs::add_to(CLI::App& app) {
  app.add_flag("--ssh", ssh,
               "Start a job-scoped hvd-agent on every remote host over ssh (no daemon or "
               "--secret-file needed)");
  port_opt = app.add_option("-p,--ssh-port", port, "Port of the remote ssh servers (ssh -p)")
                 ->type_name("N");
  command_opt = app.add_option("--ssh-command", command,
                               "The ssh program and its options, split on spaces (default ssh; "
                               "for wrappers)")
                    ->type_name("CMD");
  agent_path_opt =
      app.add_option("--ssh-agent-path", agent_path,
                     "hvd-agent on the remote hosts (default: hvd-agent from the remote PATH)")
          ->type_name("PATH");
}

common::Status SshArgs::apply(const RemoteArgs& remote, LaunchOptions& options) const {
  // horovodrun: Horovod reaches remote hosts over ssh; given credentials
  // for the agents (the flags, or HVD_SECRET_FILE: options.secret_file) mean
  // their daemons instead.
  const bool agents = !options.secret_file.empty() || remote.tls.enabled() ||
                      remote.agent_port_opt->count() > 0;
  options.ssh = ssh || (implied && !agents);
  for (const auto* opt : {port_opt, command_opt, agent_path_opt}) {
    if (opt->count() > 0 && !options.ssh) {
      return common::invalid_argument((opt == port_opt ? "-p/--ssh-port" : opt->get_name()) +
                                      " needs --ssh (implied as horovodrun)");
    }
  }
  if (!options.ssh) return common::Status::ok();
  if (remote.tls.enabled()) {
    return common::invalid_argument(
        "--ssh does not support --tls-*: the agents it starts serve plaintext gRPC with a "
        "per-job secret");
  }
  if (remote.secret.file_given()) {
    return common::invalid_argument("--ssh generates a per-job secret: --secret-file is not used");
  }
  options.secret_file.clear();
  if (port_opt->count() > 0) {
    if (common::Status s = parse_port_flag("--ssh-port", port, options.ssh_port); !s.is_ok()) {
      return s;
    }
  }
  if (command_opt->count() > 0) {
    options.ssh_command.clear();
    std::istringstream words(command);
    for (std::string word; words >> word;) options.ssh_command.push_back(word);
    if (options.ssh_command.empty()) {
      return common::invalid_argument("--ssh-command '': expected a program");
    }
  }
  if (agent_path_opt->count() > 0) {
    if (agent_path.empty() || agent_path.find_first_of(" \t\n'\"") != std::string::npos) {
      return common::invalid_argument("--ssh-agent-path '" + agent_path +
                                      "': expected a path without blanks or quotes");
    }
    options.ssh_agent_path = agent_path;
  }
  return common::Status::ok();
}

}  // namespace hvd::launcher::cli
