// JobDriver in elastic jobs (docs/elastic.md): the events of the job feed
// the elastic state machine (launcher/elastic/elastic_machine.h) and its
// actions are carried out here — workers started through their host's
// agent (Launch with append into the running job; a new agent or one whose
// job ended gets a job of its own), stopped with SIGKILL, the rendezvous
// told which slots are gone, lines printed, the job ended.
#include <signal.h>

#include <algorithm>

#include "common/logging.h"
#include "common/overloaded.h"
#include "common/worker_env.h"
#include "daemon/rendezvous_service.h"
#include "launcher/elastic/discovery_poller.h"
#include "launcher/elastic/elastic_machine.h"
#include "launcher/exit_codes.h"
#include "launcher/host_agents.h"
#include "launcher/job_driver.h"
#include "launcher/job_network.h"

namespace hvd::launcher {

namespace {

using Clock = std::chrono::steady_clock;

// Starting a worker may take a while on a loaded host.
constexpr std::chrono::milliseconds kStartTimeout{60'000};
// Deadline of the Signal that stops a worker.
constexpr std::chrono::milliseconds kSignalTimeout{5'000};
// How long a host's agent may take to answer Info before a worker starts there.
constexpr std::chrono::milliseconds kAgentInfoTimeout{10'000};

}  // namespace

void JobDriver::start_elastic() {
  const ElasticOptions& e = options_.elastic;
  elastic::Limits limits{e.min_np, e.max_np, e.reset_limit,
                         std::chrono::seconds(options_.settings.get_int("elastic_timeout")),
                         static_cast<int>(options_.settings.get_int("spares"))};
  elastic::HostTable hosts(options_.hosts, {std::chrono::seconds(e.cooldown_low),
                                            std::chrono::seconds(e.cooldown_high)});
  std::vector<std::string> initial;
  for (const RankSlot& slot : plan_) initial.push_back(slot.host);
  machine_ = std::make_unique<elastic::ElasticMachine>(limits, std::move(hosts), initial,
                                                       Clock::now());
  for (size_t a = 0; a < agents_->size(); ++a) {
    for (int rank : agents_->target(a).ranks) host_agent_[plan_[static_cast<size_t>(rank)].host] = a;
  }
  if (!e.discovery_script.empty()) {
    const auto interval = std::chrono::milliseconds(
        static_cast<int64_t>(options_.settings.get_double("discovery_interval") * 1000));
    poller_ = std::make_unique<elastic::DiscoveryPoller>(
        e.discovery_script, e.slots_per_host, interval,
        std::chrono::seconds(options_.settings.get_int("discovery_timeout")), queue_);
  }
}

std::string JobDriver::host_of(int rank) const {
  if (machine_) {
    std::string host = machine_->host_of(rank);
    if (!host.empty()) return host;
  }
  return rank >= 0 && static_cast<size_t>(rank) < plan_.size()
             ? plan_[static_cast<size_t>(rank)].host
             : "?";
}

void JobDriver::elastic_exit(const WorkerExited& exit) {
  const bool failed = exit.signal != 0 || exit.exit_code != 0;
  const int code = exit.signal != 0 ? exit_code::kSignalBase + exit.signal : exit.exit_code;
  carry_out(machine_->worker_exited(exit.rank, failed, code, describe_exit(exit), Clock::now()));
}

void JobDriver::spare_exit(const WorkerExited& exit) {
  // A promoted spare is the worker of its slot now.
  if (const int slot = machine_->slot_of_process(exit.rank); slot >= 0) {
    WorkerExited worker = exit;
    worker.rank = slot;
    handle(worker);
    return;
  }
  spdlog::debug("hot spare {} (pid {}) exited: code {} signal {}", exit.rank, exit.pid,
                exit.exit_code, exit.signal);
  if (terminating_) return;
  const bool failed = exit.signal != 0 || exit.exit_code != 0;
  const int code = exit.signal != 0 ? exit_code::kSignalBase + exit.signal : exit.exit_code;
  carry_out(machine_->spare_exited(exit.rank, failed, code, describe_exit(exit), Clock::now()));
}

int JobDriver::output_rank(int process) const {
  if (!machine_ || !machine_->is_spare_process(process)) return process;
  const int slot = machine_->slot_of_process(process);
  return slot >= 0 ? slot : process;
}

void JobDriver::elastic_agent_lost(size_t agent, const common::Status& why) {
  std::vector<std::string> hosts;
  for (const auto& [host, a] : host_agent_) {
    if (a == agent) hosts.push_back(host);
  }
  if (hosts.empty()) hosts.push_back(agents_->target(agent).host);
  const std::string reason =
      why.is_ok() ? "its event stream ended before the workers exited" : why.message();
  for (int rank : machine_->live_slots()) {
    if (std::find(hosts.begin(), hosts.end(), machine_->host_of(rank)) != hosts.end()) {
      exited_[static_cast<size_t>(rank)] = true;  // gone with the agent: no exit event comes
    }
  }
  carry_out(machine_->agent_lost(hosts, reason, Clock::now()));
}

void JobDriver::handle(const HostsDiscovered& found) {
  if (!machine_ || terminating_) return;
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

void JobDriver::elastic_tick(Clock::time_point now) {
  // Workers seen in a round: their Join returned (the rendezvous watches them).
  bool joined = false;
  for (int slot : machine_->live_slots()) {
    if (machine_->starting(slot) && rendezvous_->liveness().quiet_for(slot, now)) {
      machine_->worker_joined(slot);
      joined = true;
    }
  }
  if (joined) carry_out(machine_->round_formed(0, 0));
  for (int spare : rendezvous_->waiting_spares()) machine_->spare_ready(spare);
  if (heartbeat_timeout_.count() > 0) {
    for (int slot : rendezvous_->liveness().silent(heartbeat_timeout_, now)) {
      carry_out(machine_->worker_silent(slot, heartbeat_timeout_, now));
    }
  }
  carry_out(machine_->tick(now));
}

common::Result<size_t> JobDriver::agent_for(const std::string& host) {
  if (auto it = host_agent_.find(host); it != host_agent_.end()) return it->second;
  if (is_local_host(host, LocalIdentity::current())) {
    for (size_t a = 0; a < agents_->size(); ++a) {
      if (agents_->target(a).local) return host_agent_[host] = a;
    }
    return common::failed_precondition(
        "host " + host + " is this machine, but the job started without a local host (its "
        "agent runs only when a first host is local)");
  }
  AgentTarget target{host, false, host_port(host, options_.agent_port), {}};
  auto added = agents_->add_remote(target);
  if (!added.is_ok()) return added.status();
  const size_t agent = *added;
  host_agent_[host] = agent;
  agent_bind_.resize(agents_->size());
  watch_ended_.resize(agents_->size(), true);  // no Watch yet
  agent_lost_.resize(agents_->size(), false);
  agent_launched_.resize(agents_->size(), false);
  agent_stream_.resize(agents_->size(), SIZE_MAX);
  return agent;
}

common::Status JobDriver::start_worker(const elastic::StartWorker& start) {
  RankSlot slot{start.slot, start.host, 0, 1, 0, 1};
  Environment env = worker_env(slot, "");
  if (start.replacement) env[common::env::kReplacement] = "1";
  return start_process(start.slot, start.host, std::move(env));
}

common::Status JobDriver::start_spare(const elastic::StartSpare& start) {
  // No slot until it is promoted: HVD_SPARE instead of HVD_RANK.
  RankSlot slot{start.spare, start.host, 0, 1, 0, 1};
  Environment env = worker_env(slot, "");
  env.erase(common::env::kRank);
  env.erase("HOROVOD_RANK");
  env[common::env::kSpare] = std::to_string(start.spare);
  return start_process(start.spare, start.host, std::move(env));
}

common::Status JobDriver::start_process(int process, const std::string& host, Environment env) {
  auto agent_or = agent_for(host);
  if (!agent_or.is_ok()) return agent_or.status();
  const size_t agent = *agent_or;
  // A lost agent may be back (restarted): a fresh channel reaches it at once
  // instead of after the old one's reconnect backoff.
  if (agent_lost_[agent]) agents_->renew(agent);
  if (agent_bind_[agent].empty()) {  // a new agent: where its workers bind
    // An agent that is not up fails the start now (its host is blacklisted
    // for a cooldown and tried again), without holding up the job.
    auto info = agents_->client(agent).info(kAgentInfoTimeout, /*wait_for_ready=*/false);
    if (!info.is_ok()) return info.status();
    auto network = plan_job_network({agents_->target(agent)}, {*info},
                                    options_.network_interfaces, options_.agent_port);
    if (!network.is_ok()) return network.status();
    agent_bind_[agent] = network->bind_addresses.at(0);
  }
  env[common::env::kBindAddress] = agent_bind_[agent];

  hvd::v1::LaunchRequest request;
  auto* worker = request.add_workers();
  worker->set_rank(process);
  for (const auto& arg : options_.command) worker->add_argv(arg);
  worker->mutable_env()->insert(env.begin(), env.end());
  worker->set_cwd(cwd_);
  // Into the agent's running job; an agent that was restarted, or whose
  // workers all exited, gets a new job (the old one's stream has ended).
  const std::vector<std::string> ids = agents_->jobs(agent, job_id_);
  request.set_job_id(ids.back());
  common::Status started = common::Status::ok();
  if (agent_launched_[agent] && !watch_ended_[agent]) {
    request.set_append(true);
    started = agents_->client(agent).launch(request, kStartTimeout);
    if (started.is_ok()) return started;
    if (started.code() != common::StatusCode::kNotFound &&
        started.code() != common::StatusCode::kFailedPrecondition) {
      return started;
    }
  }
  request.set_append(false);
  if (agent_launched_[agent]) {
    const std::string id = job_id_ + "." + std::to_string(ids.size());
    agents_->add_job(agent, id);
    request.set_job_id(id);
  }
  started = agents_->client(agent).launch(request, kStartTimeout);
  if (!started.is_ok() && started.code() == common::StatusCode::kAlreadyExists) {
    const std::string id = job_id_ + "." + std::to_string(agents_->jobs(agent, job_id_).size());
    agents_->add_job(agent, id);
    request.set_job_id(id);
    started = agents_->client(agent).launch(request, kStartTimeout);
  }
  if (!started.is_ok()) return started;
  agent_launched_[agent] = true;
  if (request.append()) return started;
  // A new job on the agent: a fresh stream (an older one still open ends
  // without consequence: its id is no longer the agent's).
  agents_->renew(agent);
  agent_stream_[agent] = stream_agent_.size();
  stream_agent_.push_back(agent);
  agents_->client(agent).start_watch(request.job_id(), queue_,
                                     static_cast<int>(agent_stream_[agent]));
  watch_ended_[agent] = false;
  agent_lost_[agent] = false;
  return started;
}

void JobDriver::carry_out(elastic::Actions actions) {
  for (size_t i = 0; i < actions.size(); ++i) {
    const elastic::Action action = actions[i];  // the loop may append to `actions`
    std::visit(
        common::Overloaded{
            [&](const elastic::StartWorker& start) {
              common::Status s = start_worker(start);
              if (s.is_ok()) {
                exited_[static_cast<size_t>(start.slot)] = false;
                return;
              }
              auto more = machine_->start_failed(start.slot, s.message(), Clock::now());
              actions.insert(actions.end(), more.begin(), more.end());
            },
            [&](const elastic::StartSpare& start) {
              common::Status s = start_spare(start);
              if (s.is_ok()) return;
              auto more = machine_->start_failed(start.spare, s.message(), Clock::now());
              actions.insert(actions.end(), more.begin(), more.end());
            },
            [&](const elastic::PromoteSpare& promote) {
              // Before the slot's predecessor is lost: the survivors' next
              // round waits for the spare when it waits in hvd.init().
              exited_[static_cast<size_t>(promote.slot)] = false;
              rendezvous_->promote_spare(promote.spare, promote.slot);
            },
            [&](const elastic::StopWorker& stop) {
              auto it = host_agent_.find(machine_->host_of(stop.slot));
              if (it == host_agent_.end()) return;
              const int process = machine_->process_of(stop.slot);
              for (const std::string& id : agents_->jobs(it->second, job_id_)) {
                common::Status s =
                    agents_->client(it->second).signal(id, SIGKILL, kSignalTimeout, {process});
                if (!s.is_ok() && s.code() != common::StatusCode::kNotFound) {
                  spdlog::warn("stopping rank {}: {}", stop.slot, s.to_string());
                }
              }
            },
            [&](const elastic::SlotLost& lost) {
              // A REMOVED event naming the slot: the survivors of its round
              // fail their pending collectives at once, whatever transport
              // they are in (a GPU transport may not notice a dead peer
              // before its timeout), and rejoin without it; liveness stops
              // watching the slot until its replacement joins.
              rendezvous_->hosts_changed({}, {}, {lost.slot});
            },
            [&](const elastic::HostsChanged& change) {
              rendezvous_->hosts_changed(change.added, change.removed, change.removed_slots);
            },
            [&](const elastic::Say& say) {
              std::fprintf(stderr, "hvdrun: %s\n", say.text.c_str());
              std::fflush(stderr);
            },
            [&](const elastic::EndJob& end) {
              if (!end.error.empty()) error_line(end.error);
              finish(end.code);
              begin_terminate();
            },
        },
        action);
  }
}

}  // namespace hvd::launcher
