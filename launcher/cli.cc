#include "launcher/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <map>
#include <sstream>

#include "launcher/check_build.h"
#include "launcher/exit_codes.h"
#include "launcher/horovod_shim.h"
#include "launcher/flag_suggestions.h"
#include "launcher/horovodrun_flags.h"
#include "launcher/host_discovery.h"
#include "launcher/size_limits.h"
#include "launcher/worker_settings.h"

#ifndef HVD_VERSION
#define HVD_VERSION "unknown"
#endif

namespace hvd::launcher {

namespace {

constexpr char kUsage[] = "usage: hvdrun [OPTIONS] COMMAND [ARGS...]";

// CLI11 does not know about the command after the options: say so in --help.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App* /*app*/, std::string name) const override {
    return "Usage: " + name + " [OPTIONS] COMMAND [ARGS...]\n";
  }
};

const char* value_name(config::SettingType type) {
  switch (type) {
    case config::SettingType::kPositiveInt:
    case config::SettingType::kCount: return "N";
    case config::SettingType::kNumber: return "NUMBER";
    case config::SettingType::kByteSize: return "BYTES";
    case config::SettingType::kOptionalText: return "TEXT";
    case config::SettingType::kLogLevel: return "LEVEL";
    case config::SettingType::kString: return "TEXT";
    case config::SettingType::kBool: return "";
  }
  return "TEXT";
}

std::string flag_for(std::string_view key) {
  std::string flag = "--" + std::string(key);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

// CLI11 messages may span lines; the user gets exactly one.
std::string one_line(std::string_view text) {
  std::string out;
  for (char c : text) out += (c == '\n' || c == '\r') ? ' ' : c;
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

CliExit usage_error(std::string_view message) {
  return {exit_code::kUsage, "", "hvdrun: error: " + one_line(message) + "\n"};
}

bool valid_env_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// --agent-port: a TCP port, 1..65535.
bool parse_port(const std::string& text, int& port) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, port);
  return ec == std::errc() && ptr == end && port >= 1 && port <= 65535;
}

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

// Splits the arguments into hvdrun's options and the command: the command
// starts at the first argument that is neither an option nor an option's
// value (or right after "--"). This is what CLI11's prefix_command does, but
// unknown flags before the command stay errors instead of becoming part of
// the command. Also spells Horovod's "-np", "-hostfile" and "-cb" as
// "--np", "--hostfile" and "--check-build" (CLI11 short names are one
// character).
struct SplitArgs {
  std::vector<std::string> options;
  std::vector<std::string> command;
};

SplitArgs split_arguments(const CLI::App& app, const std::vector<std::string>& args) {
  SplitArgs out;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "-np" || arg.rfind("-np=", 0) == 0) arg.insert(0, "-");
    if (arg == "-hostfile" || arg.rfind("-hostfile=", 0) == 0) arg.insert(0, "-");  // horovodrun's
    if (arg == "-cb") arg = "--check-build";                                          // horovodrun's
    if (arg.size() < 2 || arg[0] != '-') break;
    out.options.push_back(arg);
    bool is_long = arg[1] == '-';
    std::string name = is_long ? arg.substr(0, arg.find('=')) : arg.substr(0, 2);
    bool value_attached = is_long ? arg.find('=') != std::string::npos : arg.size() > 2;
    const CLI::Option* opt = app.get_option_no_throw(name);
    // Its values (two for --blacklist-cooldown-range LO HI).
    const int values = opt != nullptr && !value_attached ? opt->get_items_expected_min() : 0;
    for (int v = 0; v < values && i + 1 < args.size(); ++v) out.options.push_back(args[++i]);
  }
  out.command.assign(args.begin() + static_cast<std::ptrdiff_t>(std::min(i, args.size())),
                     args.end());
  return out;
}

}  // namespace

