#include "launcher/elastic/elastic_policy.h"

#include <signal.h>

#include <algorithm>
#include <map>
#include <cstdio>

#include "common/logging.h"
#include "common/overloaded.h"
#include "common/worker_env_names.h"
#include "daemon/rendezvous/rendezvous_service.h"
#include "launcher/elastic/discovery_poller.h"
#include "launcher/exit_codes.h"
#include "launcher/host_agents.h"
#include "launcher/job_session.h"

namespace hvd::launcher::elastic {

namespace {

// Deadline of the Signal that stops a worker.
constexpr std::chrono::milliseconds kSignalTimeout{5'000};

bool failed(const WorkerExited& exit) { return exit.signal != 0 || exit.exit_code != 0; }

// hvdrun's exit code for a process that ended so.
int code_of(const WorkerExited& exit) {
  return exit.signal != 0 ? exit_code::kSignalBase + exit.signal : exit.exit_code;
}

}  // namespace

ElasticPolicy::ElasticPolicy(JobSession& session)
    : session_(session),
      heartbeat_timeout_(session.options().settings.get_int("heartbeat_timeout_seconds")),
      liveness_(liveness_limits(session.options().settings)),
      hosts_(session) {
  session.extend(*this);
}

ElasticPolicy::~ElasticPolicy() = default;

int ElasticPolicy::slots() const {
  return std::max(static_cast<int>(session_.plan().size()), session_.options().elastic.max_np);
}

void ElasticPolicy::configure(daemon::RendezvousService& rendezvous) {
  rendezvous.enable_elastic(session_.options().elastic.min_np, session_.options().elastic.max_np);
}

void ElasticPolicy::add_env(Environment& env) const { env[common::env::kElastic] = "1"; }

void ElasticPolicy::launched(const std::vector<std::string>& bind_addresses) {
  const LaunchOptions& options = session_.options();
  const ElasticOptions& e = options.elastic;
  Limits limits{e.min_np, e.max_np, e.reset_limit,
                std::chrono::seconds(options.settings.get_int("elastic_timeout")),
                static_cast<int>(options.settings.get_int("spares"))};
  limits.stopped_timeout = heartbeat_timeout_;
  limits.start_timeout = std::chrono::seconds(options.settings.get_int("start_timeout"));
  // Validated with the options (a usage error at start): never fails here.
  on_state_loss_ = on_state_loss(options.settings).value();
  HostTable hosts(options.hosts, {std::chrono::seconds(e.cooldown_low),
                                  std::chrono::seconds(e.cooldown_high)});
  std::vector<std::string> initial;
  for (const RankSlot& slot : session_.plan()) initial.push_back(slot.host);
  machine_ = std::make_unique<ElasticMachine>(limits, std::move(hosts), initial, Clock::now());
  hosts_.launched(bind_addresses);
  if (!e.discovery_script.empty()) {
    const auto interval = std::chrono::milliseconds(
        static_cast<int64_t>(options.settings.get_double("discovery_interval") * 1000));
    poller_ = std::make_unique<DiscoveryPoller>(
        e.discovery_script, e.slots_per_host, interval,
        std::chrono::seconds(options.settings.get_int("discovery_timeout")), session_.queue());
  }
}

void ElasticPolicy::stop() {
  if (poller_) poller_->stop();
  stops_.wait_all();
}

std::string ElasticPolicy::host_of(int process) const {
  return machine_ ? machine_->host_of(process) : std::string();
}

bool ElasticPolicy::is_spare(int process) const {
  return machine_ && machine_->is_spare_process(process);
}

int ElasticPolicy::output_rank(int process) const {
  if (!is_spare(process)) return process;
  const int slot = machine_->slot_of_process(process);
  return slot >= 0 ? slot : process;
}

void ElasticPolicy::worker_exited(const WorkerExited& exit) {
  liveness_.forget(exit.rank);
  liveness_.forget(machine_->process_of(exit.rank));
  carry_out(machine_->worker_exited(exit.rank, failed(exit), code_of(exit),
                                    session_.describe_exit(exit), Clock::now()));
}

void ElasticPolicy::worker_state(const WorkerStateChanged& change) {
  spdlog::debug("process {} (pid {}) is {}", change.rank, change.pid,
                change.stopped ? "stopped" : "running again");
  liveness_.process_state(change.rank, change.stopped, Clock::now());
  if (machine_) machine_->process_state(change.rank, change.stopped, Clock::now());
}

bool ElasticPolicy::take_spare_exit(WorkerExited& exit) {
  liveness_.forget(exit.rank);
  if (!is_spare(exit.rank)) return false;
  // A promoted spare is the worker of its slot now.
  if (const int slot = machine_->slot_of_process(exit.rank); slot >= 0) {
    exit.rank = slot;
    return false;
  }
  spdlog::debug("hot spare {} (pid {}) exited: code {} signal {}", exit.rank, exit.pid,
                exit.exit_code, exit.signal);
  if (session_.terminating()) return true;
  carry_out(machine_->spare_exited(exit.rank, failed(exit), code_of(exit),
                                   session_.describe_exit(exit), Clock::now()));
  return true;
}

bool ElasticPolicy::holds_slot(int process) const {
  return machine_->slot_of_process(process) >= 0;
}

std::vector<int> ElasticPolicy::running_on(size_t agent) const {
  std::vector<int> running;
  for (int slot : machine_->live_slots()) {
    if (hosts_.agent_of(machine_->host_of(slot)) == agent && !session_.exits().has_exited(slot)) {
      running.push_back(slot);
    }
  }
  for (int spare : machine_->live_spares()) {
    if (hosts_.agent_of(machine_->host_of(spare)) == agent) running.push_back(spare);
  }
  return running;
}

void ElasticPolicy::agent_lost(size_t agent, const std::vector<int>& /*running*/,
                               const common::Status& why) {
  std::vector<std::string> hosts = hosts_.hosts_of(agent);
  if (hosts.empty()) hosts.push_back(session_.agents().target(agent).host);
  for (int slot : machine_->live_slots()) {
    if (std::find(hosts.begin(), hosts.end(), machine_->host_of(slot)) != hosts.end()) {
      session_.exits().set_gone(slot);  // gone with the agent: no exit event comes
    }
  }
  carry_out(machine_->agent_lost(hosts, why_stream_ended(why), Clock::now()));
}

void ElasticPolicy::hosts_discovered(const HostsDiscovered& found) {
  if (!machine_) return;
  if (!found.status.is_ok()) {
    // The last good list stays in force; each new complaint is printed once.
    if (found.status.message() != last_discovery_error_) {
      last_discovery_error_ = found.status.message();
      std::fprintf(stderr, "hvdrun: warning: %s (keeping the last host list)\n",
                   last_discovery_error_.c_str());
      std::fflush(stderr);
    }
    return;
  }
  last_discovery_error_.clear();
  carry_out(machine_->hosts_discovered(found.hosts, Clock::now()));
}

void ElasticPolicy::tick(Clock::time_point now) {
  daemon::RendezvousService& rendezvous = session_.rendezvous();
  // Workers seen in a round: their Join returned (the rendezvous watches them).
  bool joined = false;
  for (int slot : machine_->live_slots()) {
    if (machine_->starting(slot) && rendezvous.liveness().quiet_for(slot, now)) {
      machine_->worker_joined(slot);
      joined = true;
    } else if (machine_->starting(slot) && rendezvous.liveness().has_arrived(slot)) {
      machine_->worker_arrived(slot);  // its Join came: it is in hvd.init()
    }
  }
  if (joined) carry_out(machine_->round_formed(0, 0));
  for (int spare : rendezvous.waiting_spares()) machine_->spare_ready(spare);
  if (heartbeat_timeout_.count() > 0) late_workers(now);
  if (auto forming = rendezvous.forming()) {
    carry_out(machine_->round_waiting(forming->round, forming->since, forming->joined,
                                      forming->missing, now));
  }
  // A round restarted below the job's last commit: every holder died.
  for (const daemon::CommitLedger::Loss& loss : rendezvous.commits().take_losses()) {
    if (on_state_loss_ == OnStateLoss::kFail) {
      session_.end_job(exit_code::kStateLost, describe_loss(loss, on_state_loss_));
      return;
    }
    std::fprintf(stderr, "hvdrun: warning: %s\n", describe_loss(loss, on_state_loss_).c_str());
    std::fflush(stderr);
  }
  carry_out(machine_->tick(now));
}

void ElasticPolicy::late_workers(Clock::time_point now) {
  const daemon::Liveness& heartbeats = session_.rendezvous().liveness();
  // The rule knows processes (the agent's view); heartbeats know slots.
  std::map<int, int> slot_of;
  std::vector<LivenessRule::Late> late;
  for (int slot : heartbeats.silent(heartbeat_timeout_, now)) {
    const auto quiet = heartbeats.quiet_for(slot, now);
    const int process = machine_->process_of(slot);
    if (!quiet || process < 0) continue;
    slot_of[process] = slot;
    late.push_back({process, *quiet});
  }
  std::vector<std::pair<std::string, LivenessRule::Finding>> warnings;
  for (LivenessRule::Finding& f : liveness_.review(late, now, machine_->live_slots().size())) {
    const int slot = slot_of[f.process];
    if (f.dead) {
      carry_out(machine_->worker_silent(slot, f.text, now));
      liveness_.forget(f.process);
    } else {
      warnings.emplace_back("rank " + std::to_string(slot) + " on host " + machine_->host_of(slot),
                            std::move(f));
    }
  }
  for (const std::string& line : LivenessRule::warning_lines(warnings)) {
    std::fprintf(stderr, "hvdrun: warning: %s\n", line.c_str());
  }
  std::fflush(stderr);
}

common::Status ElasticPolicy::start_worker(const StartWorker& start) {
  RankSlot slot{.rank = start.slot, .host = start.host};
  Environment env = session_.worker_env(slot, "");
  if (start.replacement) env[common::env::kReplacement] = "1";
  return hosts_.launch(start.slot, start.host, std::move(env));
}

common::Status ElasticPolicy::start_spare(const StartSpare& start) {
  // No slot until it is promoted: HVD_SPARE instead of HVD_RANK.
  RankSlot slot{.rank = start.spare, .host = start.host};
  Environment env = session_.worker_env(slot, "");
  env.erase(common::env::kRank);
  env.erase("HOROVOD_RANK");
  env[common::env::kSpare] = std::to_string(start.spare);
  return hosts_.launch(start.spare, start.host, std::move(env));
}

void ElasticPolicy::stop_worker(const StopWorker& stop) {
  stop_process(machine_->process_of(stop.slot), machine_->host_of(stop.slot));
}

void ElasticPolicy::stop_process(int process, const std::string& host) {
  const std::optional<size_t> agent = hosts_.agent_of(host);
  if (!agent) return;
  HostAgents& agents = session_.agents();
  // Off the driver thread: an agent cut off from hvdrun answers no Signal
  // until its deadline, and the job goes on meanwhile (the slot is lost
  // already; the agent ends the worker itself when its Watch breaks).
  stops_.run([client = agents.shared_client(*agent), ids = agents.jobs(*agent, session_.job_id()),
              process] {
    for (const std::string& id : ids) {
      common::Status s = client->signal(id, SIGKILL, kSignalTimeout, {process});
      if (!s.is_ok() && s.code() != common::StatusCode::kNotFound) {
        spdlog::warn("stopping process {}: {}", process, s.to_string());
      }
    }
  });
}

void ElasticPolicy::carry_out(Actions actions) {
  for (size_t i = 0; i < actions.size(); ++i) {
    const Action action = actions[i];  // the loop may append to `actions`
    std::visit(
        common::Overloaded{
            [&](const StartWorker& start) {
              common::Status s = start_worker(start);
              if (s.is_ok()) {
                session_.exits().set_running(start.slot);
                return;
              }
              auto more = machine_->start_failed(start.slot, s.message(), Clock::now());
              actions.insert(actions.end(), more.begin(), more.end());
            },
            [&](const StartSpare& start) {
              common::Status s = start_spare(start);
              if (s.is_ok()) return;
              auto more = machine_->start_failed(start.spare, s.message(), Clock::now());
              actions.insert(actions.end(), more.begin(), more.end());
            },
            [&](const PromoteSpare& promote) {
              // Before the slot's predecessor is lost: the survivors' next
              // round waits for the spare when it waits in hvd.init().
              session_.exits().set_running(promote.slot);
              session_.rendezvous().promote_spare(promote.spare, promote.slot);
            },
            [&](const StopWorker& stop) { stop_worker(stop); },
            [&](const StopSpare& stop) { stop_process(stop.spare, machine_->host_of(stop.spare)); },
            [&](const SlotLost& lost) {
              // A REMOVED event naming the slot: the survivors of its round
              // fail their pending collectives at once, whatever transport
              // they are in (a GPU transport may not notice a dead peer
              // before its timeout), and rejoin without it; liveness stops
              // watching the slot until its replacement joins.
              session_.rendezvous().hosts_changed({}, {}, {lost.slot});
            },
            [&](const HostsChanged& change) {
              session_.rendezvous().hosts_changed(change.added, change.removed,
                                                  change.removed_slots);
            },
            [&](const Say& say) {
              std::fprintf(stderr, "hvdrun: %s\n", say.text.c_str());
              std::fflush(stderr);
            },
            [&](const EndJob& end) { session_.end_job(end.code, end.error); },
        },
        action);
  }
}

std::vector<std::pair<std::string, JobPolicy::Clock::duration>> ElasticPolicy::blacklisted(
    Clock::time_point now) const {
  std::vector<std::pair<std::string, Clock::duration>> out;
  if (!machine_) return out;
  const HostTable& hosts = machine_->host_table();
  for (const std::string& host : hosts.known()) {
    if (auto until = hosts.blacklisted_until(host, now)) out.emplace_back(host, *until - now);
  }
  return out;
}

}  // namespace hvd::launcher::elastic
