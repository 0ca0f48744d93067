#include "daemon/agent/agent_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "daemon/agent/agent_requests.h"
#include "daemon/agent/containment.h"
#include "daemon/agent/host_info.h"
#include "daemon/agent/agent_job_events.h"
#include "daemon/agent/orphan_timer.h"
#include "daemon/agent/supervisor.h"
#include "proto/agent_auth.h"
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
constexpr milliseconds kOrphanGrace{5'000};  // SIGTERM -> SIGKILL for the workers of an orphan

// The largest request of each method (docs/security.md). Launch carries the
// argv and complete environment of a host's workers: 16 MiB is 8 workers at
// the kernel's limit of argv + environment (2 MiB with the default stack)
// or 500 workers with 32 KiB each. Signal may name every rank of the
// largest world (65536 varints); the others carry a job id (256 bytes).
const std::map<std::string, int> kAgentLimits = {
    {"Launch", 16 << 20}, {"Signal", 512 << 10}, {"Watch", 4 << 10},
    {"Terminate", 4 << 10}, {"Info", 4 << 10}};

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

ProcessSpec to_spec(const hvd::v1::WorkerSpec& worker) {
  ProcessSpec spec;
  spec.rank = worker.rank();
  spec.argv.assign(worker.argv().begin(), worker.argv().end());
  spec.env.insert(worker.env().begin(), worker.env().end());
  spec.cwd = worker.cwd();
  return spec;
}

// Logs each worker's exit and stop and counts exits and output
// (agent_metrics.h); runs on the job's supervisor thread.
void log_event(const std::string& job_id, const ProcessEvent& event, AgentMetrics& metrics) {
  if (event.kind == ProcessEvent::Kind::kOutput) {
    metrics.output(event.is_stderr, event.text.size() + 1);
  }
  if (event.kind == ProcessEvent::Kind::kExit) metrics.exited(event.exit_code, event.signal);
  if (event.kind == ProcessEvent::Kind::kState) {
    spdlog::info("job={} rank={} pid={} {}", job_id, event.rank, event.pid,
                 event.stopped ? "stopped" : "runs again");
    return;
  }
  if (event.kind != ProcessEvent::Kind::kExit) return;
  if (event.signal != 0) {
    spdlog::info("job={} rank={} pid={} exited signal={}", job_id, event.rank, event.pid,
                 event.signal);
  } else {
    spdlog::info("job={} rank={} pid={} exited code={}", job_id, event.rank, event.pid,
                 event.exit_code);
  }
}

// Seconds to a tenth, for messages: "30", "0.3".
double seconds(milliseconds ms) { return static_cast<double>((ms.count() + 50) / 100) / 10.0; }

// A worker is running: logged and reported in the Launch reply.
void record_started(const std::string& job_id, const hvd::v1::WorkerSpec& worker, int64_t pid,
                    hvd::v1::LaunchReply* reply) {
  spdlog::info("job={} rank={} pid={} started {}", job_id, worker.rank(), pid, worker.argv(0));
  auto* started = reply->add_started();
  started->set_rank(worker.rank());
  started->set_pid(pid);
}

grpc::Status unknown_job(const std::string& job_id) {
  return {grpc::StatusCode::NOT_FOUND, "unknown job '" + job_id + "'"};
}

}  // namespace

struct AgentService::State {
  explicit State(AgentOptions o)
      : options(std::move(o)),
        credentials(options.secret),
        gate(hvd::v1::Agent::service_full_name(), kAgentLimits,
             [this](const std::string& method, std::optional<std::string_view> proof,
                    std::string_view peer) {
               auto verdict = credentials.check_header(proof, method.c_str(), peer);
               if (!verdict.ok()) metrics.refused(verdict.error_code());
               return verdict;
             }),
        orphans(options.orphan_grace,
                [this](const std::string& job_id, milliseconds unwatched) {
                  orphaned(job_id, unwatched);
                }) {}

  std::shared_ptr<Job> find(const std::string& job_id) {
    std::lock_guard lock(mu);
    auto it = jobs.find(job_id);
    return it == jobs.end() ? nullptr : it->second;
  }

