// hvdrun: parses the command line, plans ranks onto slots and onto agents
// (the embedded one for this machine, hvd-agent for remote hosts), reads the
// agents' credentials when a host is remote, and runs the job as a
// JobSession with the static or the elastic policy.
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/logging.h"
#include "launcher/agent_credentials.h"
#include "proto/grpc_log.h"
#include "proto/tls_credentials.h"
#include "launcher/agent_targets.h"
#include "launcher/cli.h"
#include "launcher/exit_codes.h"
#include "launcher/host_resolution.h"
#include "launcher/elastic/elastic_policy.h"
#include "launcher/job_session.h"
#include "launcher/local_host.h"
#include "launcher/signal_watcher.h"
#include "launcher/slot_plan.h"
#include "launcher/ssh_agents.h"
#include "launcher/static_policy.h"

namespace {

using namespace hvd::launcher;

// A host name that does not resolve within this fails the job at start.
constexpr std::chrono::seconds kResolveTimeout{10};

int usage_error(const std::string& message) {
  std::fprintf(stderr, "hvdrun: error: %s\n", message.c_str());
  return exit_code::kUsage;
}

// Run as `horovodrun` (a link to hvdrun, installed beside it: CMake option
// HVD_HOROVODRUN): Horovod's launcher (cli.h, Personality).
Personality personality(const char* argv0) {
  std::string_view name(argv0 == nullptr ? "" : argv0);
  if (auto slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
  return name == "horovodrun" ? Personality::kHorovodrun : Personality::kHvdrun;
}

int run(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  CliOutcome outcome = parse_command_line(
      args, [](const char* name) { return std::getenv(name); }, personality(argv[0]));
  if (const auto* done = std::get_if<CliExit>(&outcome)) {
    std::fputs(done->out.c_str(), stdout);
    std::fputs(done->err.c_str(), stderr);
    return done->code;
  }
  const LaunchOptions& options = std::get<LaunchOptions>(outcome);
  auto level = hvd::common::parse_log_level(options.settings.get("log_level"));
  spdlog::default_logger()->set_level(level.is_ok() ? *level : spdlog::level::warn);
  for (const auto& warning : options.warnings)
    std::fprintf(stderr, "hvdrun: warning: %s\n", warning.c_str());
  // The TLS files before anything else, as a set: a key of another
  // certificate or a key given as --tls-cert is a usage error now, not a
  // failed handshake with every agent later.
  auto channel = hvd::proto::channel_credentials(options.tls);
  if (!channel.is_ok()) return usage_error(channel.status().message());

  auto plan = plan_slots(options.hosts, options.np);
  if (!plan.is_ok()) return usage_error(plan.status().message());

  // The embedded agent serves this machine; remote hosts need their hvd-agent.
  auto targets = plan_agent_targets(*plan, LocalIdentity::current(), options.agent_port);
  std::optional<RemoteCredentials> remote;
  // The host names first, then the credentials: the order a user fixes them in.
  if (first_remote(targets) != nullptr) {
    if (hvd::common::Status s = check_hosts_resolve(targets, kResolveTimeout); !s.is_ok()) {
      return usage_error(s.message());
    }
  } else if (options.ssh && options.ssh_port != 0) {
    std::fprintf(stderr,
                 "hvdrun: note: -p/--ssh-port %d ignored: every host of this job is this "
                 "machine (ssh reaches remote hosts only)\n",
                 options.ssh_port);
  }
  // --ssh: job-scoped agents that end with this scope (every exit path).
  SshAgents ssh_agents;
  if (options.ssh && first_remote(targets) != nullptr) {
    hvd::common::Status started = ssh_agents.start(
        targets, options, std::chrono::seconds(options.settings.get_int("start_timeout")));
    if (!started.is_ok()) {
      std::fprintf(stderr, "hvdrun: error: %s\n", started.message().c_str());
      return exit_code::kAgentFailure;
    }
    remote = RemoteCredentials{ssh_agents.secret(), *channel};
  } else if (const AgentTarget* first = first_remote(targets)) {
    auto credentials = remote_credentials(options, first->host, *channel);
    if (!credentials.is_ok()) return usage_error(credentials.status().message());
    remote = std::move(credentials).value();
  }

  JobSession job(options, std::move(plan).value(), std::move(targets), std::move(remote),
                 [&](JobSession& session) -> std::unique_ptr<JobPolicy> {
                   if (options.elastic.enabled) {
                     return std::make_unique<elastic::ElasticPolicy>(session);
                   }
                   return std::make_unique<StaticPolicy>(session);
                 });
  return job.run();
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread exists: only the signal watcher takes these signals.
  SignalWatcher::block_termination_signals();
  // A closed stdout (hvdrun ... | head) must not kill hvdrun before it has
  // terminated the workers: writes fail with EPIPE instead. Workers start
  // with every signal at its default.
  std::signal(SIGPIPE, SIG_IGN);
  // Blocks of 256 KiB and more (a rendezvous request of megabytes, refused
  // or not) go back to the system when freed. By default glibc raises this
  // threshold to the largest block freed so far, and such blocks then stay
  // in the heap: a worker's 20 refused Set calls of 15 MiB left hvdrun
  // 80 MB larger (issue 29; docs/security.md, "The store's quotas").
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
  hvd::common::init_logging("hvdrun", spdlog::level::warn);
  // gRPC's own lines (a failed TLS handshake) in hvd's format.
  hvd::proto::route_grpc_log();
  try {
    int code = run(argc, argv);
    std::fflush(stdout);
    std::fflush(stderr);
    return code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hvdrun: error: internal error: %s\n", e.what());
    return exit_code::kInternalError;
  }
}
