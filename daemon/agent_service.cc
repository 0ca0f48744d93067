#include "daemon/agent_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "daemon/host_info.h"
#include "daemon/job_events.h"
#include "daemon/supervisor.h"
#include "proto/rpc_auth.h"
#include "proto/rpc_status.h"

#ifndef HVD_VERSION
#error "HVD_VERSION must be defined by the build"
#endif

namespace hvd::daemon {

namespace {

using std::chrono::milliseconds;

constexpr milliseconds kDefaultGrace{5'000};
constexpr milliseconds kMaxGrace{3'600'000};
constexpr milliseconds kLaunchFailGrace{1'000};  // for workers started before a failed spawn
constexpr milliseconds kDestructorGrace{2'000};
constexpr size_t kMaxJobIdBytes = 256;

// One launched job: its event queue and, until the job is over and its events
// are delivered, its supervisor.
struct Job {
  explicit Job(int workers) : events(std::make_shared<JobEvents>(workers)) {}

  std::shared_ptr<Supervisor> get_supervisor() {
    std::lock_guard lock(mu);
    return supervisor;
  }

  // Frees the supervisor's thread and descriptors; processes left in the
  // job's groups (children of workers) are killed with it.
  void release_supervisor() {
    std::shared_ptr<Supervisor> last;
    {
      std::lock_guard lock(mu);
      last = std::move(supervisor);
    }
  }

  std::shared_ptr<JobEvents> events;
  std::mutex mu;
  std::shared_ptr<Supervisor> supervisor;
};

// An agent without a secret would be a remote shell for anyone who can reach
// it: it refuses every call instead.
grpc::Status authorize(const grpc::ServerContext& ctx, const std::string& secret,
                       const char* method) {
  if (secret.empty()) {
    spdlog::error("refused {} from {}: the agent has no secret configured", method, ctx.peer());
    return {grpc::StatusCode::UNAUTHENTICATED,
            std::string(method) + " refused: the agent has no secret configured"};
  }
  return proto::check_token(ctx, secret, method);
}

grpc::Status invalid(std::string message) {
  return {grpc::StatusCode::INVALID_ARGUMENT, std::move(message)};
}

grpc::Status check_launch(const hvd::v1::LaunchRequest& req) {
  if (req.job_id().empty()) return invalid("empty job id");
  if (req.job_id().size() > kMaxJobIdBytes) {
    return invalid("job id longer than " + std::to_string(kMaxJobIdBytes) + " bytes");
  }
  if (req.workers().empty()) return invalid("job '" + req.job_id() + "' has no workers");
  std::set<int> ranks;
  for (const auto& worker : req.workers()) {
    if (!ranks.insert(worker.rank()).second) {
      return invalid("rank " + std::to_string(worker.rank()) + " appears twice in job '" +
                     req.job_id() + "'");
    }
    if (worker.argv().empty()) {
      return invalid("rank " + std::to_string(worker.rank()) + " has an empty command line");
    }
  }
  return grpc::Status::OK;
}

ProcessSpec to_spec(const hvd::v1::WorkerSpec& worker) {
  ProcessSpec spec;
  spec.rank = worker.rank();
  spec.argv.assign(worker.argv().begin(), worker.argv().end());
  spec.env.insert(worker.env().begin(), worker.env().end());
  spec.cwd = worker.cwd();
  return spec;
}

}  // namespace

struct AgentService::State {
  explicit State(AgentOptions o) : options(std::move(o)) {}

  std::shared_ptr<Job> find(const std::string& job_id) {
    std::lock_guard lock(mu);
    auto it = jobs.find(job_id);
    return it == jobs.end() ? nullptr : it->second;
  }

  const AgentOptions options;
  std::mutex mu;
  std::map<std::string, std::shared_ptr<Job>> jobs;
  bool shut_down = false;
};

namespace {

grpc::Status unknown_job(const std::string& job_id) {
  return {grpc::StatusCode::NOT_FOUND, "unknown job '" + job_id + "'"};
}

}  // namespace

AgentService::AgentService(AgentOptions options)
    : state_(std::make_unique<State>(std::move(options))) {}

AgentService::~AgentService() {
  bool needed = false;
  {
    std::lock_guard lock(state_->mu);
    needed = !state_->shut_down;
  }
  if (needed) shutdown(kDestructorGrace);
}

void AgentService::shutdown(std::chrono::milliseconds grace) {
  std::vector<std::shared_ptr<Job>> jobs;
  {
    std::lock_guard lock(state_->mu);
    state_->shut_down = true;
    for (auto& [id, job] : state_->jobs) jobs.push_back(job);
  }
  // Jobs are terminated side by side, so that shutdown takes one grace period.
  std::vector<std::thread> terminators;
  for (auto& job : jobs) {
    if (auto supervisor = job->get_supervisor()) {
      terminators.emplace_back([supervisor, grace] {
        const int killed = supervisor->terminate_all(grace);
        if (killed > 0) spdlog::info("agent shutdown: {} process group(s) needed SIGKILL", killed);
      });
    }
  }
  for (auto& t : terminators) t.join();
  for (auto& job : jobs) {
    job->events->close({grpc::StatusCode::CANCELLED, "the agent is shutting down"});
  }
}

grpc::Status AgentService::Launch(grpc::ServerContext* ctx, const hvd::v1::LaunchRequest* req,
                                  hvd::v1::LaunchReply* reply) {
  auto auth = authorize(*ctx, state_->options.secret, "Agent.Launch");
  if (!auth.ok()) return auth;
  auto valid = check_launch(*req);
  if (!valid.ok()) return valid;

  const std::string& job_id = req->job_id();
  auto job = std::make_shared<Job>(req->workers_size());
  job->supervisor = std::make_shared<Supervisor>(
      [events = job->events](const ProcessEvent& event) { events->push(event); });
  {
    std::lock_guard lock(state_->mu);
    if (state_->shut_down) {
      return {grpc::StatusCode::UNAVAILABLE, "the agent is shutting down"};
    }
    if (!state_->jobs.emplace(job_id, job).second) {
      return {grpc::StatusCode::ALREADY_EXISTS, "job '" + job_id + "' was already launched"};
    }
  }

  const std::shared_ptr<Supervisor> supervisor = job->supervisor;
  for (const auto& worker : req->workers()) {
    auto pid = supervisor->spawn(to_spec(worker));
    if (!pid.is_ok()) {
      spdlog::info("job {}: cannot start rank {}: {}", job_id, worker.rank(),
                   pid.status().message());
      supervisor->terminate_all(kLaunchFailGrace);
      job->events->close({grpc::StatusCode::ABORTED, "the launch of job '" + job_id + "' failed"});
      {
        std::lock_guard lock(state_->mu);
        auto it = state_->jobs.find(job_id);
        if (it != state_->jobs.end() && it->second == job) state_->jobs.erase(it);
      }
      reply->clear_started();
      return proto::to_grpc(pid.status());
    }
    auto* started = reply->add_started();
    started->set_rank(worker.rank());
    started->set_pid(pid.value());
  }
  bool shutting_down = false;
  {
    std::lock_guard lock(state_->mu);
    shutting_down = state_->shut_down;
  }
  if (shutting_down) {  // shutdown() ran while these were being started
    supervisor->terminate_all(kLaunchFailGrace);
    return {grpc::StatusCode::UNAVAILABLE, "the agent is shutting down"};
  }
  spdlog::info("job {}: started {} worker(s)", job_id, req->workers_size());
  return grpc::Status::OK;
}

grpc::Status AgentService::Watch(grpc::ServerContext* ctx, const hvd::v1::WatchRequest* req,
                                 grpc::ServerWriter<hvd::v1::WatchEvent>* writer) {
  auto auth = authorize(*ctx, state_->options.secret, "Agent.Watch");
  if (!auth.ok()) return auth;
  auto job = state_->find(req->job_id());
  if (!job) return unknown_job(req->job_id());
  grpc::Status status = job->events->watch(
      [writer](const hvd::v1::WatchEvent& event) { return writer->Write(event); },
      [ctx] { return ctx->IsCancelled(); });
  if (status.ok()) {
    spdlog::debug("job {}: every worker exited and every event was delivered", req->job_id());
    job->release_supervisor();
  }
  return status;
}

grpc::Status AgentService::Signal(grpc::ServerContext* ctx, const hvd::v1::SignalRequest* req,
                                  hvd::v1::SignalReply* /*reply*/) {
  auto auth = authorize(*ctx, state_->options.secret, "Agent.Signal");
  if (!auth.ok()) return auth;
  if (req->signal() <= 0 || req->signal() >= NSIG) {
    return invalid("invalid signal number " + std::to_string(req->signal()));
  }
  auto job = state_->find(req->job_id());
  if (!job) return unknown_job(req->job_id());
  if (auto supervisor = job->get_supervisor()) {
    spdlog::info("job {}: sending signal {} to its workers", req->job_id(), req->signal());
    supervisor->signal_all(req->signal());
  }
  return grpc::Status::OK;
}

grpc::Status AgentService::Terminate(grpc::ServerContext* ctx,
                                     const hvd::v1::TerminateRequest* req,
                                     hvd::v1::TerminateReply* reply) {
  auto auth = authorize(*ctx, state_->options.secret, "Agent.Terminate");
  if (!auth.ok()) return auth;
  auto job = state_->find(req->job_id());
  if (!job) return unknown_job(req->job_id());
  const milliseconds grace =
      req->grace_ms() <= 0 ? kDefaultGrace
                           : milliseconds(std::min<int64_t>(req->grace_ms(), kMaxGrace.count()));
  int killed = 0;
  if (auto supervisor = job->get_supervisor()) {
    spdlog::info("job {}: terminating its workers (grace {} ms)", req->job_id(), grace.count());
    killed = supervisor->terminate_all(grace);
  }
  reply->set_killed(killed);
  return grpc::Status::OK;
}

grpc::Status AgentService::Info(grpc::ServerContext* ctx, const hvd::v1::InfoRequest* /*req*/,
                                hvd::v1::InfoReply* reply) {
  auto auth = authorize(*ctx, state_->options.secret, "Agent.Info");
  if (!auth.ok()) return auth;
  reply->set_hostname(host_name());
  reply->set_slots(state_->options.slots);
  reply->set_gpus(count_gpus());
  for (auto& iface : network_interfaces()) {
    auto* out = reply->add_interfaces();
    out->set_name(iface.name);
    for (auto& address : iface.addresses) out->add_addresses(address);
  }
  reply->set_version(HVD_VERSION);
  return grpc::Status::OK;
}

}  // namespace hvd::daemon
