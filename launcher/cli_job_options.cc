// hvdrun's options of every job (cli_groups.h: JobArgs).
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>

#include "launcher/cli_groups.h"
#include "launcher/state_loss.h"
#include "launcher/horovod_shim.h"
#include "launcher/size_limits.h"
#include "launcher/worker_settings.h"

namespace hvd::launcher::cli {

namespace {

bool valid_env_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

}  // namespace

void JobArgs::add_to(CLI::App& app) {
  np_opt = app.add_option("--np,--num-proc", np, "Number of worker processes (also spelled -np)")
               ->type_name("N");
  hosts_opt = app.add_option("-H,--hosts", host_list,
                             "Hosts and their slots: host:slots,... (default localhost:NP)")
                  ->type_name("HOSTS");
  hostfile_opt =
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
}

common::Status JobArgs::apply_hosts(const ElasticArgs& elastic, LaunchOptions& options) const {
  const bool np_given = np_opt->count() > 0;
  if (np_given && np < 1) {
    return common::invalid_argument("-np " + std::to_string(np) + ": need at least 1 process");
  }
  if (!elastic.discovery_script.empty() && (hosts_opt->count() > 0 || hostfile_opt->count() > 0)) {
    return common::invalid_argument(
        "--host-discovery-script replaces -H and --hostfile: give one of them");
  }
  if (!elastic.discovery_script.empty()) {
    auto hosts = discover_first_hosts(
        elastic, std::chrono::seconds(options.settings.get_int("discovery_timeout")));
    if (!hosts.is_ok()) return hosts.status();
    options.hosts = std::move(hosts).value();
  } else if (hosts_opt->count() > 0) {
    auto hosts = parse_host_list(host_list);
    if (!hosts.is_ok()) return common::invalid_argument("-H: " + hosts.status().message());
    options.hosts = std::move(hosts).value();
  } else if (hostfile_opt->count() > 0) {
    auto hosts = parse_hostfile(hostfile);
    if (!hosts.is_ok()) return hosts.status();
    options.hosts = std::move(hosts).value();
  } else if (np_given) {
    options.hosts = {HostSlots{"localhost", np}};
  } else {
    return common::invalid_argument("-np is required when neither -H nor --hostfile is given");
  }
  if (np_given) {
    options.np = np;
  } else {
    int64_t slots = 0;  // many hosts of many slots: more than an int holds
    for (const auto& h : options.hosts) slots += h.slots;
    options.np = default_np(elastic, static_cast<int>(std::min<int64_t>(slots, INT32_MAX)));
  }
  auto resolved = resolve_elastic(elastic, options.np);
  if (!resolved.is_ok()) return resolved.status();
  options.elastic = resolved.value();
  if (common::Status s = check_job_size(options.hosts, options.np, np_given, options.elastic);
      !s.is_ok()) {
    return s;
  }
  if (common::Status s = check_spares(options.settings.get_int("spares"), options.elastic);
      !s.is_ok()) {
    return s;
  }
  return on_state_loss(options.settings).status();
}

common::Status JobArgs::apply_workers(const EnvLookup& lookup, LaunchOptions& options) const {
  // -x NAME=VALUE / -x NAME
  for (const auto& arg : env_args) {
    size_t eq = arg.find('=');
    std::string name = arg.substr(0, eq);
    if (!valid_env_name(name)) {
      return common::invalid_argument("-x '" + arg + "': '" + name +
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
  if (common::Status s = check_worker_settings(options.settings, options.extra_env); !s.is_ok()) {
    return s;
  }
  if (horovod_compat) {
    auto shim = find_horovod_shim();
    if (!shim.is_ok()) return shim.status();
    const char* current = lookup("PYTHONPATH");
    for (const auto& [name, value] : options.extra_env) {
      if (name == "PYTHONPATH") current = value.c_str();  // a -x PYTHONPATH counts
    }
    options.extra_env.emplace_back("PYTHONPATH", prepend_python_path(*shim, current));
  }
  return common::Status::ok();
}

}  // namespace hvd::launcher::cli