  // On the orphan timer's thread: nobody has watched the job for the grace.
  // Its events are dropped first, so that a Watch from now on ends at once.
  void orphaned(const std::string& job_id, milliseconds unwatched) {
    auto job = find(job_id);
    if (!job) return;
    const std::string gone_for = fmt::format("{:g}", seconds(unwatched));
    job->events->discard({grpc::StatusCode::ABORTED, "job '" + job_id +
                                                         "' was terminated: no launcher "
                                                         "watched it for " + gone_for + " s"});
    auto supervisor = job->get_supervisor();
    if (supervisor && supervisor->running() > 0) {
      spdlog::warn("job={} launcher gone for {} s: terminating its workers", job_id, gone_for);
      const int killed = supervisor->terminate_all(kOrphanGrace);
      if (killed > 0) spdlog::info("job={} {} process group(s) needed SIGKILL", job_id, killed);
    } else if (supervisor) {
      spdlog::info("job={} launcher gone for {} s: dropping its undelivered output", job_id,
                   gone_for);
    }
    job->release_supervisor();
  }

  grpc::Status refuse(grpc::Status why) {
    metrics.refused(why.error_code());
    return why;
  }

  const AgentOptions options;
  AgentMetrics metrics;  // before what may count into it
  // An agent without a secret would be a remote shell for anyone who can
  // reach it: the checker refuses every call then.
  proto::AgentProofChecker credentials;
  proto::CallGate gate;  // checks each call's proof once, on its headers
  std::mutex mu;
  std::map<std::string, std::shared_ptr<Job>> jobs;
  bool shut_down = false;
  OrphanTimer orphans;  // last: its thread stops before the rest is destroyed
};

ServerOptions agent_server_options() {
  ServerOptions options;
  options.max_concurrent_streams = kAgentStreamsPerConnection;
  options.stream_window_bytes = kAgentStreamWindowBytes;
  return options;
}

AgentService::AgentService(AgentOptions options)
    : state_(std::make_unique<State>(std::move(options))) {}

proto::CallGate& AgentService::call_gate() { return state_->gate; }

const AgentMetrics& AgentService::metrics() const { return state_->metrics; }

AgentService::~AgentService() {
  bool needed = false;
  {
    std::lock_guard lock(state_->mu);
    needed = !state_->shut_down;
  }
  if (needed) shutdown(kDestructorGrace);
}

void AgentService::shutdown(std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(state_->mu);
    state_->shut_down = true;
  }
  // No orphan termination runs beside the shutdown's.
  state_->orphans.stop();
  std::vector<std::pair<std::string, std::shared_ptr<Job>>> jobs;
  {
    std::lock_guard lock(state_->mu);
    for (auto& [id, job] : state_->jobs) jobs.emplace_back(id, job);
  }
  // Jobs are terminated side by side, so that shutdown takes one grace period.
  std::vector<std::thread> terminators;
  for (auto& [id, job] : jobs) {
    if (auto supervisor = job->get_supervisor()) {
      terminators.emplace_back([id = id, supervisor, grace] {
        if (supervisor->running() > 0) {
          spdlog::info("job={} terminating its workers: the agent is shutting down", id);
        }
        const int killed = supervisor->terminate_all(grace);
        if (killed > 0) spdlog::info("job={} {} process group(s) needed SIGKILL", id, killed);
      });
    }
  }
  for (auto& t : terminators) t.join();
  for (auto& [id, job] : jobs) {
    job->events->close({grpc::StatusCode::CANCELLED, "the agent is shutting down"});
  }
}

