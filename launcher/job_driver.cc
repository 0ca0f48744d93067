#include "launcher/job_driver.h"

#include <signal.h>

#include <algorithm>

#include "common/logging.h"
#include "common/overloaded.h"
#include "daemon/grpc_server.h"
#include "daemon/rendezvous_service.h"
#include "launcher/elastic/discovery_poller.h"
#include "launcher/exit_codes.h"
#include "launcher/host_agents.h"
#include "launcher/signal_watcher.h"

namespace hvd::launcher {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

// How often the driver wakes without events (start-timeout checks).
constexpr milliseconds kTick{100};
// Deadline of Signal calls.
constexpr milliseconds kSignalTimeout{5'000};
// Terminate may take the grace period; the call gets this much on top.
constexpr milliseconds kTerminateSlack{10'000};
// An agent whose Watch stream failed may be gone: its Terminate gets this long.
constexpr milliseconds kLostAgentTimeout{2'000};
// After the last exit (or after Terminate), how long remaining output may take.
constexpr milliseconds kDrainTimeout{5'000};
// In-flight calls get this long when a server shuts down.
constexpr milliseconds kServerShutdownGrace{1'000};
// A worker that fails this close to the start timeout, while the rendezvous
// is still incomplete, failed because of it: its own Join timed out.
constexpr milliseconds kStartTimeoutSlack{1'000};
// When one worker dies, its peers fail a moment later with a transport error,
// usually with the generic exit code 1, and the agent may report them in the
// same batch as the first, in rank order. So failures are gathered this long
// after the first one; the one that decides the job is the first that is not
// a plain "exit code 1" (a signal or a specific code), else simply the first.
constexpr milliseconds kFailureSettle{300};
// While the first rendezvous waits for ranks, a progress line this often.
constexpr std::chrono::seconds kJoinProgressEvery{10};

}  // namespace

JobDriver::JobDriver(const LaunchOptions& options, std::vector<RankSlot> plan,
                     std::vector<AgentTarget> targets, std::optional<RemoteCredentials> remote)
    : options_(options),
      plan_(std::move(plan)),
      targets_(std::move(targets)),
      remote_(std::move(remote)),
      start_timeout_(options.settings.get_int("start_timeout")),
      terminate_grace_(options.settings.get_int("terminate_grace")),
      heartbeat_timeout_(options.settings.get_int("heartbeat_timeout_seconds")),
      sink_(stdout, stderr),
      hints_(options.horovod_compat),
      exited_(std::max<size_t>(plan_.size(), static_cast<size_t>(options.elastic.max_np)), true),
      joined_once_(plan_.size(), false) {
  sink_.set_timestamps(options.prefix_timestamp);
  // Elastic jobs have slots up to --max-np; only the first -np start now.
  std::fill(exited_.begin(), exited_.begin() + static_cast<std::ptrdiff_t>(plan_.size()), false);
}

JobDriver::~JobDriver() { shutdown(); }

int JobDriver::run() {
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

void JobDriver::error_line(const std::string& message) {
  std::fprintf(stderr, "hvdrun: error: %s\n", message.c_str());
  std::fflush(stderr);
}

int JobDriver::supervise() {
  const int np = static_cast<int>(plan_.size());
  std::optional<Clock::time_point> drain_deadline;
  while (true) {
    const auto now = Clock::now();
    if (settle_deadline_ && (now >= *settle_deadline_ || exited_count_ == np)) report_failure();
    if (!terminating_) track_joins();
    if (!terminating_ && !settle_deadline_) check_start_timeout(now);
    if (!terminating_ && !settle_deadline_) {
      if (machine_) {
        elastic_tick(now);
      } else {
        check_liveness(now);
      }
    }
    if (!terminating_ && !settle_deadline_ && !machine_ && exited_count_ == np) {
      // Every worker exited with 0; the streams end after their last output.
      finish(exit_code::kSuccess);
      if (all_watches_ended()) break;
      if (!drain_deadline) drain_deadline = now + kDrainTimeout;
    }
    if (terminating_ && terminate_done_) {
      if (all_watches_ended()) break;
      if (!drain_deadline) drain_deadline = now + kDrainTimeout;
    }
    if (drain_deadline && now >= *drain_deadline) {
      spdlog::warn("an agent's event stream did not end within {} ms; not waiting for more output",
                   kDrainTimeout.count());
      break;
    }

    auto wake = now + kTick;
    if (settle_deadline_ && *settle_deadline_ < wake) wake = *settle_deadline_;
    std::optional<JobEvent> event = queue_.pop_until(wake);
    if (!event) continue;
    std::visit(common::Overloaded{
                   [&](const WorkerOutput& out) {
                     sink_.write(output_rank(out.rank), out.is_stderr, out.text);
                     if (auto hint = hints_.on_line(out.text)) {
                       std::fprintf(stderr, "hvdrun: hint: %s\n", hint->c_str());
                       std::fflush(stderr);
                     }
                   },
                   [&](const WorkerExited& exit) { handle(exit); },
                   [&](const WatchEnded& end) { handle(end); },
                   [&](const SignalReceived& sig) { handle(sig); },
                   [&](const HostsDiscovered& found) { handle(found); },
                   [&](const TerminateDone& done) {
                     terminate_done_ = true;
                     if (!done.status.is_ok()) {
                       spdlog::warn("terminating the workers: {}", done.status.to_string());
                     }
                   },
               },
               *event);
  }
  return exit_code_.value_or(exit_code::kInternalError);
}

void JobDriver::handle(const WorkerExited& exit) {
  if (machine_ && machine_->is_spare_process(exit.rank)) {
    spare_exit(exit);
    return;
  }
  if (exit.rank < 0 || exit.rank >= static_cast<int>(exited_.size()) || exited_[exit.rank]) {
    spdlog::warn("exit event for unknown rank {} (pid {})", exit.rank, exit.pid);
    return;
  }
  exited_[exit.rank] = true;
  ++exited_count_;
  spdlog::debug("rank {} (pid {}) exited: code {} signal {}", exit.rank, exit.pid, exit.exit_code,
                exit.signal);
  // Once hvdrun is terminating the job, exits are expected: not failures.
  if (terminating_) return;
  if (machine_) {
    elastic_exit(exit);
    return;
  }
  if (exit.exit_code == 0 && exit.signal == 0) return;

  // A worker whose own rendezvous Join timed out: report the start timeout.
  if (!settle_deadline_) {
    if (auto missing = overdue_ranks(Clock::now(), kStartTimeoutSlack); !missing.empty()) {
      report_start_timeout(missing);
      return;
    }
    settle_deadline_ = Clock::now() + kFailureSettle;
  }
  pending_failures_.push_back(exit);
}

std::vector<int> JobDriver::running_on(size_t agent) const {
  std::vector<int> running;
  if (!machine_) {
    for (int rank : agents_->target(agent).ranks) {
      if (!exited_[static_cast<size_t>(rank)]) running.push_back(rank);
    }
    return running;
  }
  for (int slot : machine_->live_slots()) {
    auto it = host_agent_.find(machine_->host_of(slot));
    if (it != host_agent_.end() && it->second == agent && !exited_[static_cast<size_t>(slot)]) {
      running.push_back(slot);
    }
  }
  for (int spare : machine_->live_spares()) {
    auto it = host_agent_.find(machine_->host_of(spare));
    if (it != host_agent_.end() && it->second == agent) running.push_back(spare);
  }
  return running;
}

void JobDriver::handle(const WatchEnded& end) {
  // Streams are numbered; an agent's stream is replaced when it gets a new job.
  const auto stream = static_cast<size_t>(end.agent);
  if (stream >= stream_agent_.size()) return;
  const size_t agent = stream_agent_[stream];
  if (agent_stream_[agent] != stream) return;  // an earlier stream of that agent
  watch_ended_[agent] = true;
  const AgentTarget& target = agents_->target(agent);
  std::vector<int> running = running_on(agent);
  if (running.empty()) {
    if (!end.status.is_ok() && !terminating_) spdlog::warn("{}", end.status.to_string());
    return;
  }
  agent_lost_[agent] = true;
  if (machine_ && !terminating_) {
    elastic_agent_lost(agent, end.status);
    return;
  }
  // A failure seen first decides the job; the lost agent still ends it.
  if (settle_deadline_) report_failure();
  if (terminating_) {
    spdlog::info("the event stream of the agent on host {} ended: {}", target.host,
                 end.status.to_string());
    return;
  }
  error_line("lost the agent on host " + target.host + " (" + describe_ranks(running) + "): " +
             (end.status.is_ok() ? std::string("its event stream ended before the workers exited")
                                 : end.status.message()));
  finish(exit_code::kAgentFailure);
  begin_terminate();
}

bool JobDriver::all_watches_ended() const {
  return std::all_of(watch_ended_.begin(), watch_ended_.end(), [](bool ended) { return ended; });
}

std::string JobDriver::describe_exit(const WorkerExited& exit) const {
  const bool spare = machine_ && machine_->is_spare_process(exit.rank);
  std::string who = (spare ? "hot spare " : "rank ") + std::to_string(exit.rank) + " on host " +
                    host_of(exit.rank);
  if (exit.signal != 0) {
    return who + " was killed by signal " + std::to_string(exit.signal) + " (" +
           signal_name(exit.signal) + ")";
  }
  return who + " exited with code " + std::to_string(exit.exit_code);
}

void JobDriver::report_failure() {
  settle_deadline_.reset();
  if (pending_failures_.empty()) return;
  auto generic = [](const WorkerExited& e) { return e.signal == 0 && e.exit_code == 1; };
  auto chosen = std::find_if(pending_failures_.begin(), pending_failures_.end(),
                             [&](const WorkerExited& e) { return !generic(e); });
  const WorkerExited exit = chosen != pending_failures_.end() ? *chosen : pending_failures_.front();
  pending_failures_.clear();

  error_line(describe_exit(exit));
  finish(exit.signal != 0 ? exit_code::kSignalBase + exit.signal : exit.exit_code);
  begin_terminate();
}

void JobDriver::handle(const SignalReceived& sig) {
  // A failure that came first decides the exit code; the signal still ends the job.
  if (settle_deadline_) report_failure();
  if (!signalled_) {
    signalled_ = true;
    std::fprintf(stderr, "hvdrun: received %s, terminating workers\n",
                 signal_name(sig.signal).c_str());
    std::fflush(stderr);
    finish(exit_code::kSignalBase + sig.signal);
    begin_terminate();
    return;
  }
  if (killed_) return;
  killed_ = true;
  std::fprintf(stderr, "hvdrun: received %s again, killing workers\n",
               signal_name(sig.signal).c_str());
  std::fflush(stderr);
  killer_ = std::thread([this] {
    common::Status s = agents_->signal_all(job_id_, SIGKILL, kSignalTimeout);
    if (!s.is_ok()) spdlog::warn("killing the workers: {}", s.to_string());
  });
}

void JobDriver::track_joins() {
  const daemon::Membership& membership = rendezvous_->membership();
  if (membership.epoch() != 0 || !membership.first_join_time()) return;
  std::vector<bool> joined(joined_once_.size(), true);
  for (int rank : membership.missing_ranks()) joined[static_cast<size_t>(rank)] = false;
  for (size_t r = 0; r < joined.size(); ++r) joined_once_[r] = joined_once_[r] || joined[r];
}

std::vector<int> JobDriver::overdue_ranks(Clock::time_point now, milliseconds slack) {
  const daemon::Membership& membership = rendezvous_->membership();
  // Only the first rendezvous is timed here; later epochs are the runtime's.
  if (membership.epoch() != 0 || membership.complete()) return {};
  auto first = membership.first_join_time();
  if (!first || now - *first < start_timeout_ - slack) return {};
  // A rank whose own Join timed out has been withdrawn from the membership:
  // it did call init, so it is not named.
  track_joins();
  std::vector<int> missing;
  for (int rank : membership.missing_ranks()) {
    if (!joined_once_[static_cast<size_t>(rank)]) missing.push_back(rank);
  }
  return missing;
}

void JobDriver::check_start_timeout(Clock::time_point now) {
  if (auto missing = overdue_ranks(now, milliseconds(0)); !missing.empty()) {
    report_start_timeout(missing);
    return;
  }
  report_join_progress(now);
}

void JobDriver::report_join_progress(Clock::time_point now) {
  const daemon::Membership& membership = rendezvous_->membership();
  auto first = membership.first_join_time();
  if (membership.epoch() != 0 || membership.complete() || !first) return;
  if (!next_join_progress_) next_join_progress_ = *first + kJoinProgressEvery;
  if (now < *next_join_progress_) return;
  next_join_progress_ = now + kJoinProgressEvery;
  const std::vector<int> missing = membership.missing_ranks();
  std::vector<std::string> hosts;
  for (int rank : missing) {
    const std::string& host = plan_[static_cast<size_t>(rank)].host;
    if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
  }
  std::string on;
  for (const std::string& host : hosts) on += (on.empty() ? "" : ", ") + host;
  const int np = static_cast<int>(plan_.size());
  const auto waited = std::chrono::duration_cast<std::chrono::seconds>(now - *first).count();
  std::fprintf(stderr,
               "hvdrun: rendezvous: %d of %d ranks joined, waiting for %s on host%s %s (%lld of "
               "%lld s)\n",
               np - static_cast<int>(missing.size()), np, describe_ranks(missing).c_str(),
               hosts.size() == 1 ? "" : "s", on.c_str(), static_cast<long long>(waited),
               static_cast<long long>(start_timeout_.count()));
  std::fflush(stderr);
}

void JobDriver::report_start_timeout(const std::vector<int>& missing) {
  error_line("rendezvous timed out after " + std::to_string(start_timeout_.count()) +
             " s: " + describe_ranks(missing) +
             " never joined (a worker must call hvd.init())");
  finish(exit_code::kRendezvousTimeout);
  begin_terminate();
}

void JobDriver::check_liveness(Clock::time_point now) {
  if (heartbeat_timeout_.count() == 0 || !rendezvous_) return;
  std::vector<int> silent;
  for (int rank : rendezvous_->liveness().silent(heartbeat_timeout_, now)) {
    // An exited worker stops beating too; its exit event tells the story.
    if (!exited_[static_cast<size_t>(rank)]) silent.push_back(rank);
  }
  if (silent.empty()) return;
  std::string who;
  for (int rank : silent) {
    who += (who.empty() ? "" : ", ") + std::string("rank ") + std::to_string(rank) + " on host " +
           plan_[static_cast<size_t>(rank)].host;
  }
  error_line(who +
             " stopped responding: no heartbeat for " + std::to_string(heartbeat_timeout_.count()) +
             " s (the process is stopped or its host hangs or is unreachable; "
             "HVD_HEARTBEAT_TIMEOUT_SECONDS); terminating the job");
  finish(exit_code::kWorkerUnresponsive);
  begin_terminate();
}

void JobDriver::finish(int code) {
  if (!exit_code_) exit_code_ = code;
}

void JobDriver::begin_terminate() {
  if (terminating_) return;
  terminating_ = true;
  const milliseconds grace = terminate_grace_;
  terminator_ = std::thread([this, grace, lost = agent_lost_] {
    auto killed = agents_->terminate_all(job_id_, grace, grace + kTerminateSlack, lost,
                                         kLostAgentTimeout);
    if (killed.is_ok() && *killed > 0) {
      spdlog::info("{} worker process groups needed SIGKILL", *killed);
    }
    queue_.push(TerminateDone{killed.status()});
  });
}

void JobDriver::shutdown() {
  const milliseconds grace = terminate_grace_;
  if (poller_) poller_->stop();
  if (agents_ && launched_ && !terminating_) {
    // Nothing should be left on this path; Terminate makes sure of it (and
    // takes any grandchild still in a worker's process group with it).
    terminating_ = true;
    auto killed = agents_->terminate_all(job_id_, grace, grace + kTerminateSlack, agent_lost_,
                                         kLostAgentTimeout);
    if (!killed.is_ok()) spdlog::debug("final terminate: {}", killed.status().to_string());
  }
  if (terminator_.joinable()) terminator_.join();
  if (killer_.joinable()) killer_.join();
  if (agents_) agents_->shutdown(grace);
  if (rendezvous_) rendezvous_->close();
  if (rendezvous_server_) rendezvous_server_->shutdown(kServerShutdownGrace);
  agents_.reset();
  rendezvous_server_.reset();
  rendezvous_.reset();
  sink_.close();
}

}  // namespace hvd::launcher
