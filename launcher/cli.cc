#include "launcher/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>

#include "launcher/check_build.h"
#include "launcher/cli_groups.h"
#include "launcher/exit_codes.h"
#include "launcher/flag_suggestions.h"

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

CliExit usage_error(std::string_view message) {
  return common::usage_error("hvdrun", exit_code::kUsage, message);
}

// --check-build: what a job started from this environment would use (the
// GPU transport and the extra plugins of HVD_TRANSPORT_PLUGINS).
CliExit check_build_exit(const EnvLookup& lookup) {
  config::Settings settings;
  if (common::Status s = settings.apply_environment(lookup); !s.is_ok()) {
    return usage_error(s.message());
  }
  auto plugins = transports::plugin::parse_plugin_list(settings.get("transport_plugins"));
  if (!plugins.is_ok()) return usage_error(plugins.status().message());
  return CliExit{0,
                 check_build_report(transports::registry_with_plugins(plugins.value()),
                                    HVD_VERSION, plugins.value(), settings.get("gpu_transport")),
                 ""};
}

}  // namespace

CliOutcome parse_command_line(const std::vector<std::string>& args, const EnvLookup& lookup,
                              Personality personality) {
  const bool horovodrun = personality == Personality::kHorovodrun;
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

  // The groups, in the order of --help.
  cli::JobArgs job;
  job.add_to(app);
  ElasticArgs elastic;
  add_elastic_options(app, elastic);
  cli::RemoteArgs remote;
  remote.add_to(app);
  cli::SshArgs ssh;
  ssh.add_to(app);
  cli::SettingArgs settings;
  settings.add_to(app);

  SplitArgs split = split_arguments(app, args);
  if (auto done = common::parse_options(app, split.options, "hvdrun", exit_code::kUsage,
                                        [&] { return did_you_mean(app, split.options); })) {
    return *std::move(done);
  }
  if (job.check_build) return check_build_exit(lookup);
  if (split.command.empty()) return usage_error(std::string("missing command (") + kUsage + ")");

  LaunchOptions options;
  options.command = std::move(split.command);
  options.verbose = job.verbose;
  options.output_dir = job.output_dir;
  if (horovodrun) job.horovod_compat = true;
  options.horovod_compat = job.horovod_compat;
  ssh.implied = horovodrun;
  options.prefix_timestamp = job.prefix_timestamp;
  // Each group in turn: the first mistake found is the one reported.
  common::Status s = settings.apply(job.config_file, lookup, options);
  if (s.is_ok()) s = remote.apply(lookup, options);
  if (s.is_ok()) s = ssh.apply(remote, options);
  if (s.is_ok()) s = job.apply_hosts(elastic, options);
  if (s.is_ok()) s = job.apply_workers(lookup, options);
  if (!s.is_ok()) return usage_error(s.message());
  return options;
}

}  // namespace hvd::launcher
