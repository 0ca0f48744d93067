// The option groups of hvdrun's command line (launcher/cli.h), internal to
// the cli*.cc files. Each group adds its flags to the CLI11 app and, once
// the command line is parsed, checks them and fills in its part of
// LaunchOptions, or returns the usage error (kInvalidArgument, one line
// naming the flag). parse_command_line (cli.cc) adds and applies them in a
// fixed order: the order of --help, and which mistake is reported first.
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/cli_options.h"
#include "common/status.h"
#include "config/settings.h"
#include "launcher/cli.h"
#include "launcher/elastic_options.h"
#include "launcher/horovodrun_flags.h"
#include "proto/tls_credentials.h"

namespace hvd::launcher::cli {

// What every job has: -np, the hosts, output, -x, --config-file and the
// flags that end hvdrun at once or change how it runs (cli_job_options.cc).
struct JobArgs {
  int np = 0;
  std::string host_list;
  std::string hostfile;
  std::string output_dir;
  std::string config_file;
  bool verbose = false;
  bool horovod_compat = false;
  bool prefix_timestamp = false;
  bool check_build = false;
  std::vector<std::string> env_args;
  CLI::Option* np_opt = nullptr;
  CLI::Option* hosts_opt = nullptr;
  CLI::Option* hostfile_opt = nullptr;

  void add_to(CLI::App& app);
  // The hosts (-H, --hostfile, the discovery script's, else localhost:-np),
  // -np (given, else every slot up to --max-np) and the elastic options,
  // checked against the job size limits, --spares and --on-state-loss.
  common::Status apply_hosts(const ElasticArgs& elastic, LaunchOptions& options) const;
  // -x (NAME=VALUE, or NAME: hvdrun's value), the settings the workers will
  // read, then --horovod-compat's PYTHONPATH (after any -x PYTHONPATH).
  common::Status apply_workers(const EnvLookup& lookup, LaunchOptions& options) const;
};

// One flag per tunable of the settings table, and horovodrun's flags
// (cli_settings.cc).
struct SettingArgs {
  std::map<std::string, std::string> values;  // by setting key
  std::vector<std::pair<const config::SettingSpec*, CLI::Option*>> flags;
  HorovodrunFlags horovodrun;

  void add_to(CLI::App& app);
  // default < `config_file` < environment < horovodrun's flags < hvdrun's.
  common::Status apply(const std::string& config_file, const EnvLookup& lookup,
                       LaunchOptions& options) const;
};

// Remote hosts: their hvd-agent (docs/multihost.md; cli_remote_options.cc).
struct RemoteArgs {
  std::string agent_port;
  common::SecretOptions secret;
  proto::TlsFiles tls;
  std::string network_interfaces;
  CLI::Option* agent_port_opt = nullptr;
  CLI::Option* interfaces_opt = nullptr;

  void add_to(CLI::App& app);
  common::Status apply(const EnvLookup& lookup, LaunchOptions& options) const;
};

// Remote hosts without daemons: a job-scoped agent over ssh
// (launcher/ssh_agents.h; cli_remote_options.cc).
struct SshArgs {
  bool ssh = false;
  // As horovodrun: --ssh unless the agents' credentials are given (cli.h).
  bool implied = false;
  std::string port;
  std::string command;
  std::string agent_path;
  CLI::Option* port_opt = nullptr;
  CLI::Option* command_opt = nullptr;
  CLI::Option* agent_path_opt = nullptr;

  void add_to(CLI::App& app);
  // After RemoteArgs::apply: --ssh replaces the secret and TLS.
  common::Status apply(const RemoteArgs& remote, LaunchOptions& options) const;
};

}  // namespace hvd::launcher::cli