CliOutcome parse_command_line(const std::vector<std::string>& args, const EnvLookup& lookup) {
  CLI::App app{
      "hvdrun: starts a distributed hvd job: NP copies of COMMAND, one per slot, "
      "each told its rank through HVD_* environment variables.",
      "hvdrun"};
  app.formatter(std::make_shared<HelpFormatter>());
  app.footer(
      "Everything from COMMAND on is passed to the workers unparsed (or put it after "
      "\"--\").\nExit code: 0 when every worker succeeds, else the first failing "
      "worker's; 1 hvdrun failed (an agent unreachable, refusing or lost), 2 usage error, "
      "124 rendezvous timeout, 125 a worker stopped responding, 126/127 command not executable/"
      "not found, 128+N signal N.");
  app.set_version_flag("-v,--version", std::string("hvdrun (hvd) ") + HVD_VERSION);

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

  app.add_option("--np,--num-proc", np, "Number of worker processes (also spelled -np)")
      ->type_name("N");
  auto* hosts_opt = app.add_option("-H,--hosts", host_list,
                                   "Hosts and their slots: host:slots,... (default localhost:NP)")
                        ->type_name("HOSTS");
  auto* hostfile_opt =
      app.add_option("--hostfile", hostfile, "File of 'host slots=N' lines (# comments)")
          ->type_name("FILE");
  hosts_opt->excludes(hostfile_opt);
  app.add_option("--output-filename", output_dir,
                 "Also write each rank's output to DIR/rank.N/stdout and DIR/rank.N/stderr")
      ->type_name("DIR");
  app.add_flag("--prefix-output-with-timestamp", prefix_timestamp,
               "Start each output line with the time hvdrun got it (as horovodrun)");
  app.add_flag("--verbose", verbose, "Print the rank plan and the rendezvous address");
  app.add_flag("--check-build", check_build,
               "Print hvd's version, transports (with whether they can run here), plugins and "
               "features, and exit");
  app.add_flag("--horovod-compat", horovod_compat,
               "Let unchanged Horovod scripts run: 'import horovod.torch' gives hvd.torch");
  app.add_option("-x,--env", env_args,
                 "NAME=VALUE, or NAME to pass hvdrun's own value, for every worker (repeatable)")
      ->type_name("NAME[=VALUE]");
  app.add_option("--config-file", config_file, "YAML file of tunables (see config/hvd.yaml)")
      ->type_name("FILE");
  ElasticArgs elastic;
  add_elastic_options(app, elastic);

  // Remote hosts: their hvd-agent (docs/multihost.md).
  std::string agent_port;
  std::string secret_file;
  std::string network_interfaces;
  proto::TlsFiles tls;
  auto* agent_port_opt =
      app.add_option("--agent-port", agent_port,
                     "Port of the hvd-agent on every remote host (default 29470)")
          ->type_name("N");
  auto* secret_opt = app.add_option("--secret-file", secret_file,
                                    "File (mode 0600) of the secret the remote hvd-agents share "
                                    "[env HVD_SECRET_FILE]")
                         ->type_name("FILE");
  app.add_option("--tls-cert", tls.cert, "PEM certificate hvdrun presents to the agents (TLS)")
      ->type_name("FILE");
  app.add_option("--tls-key", tls.key, "PEM private key of --tls-cert")->type_name("FILE");
  app.add_option("--tls-ca", tls.ca, "PEM CA bundle the agents' certificates must chain to")
      ->type_name("FILE");
  auto* interfaces_opt =
      app.add_option("--network-interface,--network-interfaces", network_interfaces,
                     "Interfaces the workers bind to, first one a host has wins (remote jobs)")
          ->type_name("NAME[,NAME]");

  // Remote hosts without daemons: a job-scoped agent over ssh.
  bool ssh = false;
  std::string ssh_port, ssh_command, ssh_agent_path;
  app.add_flag("--ssh", ssh,
               "Start a job-scoped hvd-agent on every remote host over ssh (no daemon or "
               "--secret-file needed)");
  auto* ssh_port_opt =
      app.add_option("-p,--ssh-port", ssh_port, "Port of the remote ssh servers (ssh -p)")
          ->type_name("N");
  auto* ssh_command_opt =
      app.add_option("--ssh-command", ssh_command,
                     "The ssh program and its options, split on spaces (default ssh; for "
                     "wrappers)")
          ->type_name("CMD");
  auto* ssh_agent_opt =
      app.add_option("--ssh-agent-path", ssh_agent_path,
                     "hvd-agent on the remote hosts (default: hvd-agent from the remote PATH)")
          ->type_name("PATH");

  // One flag per tunable of the settings table.
  std::map<std::string, std::string> tunable_values;
  std::vector<std::pair<const config::SettingSpec*, CLI::Option*>> tunables;
  for (const auto& spec : config::all_settings()) {
    std::string help = std::string(spec.help) + " [env " + std::string(spec.env) + ", default " +
                       std::string(spec.default_value) + "]";
    std::string& value = tunable_values[std::string(spec.key)];
    // A boolean is a bare flag (--autotune), or --autotune=false.
    const std::string names = flag_for(spec.key) + HorovodrunFlags::alias_of(spec.key);
    auto* opt = spec.type == config::SettingType::kBool
                    ? app.add_flag(names, value, help)
                    : app.add_option(names, value, help)->type_name(value_name(spec.type));
    tunables.emplace_back(&spec, opt);
  }
  HorovodrunFlags horovodrun;
  horovodrun.add_to(app);

  // A repeated scalar option takes its last value, as in most launchers.
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_items_expected_max() == 1)
      opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }

  SplitArgs split = split_arguments(app, args);
  try {
    std::vector<std::string> reversed(split.options.rbegin(), split.options.rend());
    app.parse(reversed);
  } catch (const CLI::Success& e) {  // --help, --version
    std::ostringstream out;
    std::ostringstream err;
    int code = app.exit(e, out, err);
    return CliExit{code, out.str(), err.str()};
  } catch (const CLI::ParseError& e) {
    return usage_error(e.what() + did_you_mean(app, split.options));
  }

  if (check_build) {
    // What a job started from this environment would use (the GPU transport
    // and the extra plugins of HVD_TRANSPORT_PLUGINS).
    config::Settings settings;
    if (common::Status s = settings.apply_environment(lookup); !s.is_ok()) {
      return usage_error(s.message());
    }
    auto plugins = transports::plugin::parse_plugin_list(settings.get("transport_plugins"));
    if (!plugins.is_ok()) return usage_error(plugins.status().message());
    return CliExit{0,
                   check_build_report(transports::plugin::registry_with_plugins(plugins.value()),
                                      HVD_VERSION, plugins.value(), settings.get("gpu_transport")),
                   ""};
  }
  if (split.command.empty()) return usage_error(std::string("missing command (") + kUsage + ")");

  LaunchOptions options;
  options.command = std::move(split.command);
  options.verbose = verbose;
  options.output_dir = output_dir;

  // Settings: default < config file < environment < command line.
  if (!config_file.empty()) {
    common::Status s = options.settings.apply_config_file(config_file);
    if (!s.is_ok()) return usage_error(s.message());
  }
  if (common::Status s = options.settings.apply_environment(lookup); !s.is_ok()) {
    return usage_error(s.message());
  }
  // horovodrun's flags, then hvdrun's own (which win when both are given).
  if (common::Status s = horovodrun.apply(options.settings, options.warnings); !s.is_ok()) {
    return usage_error(s.message());
  }
  for (const auto& [spec, opt] : tunables) {
    if (opt->count() == 0) continue;
    common::Status s = options.settings.set(spec->key, tunable_values[std::string(spec->key)],
                                            flag_for(spec->key));
    if (!s.is_ok()) return usage_error(s.message());
  }

  // Remote hosts.
  if (agent_port_opt->count() > 0 && !parse_port(agent_port, options.agent_port)) {
    return usage_error("--agent-port '" + agent_port + "': not a port number (1-65535)");
  }
  if (secret_opt->count() > 0) {
    if (secret_file.empty()) return usage_error("--secret-file: empty file name");
    options.secret_file = secret_file;
  } else if (const char* from_env = lookup("HVD_SECRET_FILE"); from_env != nullptr) {
    options.secret_file = from_env;
  }
  if (common::Status s = proto::check_tls_files(tls); !s.is_ok()) return usage_error(s.message());
  options.tls = tls;
  if (interfaces_opt->count() > 0) {
    auto names = parse_interfaces(network_interfaces);
    if (!names.is_ok()) return usage_error(names.status().message());
    options.network_interfaces = std::move(names).value();
  }

  options.ssh = ssh;
  for (const auto* opt : {ssh_port_opt, ssh_command_opt, ssh_agent_opt}) {
    if (opt->count() > 0 && !ssh) return usage_error(opt->get_name() + " needs --ssh");
  }
  if (ssh) {
    if (tls.enabled()) return usage_error("--ssh does not support --tls-*: the agents it "
                                          "starts serve plaintext gRPC with a per-job secret");
    if (secret_opt->count() > 0) {
      return usage_error("--ssh generates a per-job secret: --secret-file is not used");
    }
    options.secret_file.clear();
    if (ssh_port_opt->count() > 0 && !parse_port(ssh_port, options.ssh_port)) {
      return usage_error("--ssh-port '" + ssh_port + "': not a port number (1-65535)");
    }
    if (ssh_command_opt->count() > 0) {
      options.ssh_command.clear();
      std::istringstream words(ssh_command);
      for (std::string word; words >> word;) options.ssh_command.push_back(word);
      if (options.ssh_command.empty()) return usage_error("--ssh-command '': expected a program");
    }
    if (ssh_agent_opt->count() > 0) {
      if (ssh_agent_path.empty() || ssh_agent_path.find_first_of(" \t\n'\"") != std::string::npos)
        return usage_error("--ssh-agent-path '" + ssh_agent_path +
                           "': expected a path without blanks or quotes");
      options.ssh_agent_path = ssh_agent_path;
    }
  }

  // Hosts and the number of processes.
  bool np_given = app.get_option("--np")->count() > 0;
  if (np_given && np < 1) {
    return usage_error("-np " + std::to_string(np) + ": need at least 1 process");
  }
  if (!elastic.discovery_script.empty() && (hosts_opt->count() > 0 || hostfile_opt->count() > 0)) {
    return usage_error("--host-discovery-script replaces -H and --hostfile: give one of them");
  }
  if (!elastic.discovery_script.empty()) {
    if (elastic.slots_per_host < 1) {
      return usage_error("--slots-per-host " + std::to_string(elastic.slots_per_host) +
                         ": need at least 1 slot");
    }
    auto hosts = run_host_discovery(elastic.discovery_script, elastic.slots_per_host,
                                    std::chrono::seconds(options.settings.get_int(
                                        "discovery_timeout")));
    if (!hosts.is_ok()) return usage_error(hosts.status().message());
    options.hosts = std::move(hosts).value();
  } else if (hosts_opt->count() > 0) {
    auto hosts = parse_host_list(host_list);
    if (!hosts.is_ok()) return usage_error("-H: " + hosts.status().message());
    options.hosts = std::move(hosts).value();
  } else if (hostfile_opt->count() > 0) {
    auto hosts = parse_hostfile(hostfile);
    if (!hosts.is_ok()) return usage_error(hosts.status().message());
    options.hosts = std::move(hosts).value();
  } else if (np_given) {
    options.hosts = {HostSlots{"localhost", np}};
  } else {
    return usage_error("-np is required when neither -H nor --hostfile is given");
  }
  if (np_given) {
    options.np = np;
  } else {
    int64_t slots = 0;  // many hosts of many slots: more than an int holds
    for (const auto& h : options.hosts) slots += h.slots;
    options.np = default_np(elastic, static_cast<int>(std::min<int64_t>(slots, INT32_MAX)));
  }
  auto resolved = resolve_elastic(elastic, options.np);
  if (!resolved.is_ok()) return usage_error(resolved.status().message());
  options.elastic = resolved.value();
  if (common::Status s = check_job_size(options.hosts, options.np, np_given, options.elastic);
      !s.is_ok()) {
    return usage_error(s.message());
  }
  if (common::Status s = check_spares(options.settings.get_int("spares"), options.elastic);
      !s.is_ok()) {
    return usage_error(s.message());
  }

  // -x NAME=VALUE / -x NAME
  for (const auto& arg : env_args) {
    size_t eq = arg.find('=');
    std::string name = arg.substr(0, eq);
    if (!valid_env_name(name)) {
      return usage_error("-x '" + arg + "': '" + name +
                         "' is not a valid environment variable name");
    }
    if (eq != std::string::npos) {
      options.extra_env.emplace_back(name, arg.substr(eq + 1));
    } else if (const char* value = lookup(name.c_str()); value != nullptr) {
      options.extra_env.emplace_back(name, value);
    } else {
      options.warnings.push_back("-x " + name + ": not set in hvdrun's environment, not passed on");
    }
  }
  if (common::Status s = check_worker_settings(options.settings, options.extra_env);
      !s.is_ok()) {
    return usage_error(s.message());
  }
  options.horovod_compat = horovod_compat;
  options.prefix_timestamp = prefix_timestamp;
  if (horovod_compat) {
    auto shim = find_horovod_shim();
    if (!shim.is_ok()) return usage_error(shim.status().message());
    const char* current = lookup("PYTHONPATH");
    for (const auto& [name, value] : options.extra_env) {
      if (name == "PYTHONPATH") current = value.c_str();  // a -x PYTHONPATH counts
    }
    options.extra_env.emplace_back("PYTHONPATH", prepend_python_path(*shim, current));
  }
  return options;
}

}  // namespace hvd::launcher
