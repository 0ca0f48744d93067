// JobSession (job_session.h): the start (every agent's Info, the network
// plan, the rendezvous service, the launch and the Watch streams), then the
// event loop and the exit decision.
#include "launcher/job_session.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "common/logging.h"
#include "common/overloaded.h"
#include "common/token.h"
#include "daemon/rendezvous/rendezvous_service.h"
#include "launcher/exit_codes.h"
#include "launcher/host_agents.h"
#include "launcher/job_network.h"
#include "launcher/launch_requests.h"
#include "launcher/metrics_exporter.h"
#include "launcher/signal_watcher.h"
#include "launcher/worker_environment.h"
#include "proto/grpc_server.h"

#ifndef HVD_VERSION
#define HVD_VERSION "unknown"
#endif

namespace hvd::launcher {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How often the session wakes without events (start-timeout checks).
constexpr milliseconds kTick{100};
// After the last exit (or after Terminate), how long the streams may go
// without output before hvdrun stops waiting for their end (output still
// flowing, at the pace of hvdrun's stdout, is waited for).
constexpr milliseconds kDrainTimeout{5'000};
// In-flight calls get this long when a server shuts down.
constexpr milliseconds kServerShutdownGrace{1'000};
// A worker that fails this close to the start timeout, while the rendezvous
// is still incomplete, failed because of it: its own Join timed out.
constexpr milliseconds kStartTimeoutSlack{1'000};

// Launch may take a while on a loaded host; it is never retried.
constexpr milliseconds kLaunchTimeout{60'000};

}  // namespace

JobSession::JobSession(const LaunchOptions& options, std::vector<RankSlot> plan,
                       std::vector<AgentTarget> targets, std::optional<RemoteCredentials> remote,
                       const PolicyFactory& make_policy)
    : options_(options),
      plan_(std::move(plan)),
      targets_(std::move(targets)),
      remote_(std::move(remote)),
      sink_(stdout, stderr),
      hints_(options.horovod_compat, options.command.empty() ? "" : options.command.front()),
      policy_(make_policy(*this)),
      first_round_(std::chrono::seconds(options.settings.get_int("start_timeout")), plan_),
      exits_(static_cast<size_t>(policy_->slots()), plan_.size()),
      stop_(std::chrono::seconds(options.settings.get_int("terminate_grace"))) {
  sink_.set_timestamps(options.prefix_timestamp);
}

JobSession::~JobSession() { shutdown(); }

void JobSession::error_line(const std::string& message) {
  std::fprintf(stderr, "hvdrun: error: %s\n", message.c_str());
  std::fflush(stderr);
}

int JobSession::run() {
  SignalWatcher signals([this](int signo) {
    int none = 0;
    first_signal_.compare_exchange_strong(none, signo);
    queue_.push(SignalReceived{signo});
  });
  int code = start();
  if (code == exit_code::kSuccess) code = supervise();
  shutdown();
  return code;
}

int JobSession::start() {
  auto job_token = common::generate_token();
  auto id = common::generate_token();
  for (const auto* r : {&job_token, &id}) {
    if (!r->is_ok()) {
      error_line(r->status().message());
      return exit_code::kInternalError;
    }
  }
  job_id_ = "job-" + id->substr(0, 12);
  const int np = static_cast<int>(plan_.size());

  if (!options_.output_dir.empty()) {
    if (common::Status s = sink_.open_log_dir(options_.output_dir, policy_->slots());
        !s.is_ok()) {
      error_line(s.message());
      return exit_code::kUsage;
    }
  }

  // Every agent answers Info (within the start timeout) before anything starts.
  auto agents = HostAgents::start(targets_, remote_, np);
  if (!agents.is_ok()) {
    error_line(agents.status().message());
    // A bad setting (HVD_CONTAINMENT=...) is a usage error.
    return agents.status().code() == common::StatusCode::kInvalidArgument
               ? exit_code::kUsage
               : exit_code::kInternalError;
  }
  agents_ = std::move(agents).value();
  streams_.start(agents_->size());
  auto infos =
      agents_->info_all(first_round_.timeout(), [this] { return first_signal_ != 0; });
  if (!infos.is_ok() && infos.status().code() == common::StatusCode::kCancelled) {
    std::fprintf(stderr, "hvdrun: received %s before the workers started\n",
                 signal_name(first_signal_).c_str());
    return exit_code::kSignalBase + first_signal_;
  }
  if (!infos.is_ok()) {
    error_line(infos.status().message());
    return exit_code::kAgentFailure;
  }
  for (size_t i = 0; i < infos->size(); ++i) {
    const std::string& version = (*infos)[i].version();
    if (version != HVD_VERSION) {
      std::fprintf(stderr, "hvdrun: warning: the agent on host %s runs hvd %s, hvdrun is %s\n",
                   agents_->target(i).host.c_str(), version.c_str(), HVD_VERSION);
    }
  }

  auto network = plan_job_network(agents_->targets(), *infos, options_.network_interfaces,
                                  options_.agent_port);
  if (!network.is_ok()) {
    error_line(network.status().message());
    return network.status().code() == common::StatusCode::kInvalidArgument
               ? exit_code::kUsage
               : exit_code::kAgentFailure;
  }

  rendezvous_ = std::make_unique<daemon::RendezvousService>(*job_token, np);
  extension_->configure(*rendezvous_);
  auto rendezvous_server =
      daemon::GrpcServer::start(network->listen_host, 0, {rendezvous_.get()},
                                daemon::rendezvous_server_options());
  if (!rendezvous_server.is_ok()) {
    error_line("cannot start the rendezvous service: " + rendezvous_server.status().message());
    return exit_code::kInternalError;
  }
  rendezvous_server_ = std::move(rendezvous_server).value();
  if (int code = start_metrics(); code != exit_code::kSuccess) return code;
  const std::string rendezvous_addr =
      host_port(network->advertised_host, rendezvous_server_->port());

  if (options_.verbose) {
    print_plan();
    std::fprintf(stderr, "hvdrun: rendezvous at %s\n", rendezvous_addr.c_str());
    for (size_t i = 0; i < infos->size(); ++i) {
      const auto& info = (*infos)[i];
      // containment: how the agent keeps the job's processes (docs/agent.md).
      const std::string containment =
          info.containment().empty() ? "" : ", containment " + info.containment();
      std::fprintf(stderr, "hvdrun: agent at %s: host %s, %d slots, %d GPUs, hvd %s%s\n",
                   agents_->target(i).address.c_str(), info.hostname().c_str(), info.slots(),
                   info.gpus(), info.version().c_str(), containment.c_str());
    }
  }
  return launch(*job_token, rendezvous_addr, network->bind_addresses);
}

void JobSession::print_plan() {
  const int np = static_cast<int>(plan_.size());
  const size_t hosts = planned_hosts(plan_).size();
  std::fprintf(stderr, "hvdrun: job %s: %d process%s on %zu host%s (%s)\n", job_id_.c_str(), np,
               np == 1 ? "" : "es", hosts, hosts == 1 ? "" : "s",
               describe_hosts(options_.hosts).c_str());
  for (const auto& slot : plan_) {
    std::fprintf(stderr, "hvdrun: rank %d on %s: local_rank %d of %d, cross_rank %d of %d\n",
                 slot.rank, slot.host.c_str(), slot.local_rank, slot.local_size, slot.cross_rank,
                 slot.cross_size);
  }
}

int JobSession::launch(const std::string& job_token, const std::string& rendezvous_addr,
                      const std::vector<std::string>& bind_addresses) {
  std::vector<std::string> bind_of_rank(plan_.size());
  for (size_t agent = 0; agent < agents_->size(); ++agent) {
    for (int rank : agents_->target(agent).ranks) {
      bind_of_rank[static_cast<size_t>(rank)] = bind_addresses[agent];
    }
  }
  std::error_code cwd_error;
  base_.cwd = std::filesystem::current_path(cwd_error).string();
  base_.env = current_environment();
  base_.settings = options_.settings.to_environment();
  base_.job_token = job_token;
  base_.rendezvous_addr = rendezvous_addr;
  std::vector<Environment> envs;
  for (const auto& slot : plan_) {
    envs.push_back(worker_env(slot, bind_of_rank[static_cast<size_t>(slot.rank)]));
    if (options_.verbose) {
      std::fprintf(stderr, "hvdrun: rank %d environment: %s\n", slot.rank,
                   describe_worker_environment(envs.back(), options_.extra_env).c_str());
    }
  }
  std::fflush(stderr);

  auto requests = launch_requests(job_id_, agents_->targets(), envs, options_.command, base_.cwd,
                                  job_orphan_grace(options_.settings));
  common::Status launched = agents_->launch_all(requests, kLaunchTimeout, stop_.grace());
  if (!launched.is_ok()) {
    // The agent says which command it could not run, and why.
    switch (launched.code()) {
      case common::StatusCode::kNotFound:
        error_line(launched.message());
        return exit_code::kCommandNotFound;
      case common::StatusCode::kFailedPrecondition:
        error_line(launched.message());
        return exit_code::kCannotExecute;
      default:
        error_line("cannot launch the workers: " + launched.message());
        return exit_code::kInternalError;
    }
  }
  launched_ = true;
  agents_->watch_all(job_id_, queue_);  // stream i is agent i's first
  extension_->launched(bind_addresses);
  return exit_code::kSuccess;
}

Environment JobSession::worker_env(const RankSlot& slot, const std::string& bind_address) const {
  // Elastic jobs: HVD_RANK is the worker's slot, below HVD_SIZE = the
  // number of slots (--max-np); its world comes from the rendezvous round.
  JobContext job{job_id_,      base_.job_token, base_.rendezvous_addr,
                 bind_address, policy_->slots(), options_.network_interfaces};
  Environment env = worker_environment(base_.env, base_.settings, options_.extra_env, slot, job);
  extension_->add_env(env);
  return env;
}

int JobSession::supervise() {
  std::optional<Clock::time_point> drain_deadline;
  while (true) {
    const auto now = Clock::now();
    if (exits_.settling() && (now >= *exits_.settle_deadline() ||
                              exits_.exited_count() == static_cast<int>(plan_.size()))) {
      report_failure();
    }
    if (!stop_.terminating()) first_round_.track(view_of(*rendezvous_));
    if (!stop_.terminating() && !exits_.settling()) check_start_timeout(now);
    if (!stop_.terminating() && !exits_.settling()) policy_->tick(now);
    if (monitor_) refresh_monitor(now);
    if (!stop_.terminating() && !exits_.settling() && policy_->succeeded()) {
      // Every worker exited with 0; the streams end after their last output.
      exits_.decide(exit_code::kSuccess);
      if (streams_.all_ended()) break;
      if (!drain_deadline) drain_deadline = now + kDrainTimeout;
    }
    if (stop_.terminating() && stop_.done()) {
      if (streams_.all_ended()) break;
      if (!drain_deadline) drain_deadline = now + kDrainTimeout;
    }
    if (drain_deadline && now >= *drain_deadline) {
      spdlog::warn("an agent's event stream did not end within {} ms; not waiting for more output",
                   kDrainTimeout.count());
      break;
    }

    auto wake = now + kTick;
    if (exits_.settling() && *exits_.settle_deadline() < wake) wake = *exits_.settle_deadline();
    std::optional<JobEvent> event = queue_.pop_until(wake);
    if (!event) continue;
    std::visit(common::Overloaded{
                   [&](const WorkerOutput& out) {
                     handle(out);
                     if (drain_deadline) drain_deadline = Clock::now() + kDrainTimeout;
                   },
                   [&](const WorkerExited& exit) { handle(exit); },
                   [&](const WorkerStateChanged& change) {
                     if (monitor_) monitor_->state_changed(change.rank, change.stopped);
                     if (!stop_.terminating()) policy_->worker_state(change);
                   },
                   [&](const WatchEnded& end) { handle(end); },
                   [&](const SignalReceived& sig) { handle(sig); },
                   [&](const HostsDiscovered& found) {
                     if (!stop_.terminating()) extension_->hosts_discovered(found);
                   },
                   [&](const TerminateDone& done) {
                     stop_.set_done();
                     if (!done.status.is_ok()) {
                       spdlog::warn("terminating the workers: {}", done.status.to_string());
                     }
                   },
               },
               *event);
  }
  return exits_.code().value_or(exit_code::kInternalError);
}

void JobSession::handle(const WorkerOutput& out) {
  sink_.write(extension_->output_rank(out.rank), out.is_stderr, out.lines);
  for (const std::string& line : out.lines) {
    if (auto hint = hints_.on_line(line)) {
      std::fprintf(stderr, "hvdrun: hint: %s\n", hint->c_str());
      std::fflush(stderr);
    }
  }
}

void JobSession::handle(WorkerExited exit) {
  const bool current = extension_->holds_slot(exit.rank);  // asked before a spare's is renamed
  if (extension_->take_spare_exit(exit)) return;
  if (monitor_) {
    monitor_->exited(exit.rank, host_of(exit.rank), exit.exit_code, exit.signal,
                     stop_.terminating(), current);
  }
  if (!exits_.exited(exit.rank)) {
    spdlog::warn("exit event for unknown rank {} (pid {})", exit.rank, exit.pid);
    return;
  }
  spdlog::debug("rank {} (pid {}) exited: code {} signal {}", exit.rank, exit.pid, exit.exit_code,
                exit.signal);
  // Once hvdrun is terminating the job, exits are expected: not failures.
  if (stop_.terminating()) return;
  policy_->worker_exited(exit);
}

void JobSession::worker_failed(const WorkerExited& exit) {
  const auto now = Clock::now();
  // A worker whose own rendezvous Join timed out: report the start timeout.
  if (!exits_.settling()) {
    auto missing =
        first_round_.overdue(view_of(*rendezvous_), now, kStartTimeoutSlack);
    if (!missing.empty()) {
      end_job(exit_code::kRendezvousTimeout, first_round_.timeout_error(missing));
      return;
    }
  }
  exits_.add_failure(exit, now);
}

void JobSession::handle(const WatchEnded& end) {
  // Streams are numbered; an agent's stream is replaced when it gets a new job.
  const std::optional<size_t> agent = streams_.end(end.agent);
  if (!agent) return;
  std::vector<int> running = policy_->running_on(*agent);
  if (running.empty()) {
    if (!end.status.is_ok() && !stop_.terminating()) spdlog::warn("{}", end.status.to_string());
    return;
  }
  streams_.mark_lost(*agent);
  if (stop_.terminating()) {
    note_stream_end(*agent, end.status);
    return;
  }
  if (monitor_) monitor_->agent_lost(agents_->target(*agent).host, end.status.message());
  policy_->agent_lost(*agent, running, end.status);
}

void JobSession::note_stream_end(size_t agent, const common::Status& why) const {
  spdlog::info("the event stream of the agent on host {} ended: {}", agents_->target(agent).host,
               why.to_string());
}

std::string JobSession::host_of(int process) const {
  std::string host = extension_->host_of(process);
  if (!host.empty()) return host;
  return process >= 0 && static_cast<size_t>(process) < plan_.size()
             ? plan_[static_cast<size_t>(process)].host
             : "?";
}

std::string JobSession::describe_exit(const WorkerExited& exit) const {
  std::string who = (extension_->is_spare(exit.rank) ? "hot spare " : "rank ") +
                    std::to_string(exit.rank) + " on host " + host_of(exit.rank);
  if (exit.signal != 0) {
    return who + " was killed by signal " + std::to_string(exit.signal) + " (" +
           signal_name(exit.signal) + ")";
  }
  return who + " exited with code " + std::to_string(exit.exit_code);
}

bool JobSession::report_failure() {
  std::optional<WorkerExited> exit = exits_.take_failure();
  if (!exit) return false;
  end_job(exit->signal != 0 ? exit_code::kSignalBase + exit->signal : exit->exit_code,
          describe_exit(*exit));
  return true;
}

void JobSession::end_job(int code, const std::string& error) {
  if (!error.empty()) error_line(error);
  exits_.decide(code);
  stop_.begin(*agents_, job_id_, streams_.lost_agents(), queue_);
}

void JobSession::handle(const SignalReceived& sig) {
  // A failure that came first decides the exit code; the signal still ends the job.
  report_failure();
  if (++signals_ == 1) {
    std::fprintf(stderr, "hvdrun: received %s, terminating workers\n",
                 signal_name(sig.signal).c_str());
    std::fflush(stderr);
    end_job(exit_code::kSignalBase + sig.signal, "");
    return;
  }
  if (signals_ > 2) return;
  std::fprintf(stderr, "hvdrun: received %s again, killing workers\n",
               signal_name(sig.signal).c_str());
  std::fflush(stderr);
  stop_.kill(*agents_, job_id_);
}

void JobSession::check_start_timeout(Clock::time_point now) {
  const RoundView view = view_of(*rendezvous_);
  if (auto missing = first_round_.overdue(view, now, milliseconds(0)); !missing.empty()) {
    end_job(exit_code::kRendezvousTimeout, first_round_.timeout_error(missing));
    return;
  }
  if (auto line = first_round_.progress(view, now)) {
    std::fprintf(stderr, "hvdrun: %s\n", line->c_str());
    std::fflush(stderr);
  }
}

void JobSession::shutdown() {
  metrics_.reset();  // first: its thread reads the rendezvous
  if (policy_) extension_->stop();
  if (agents_ && launched_) stop_.terminate_now(*agents_, job_id_, streams_.lost_agents());
  stop_.join();
  if (agents_) agents_->shutdown(stop_.grace());
  if (rendezvous_) rendezvous_->close();
  if (rendezvous_server_) rendezvous_server_->shutdown(kServerShutdownGrace);
  agents_.reset();
  rendezvous_server_.reset();
  rendezvous_.reset();
  sink_.close();
}

int JobSession::start_metrics() {
  const auto port = options_.settings.get_int("metrics_port");
  if (port <= 0) return exit_code::kSuccess;
  const bool elastic = options_.elastic.enabled;
  monitor_ = std::make_unique<JobMonitor>(elastic, elastic ? options_.elastic.min_np : options_.np,
                                          elastic ? options_.elastic.max_np : options_.np);
  const std::string address = options_.settings.get("metrics_address");
  auto exporter =
      MetricsExporter::start(address, static_cast<int>(port), *monitor_, *rendezvous_);
  if (!exporter.is_ok()) {
    error_line("--metrics-port: " + exporter.status().message());
    return exit_code::kUsage;
  }
  metrics_ = std::move(exporter).value();
  spdlog::info("metrics at http://{}:{}/metrics, the job page at http://{}:{}/", address,
               metrics_->port(), address, metrics_->port());
  return exit_code::kSuccess;
}

void JobSession::refresh_monitor(Clock::time_point now) {
  if (now - monitor_refreshed_ < std::chrono::milliseconds(250)) return;
  monitor_refreshed_ = now;
  std::vector<JobMonitor::Placed> placed;
  for (int slot = 0; slot < policy_->slots(); ++slot) {
    const std::string host = extension_->host_of(slot);
    if (host.empty() && static_cast<size_t>(slot) >= plan_.size()) continue;  // never used
    placed.push_back({slot, host_of(slot), false});
  }
  for (int spare : rendezvous_->waiting_spares()) placed.push_back({spare, host_of(spare), true});
  std::vector<JobMonitor::Blacklisted> blacklisted;
  for (const auto& [host, left] : extension_->blacklisted(now)) {
    blacklisted.push_back({host, std::chrono::duration<double>(left).count()});
  }
  monitor_->refresh(placed, std::move(blacklisted), *rendezvous_, now);
}

}  // namespace hvd::launcher
