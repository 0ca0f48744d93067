// JobSession's start: reach every agent (Info), plan the network, start the
// rendezvous service, launch each host's ranks and open the Watch streams.
// The event loop that follows lives in job_session.cc.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "common/logging.h"
#include "common/token.h"
#include "proto/grpc_server.h"
#include "daemon/rendezvous/rendezvous_service.h"
#include "launcher/exit_codes.h"
#include "launcher/host_agents.h"
#include "launcher/job_network.h"
#include "launcher/job_session.h"
#include "launcher/launch_requests.h"
#include "launcher/signal_watcher.h"
#include "launcher/worker_env.h"

#ifndef HVD_VERSION
#define HVD_VERSION "unknown"
#endif

namespace hvd::launcher {

namespace {

// Launch may take a while on a loaded host; it is never retried.
constexpr std::chrono::milliseconds kLaunchTimeout{60'000};

}  // namespace

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
  policy_->configure(*rendezvous_);
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
  policy_->launched(bind_addresses);
  return exit_code::kSuccess;
}

Environment JobSession::worker_env(const RankSlot& slot, const std::string& bind_address) const {
  // Elastic jobs: HVD_RANK is the worker's slot, below HVD_SIZE = the
  // number of slots (--max-np); its world comes from the rendezvous round.
  JobContext job{job_id_,      base_.job_token, base_.rendezvous_addr,
                 bind_address, policy_->slots(), options_.network_interfaces};
  Environment env = worker_environment(base_.env, base_.settings, options_.extra_env, slot, job);
  policy_->add_env(env);
  return env;
}

}  // namespace hvd::launcher