grpc::Status AgentService::Launch(grpc::ServerContext* ctx, const hvd::v1::LaunchRequest* req,
                                  hvd::v1::LaunchReply* reply) {
  auto auth = state_->gate.admitted("Launch", *req);
  if (!auth.ok()) return state_->refuse(auth);
  auto valid = check_launch(*req);
  if (!valid.ok()) {
    state_->metrics.refused(valid.error_code());
    spdlog::info("refused Agent.Launch from peer={}: {}", ctx->peer(), valid.error_message());
    return valid;
  }

  const std::string& job_id = req->job_id();
  if (req->append()) return append(*ctx, *req, reply);
  auto job = std::make_shared<Job>(req->workers_size());
  // The workers' pipes are read only while the job's queue has room.
  job->supervisor = std::make_shared<Supervisor>(
      [events = job->events, job_id, metrics = &state_->metrics](const ProcessEvent& event) {
        log_event(job_id, event, *metrics);
        events->push(event);
      },
      [events = job->events] { return events->has_room(); });
  job->events->on_room(job->supervisor->output_waker());
  {
    std::lock_guard lock(state_->mu);
    if (state_->shut_down) {
      return {grpc::StatusCode::UNAVAILABLE, "the agent is shutting down"};
    }
    if (!state_->jobs.emplace(job_id, job).second) {
      return {grpc::StatusCode::ALREADY_EXISTS, "job '" + job_id + "' was already launched"};
    }
    // Held by this Launch until it returns; a Watch may hold it already by then.
    state_->orphans.track(job_id, milliseconds(std::max<int64_t>(req->orphan_grace_ms(), 0)));
  }
  spdlog::info("job={} peer={} launching {} worker(s)", job_id, ctx->peer(), req->workers_size());

  const std::shared_ptr<Supervisor> supervisor = job->supervisor;
  for (const auto& worker : req->workers()) {
    auto pid = supervisor->spawn(to_spec(worker));
    if (!pid.is_ok()) {
      spdlog::info("job={} rank={} cannot start: {}", job_id, worker.rank(),
                   pid.status().message());
      supervisor->terminate_all(kLaunchFailGrace);
      job->events->close({grpc::StatusCode::ABORTED, "the launch of job '" + job_id + "' failed"});
      {
        std::lock_guard lock(state_->mu);
        auto it = state_->jobs.find(job_id);
        if (it != state_->jobs.end() && it->second == job) state_->jobs.erase(it);
        state_->orphans.forget(job_id);
      }
      reply->clear_started();
      return proto::to_grpc(pid.status());
    }
    record_started(job_id, worker, pid.value(), reply);
    state_->metrics.started();
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
  // From now on only a Watch keeps the job from becoming an orphan.
  state_->orphans.release(job_id);
  return grpc::Status::OK;
}

grpc::Status AgentService::append(const grpc::ServerContext& ctx,
                                  const hvd::v1::LaunchRequest& req,
                                  hvd::v1::LaunchReply* reply) {
  const std::string& job_id = req.job_id();
  auto job = state_->find(job_id);
  if (!job) return unknown_job(job_id);
  std::shared_ptr<Supervisor> supervisor = job->get_supervisor();
  if (!supervisor || !job->events->add_workers(req.workers_size())) {
    return {grpc::StatusCode::FAILED_PRECONDITION,
            "job '" + job_id + "' has ended: every worker exited"};
  }
  spdlog::info("job={} peer={} adding {} worker(s)", job_id, ctx.peer(), req.workers_size());
  for (const auto& worker : req.workers()) {
    auto pid = supervisor->spawn(to_spec(worker));
    if (!pid.is_ok()) {
      // Reported to the caller; the job's other workers go on.
      spdlog::info("job={} rank={} cannot start: {}", job_id, worker.rank(),
                   pid.status().message());
      ProcessEvent never_ran;  // the stream counts this worker as exited
      never_ran.kind = ProcessEvent::Kind::kExit;
      never_ran.rank = worker.rank();
      never_ran.exit_code = 127;
      job->events->push(never_ran);
      return proto::to_grpc(pid.status());
    }
    record_started(job_id, worker, pid.value(), reply);
    state_->metrics.started();
  }
  return grpc::Status::OK;
}

grpc::Status AgentService::Watch(grpc::ServerContext* ctx, const hvd::v1::WatchRequest* req,
                                 grpc::ServerWriter<hvd::v1::WatchEvent>* writer) {
  auto auth = state_->gate.admitted("Watch", *req);
  if (!auth.ok()) return state_->refuse(auth);
  if (auto s = check_job_id(req->job_id()); !s.ok()) return s;
  const std::string& job_id = req->job_id();
  auto job = state_->find(job_id);
  if (!job) return unknown_job(job_id);
  spdlog::debug("job={} peer={} watching", job_id, ctx->peer());
  state_->orphans.hold(job_id);
  grpc::Status status = job->events->watch(
      [writer](const hvd::v1::WatchEvent& event) { return writer->Write(event); },
      [ctx] { return ctx->IsCancelled(); });
  if (status.ok()) {
    spdlog::debug("job={} every worker exited and every event was delivered", job_id);
    state_->orphans.forget(job_id);
    job->release_supervisor();
  } else {
    if (status.error_code() != grpc::StatusCode::FAILED_PRECONDITION) {
      spdlog::info("job={} peer={} watch ended: {}", job_id, ctx->peer(), status.error_message());
    }
    state_->orphans.release(job_id);
  }
  return status;
}

grpc::Status AgentService::Signal(grpc::ServerContext* ctx, const hvd::v1::SignalRequest* req,
                                  hvd::v1::SignalReply* /*reply*/) {
  auto auth = state_->gate.admitted("Signal", *req);
  if (!auth.ok()) return state_->refuse(auth);
  if (auto s = check_job_id(req->job_id()); !s.ok()) return s;
  if (req->signal() <= 0 || req->signal() >= NSIG) {
    return {grpc::StatusCode::INVALID_ARGUMENT,
            "invalid signal number " + std::to_string(req->signal())};
  }
  auto job = state_->find(req->job_id());
  if (!job) return unknown_job(req->job_id());
  if (auto supervisor = job->get_supervisor()) {
    if (req->ranks_size() == 0) {
      spdlog::info("job={} peer={} sending signal={} to its workers", req->job_id(), ctx->peer(),
                   req->signal());
      supervisor->signal_all(req->signal());
    }
    for (int rank : req->ranks()) {
      spdlog::info("job={} peer={} sending signal={} to rank {}", req->job_id(), ctx->peer(),
                   req->signal(), rank);
      supervisor->signal_rank(rank, req->signal());
    }
  }
  return grpc::Status::OK;
}

grpc::Status AgentService::Terminate(grpc::ServerContext* ctx,
                                     const hvd::v1::TerminateRequest* req,
                                     hvd::v1::TerminateReply* reply) {
  auto auth = state_->gate.admitted("Terminate", *req);
  if (!auth.ok()) return state_->refuse(auth);
  if (auto s = check_job_id(req->job_id()); !s.ok()) return s;
  auto job = state_->find(req->job_id());
  if (!job) return unknown_job(req->job_id());
  const milliseconds grace =
      req->grace_ms() <= 0 ? kDefaultGrace
                           : milliseconds(std::min<int64_t>(req->grace_ms(), kMaxGrace.count()));
  int killed = 0;
  if (auto supervisor = job->get_supervisor()) {
    spdlog::info("job={} peer={} terminating its workers (grace {} ms)", req->job_id(),
                 ctx->peer(), grace.count());
    killed = supervisor->terminate_all(grace);
  }
  reply->set_killed(killed);
  return grpc::Status::OK;
}

grpc::Status AgentService::Info(grpc::ServerContext* /*ctx*/, const hvd::v1::InfoRequest* req,
                                hvd::v1::InfoReply* reply) {
  auto auth = state_->gate.admitted("Info", *req);
  if (!auth.ok()) return state_->refuse(auth);
  reply->set_hostname(host_name());
  reply->set_slots(state_->options.slots);
  reply->set_gpus(count_gpus());
  for (auto& iface : network_interfaces()) {
    auto* out = reply->add_interfaces();
    out->set_name(iface.name);
    for (auto& address : iface.addresses) out->add_addresses(address);
  }
  reply->set_version(HVD_VERSION);
  reply->set_containment(current_containment().describe());
  return grpc::Status::OK;
}

}  // namespace hvd::daemon
