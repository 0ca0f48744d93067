#include "launcher/host_agents.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "common/logging.h"
#include "common/token.h"
#include "daemon/agent/agent_service.h"
#include "daemon/agent/containment.h"
#include "proto/grpc_server.h"

namespace hvd::launcher {

namespace {

constexpr char kLoopback[] = "127.0.0.1";
// After a wait-for-ready Info ran out of time, one more call that fails at
// once tells why the agent cannot be reached (refused, no route, DNS, TLS).
constexpr std::chrono::milliseconds kReasonProbeTimeout{2'000};
// Info waits for an agent in calls of at most this long.
constexpr std::chrono::milliseconds kInfoSlice{1'000};
// Between two slices, a call that does not wait says whether the channel
// failed its TLS handshake (a wait-for-ready call only retries it until its
// deadline); this many such answers in a row end the wait at once.
constexpr std::chrono::milliseconds kHandshakeProbeTimeout{250};
constexpr int kHandshakeFailuresToGiveUp = 2;
constexpr std::chrono::milliseconds kServerShutdownGrace{1'000};

// f(0) .. f(n-1), each on its own thread (n == 1: on this one).
template <class F>
void for_each_agent(size_t n, F f) {
  if (n == 1) {
    f(size_t{0});
    return;
  }
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (size_t i = 0; i < n; ++i) threads.emplace_back([&f, i] { f(i); });
  for (auto& t : threads) t.join();
}

// A TLS mismatch (one side with TLS, the other without, or a certificate
// the other side does not trust) shows as a failed handshake or, to a
// plaintext client, as a closed connection.
bool tls_like(const std::string& why) {
  return why.find("Socket closed") != std::string::npos ||
         why.find("handshake") != std::string::npos || why.find("SSL") != std::string::npos ||
         why.find("certificate") != std::string::npos;
}

}  // namespace

HostAgents::HostAgents(std::vector<AgentTarget> targets) : targets_(std::move(targets)) {}

HostAgents::~HostAgents() { shutdown(milliseconds(0)); }

common::Result<std::unique_ptr<HostAgents>> HostAgents::start(
    std::vector<AgentTarget> targets, const std::optional<RemoteCredentials>& remote,
    int local_slots) {
  std::unique_ptr<HostAgents> agents(new HostAgents(std::move(targets)));
  agents->remote_ = remote;
  agents->extra_jobs_.resize(agents->targets_.size());
  for (AgentTarget& target : agents->targets_) {
    if (!target.local) {
      if (!remote) {
        return common::invalid_argument("host " + target.host +
                                        " is remote but no agent credentials were given");
      }
      agents->clients_.push_back(agents->make_client(target));
      continue;
    }
    if (agents->embedded_server_) {
      return common::invalid_argument("more than one target for the embedded agent");
    }
    auto secret = common::generate_token();
    if (!secret.is_ok()) return secret.status();
    // HVD_CONTAINMENT (docs/agent.md, "Containment"): a bad value, or cgroup
    // where none can be used, is an error before anything starts.
    auto containment = daemon::configure_containment_from_environment();
    if (!containment.is_ok()) return containment.status();
    agents->embedded_ = std::make_unique<daemon::AgentService>(
        daemon::AgentOptions{*secret, local_slots});
    // No keepalive between hvdrun and the agent inside it (agent_client.cc).
    daemon::ServerOptions options = daemon::agent_server_options();
    options.keepalive_ms = 0;
    auto server =
        daemon::GrpcServer::start(kLoopback, 0, {agents->embedded_.get()}, options);
    if (!server.is_ok()) {
      return common::unavailable("cannot start the embedded agent: " + server.status().message());
    }
    agents->embedded_server_ = std::move(server).value();
    target.address = agents->embedded_server_->address();
    agents->embedded_secret_ = *secret;
    agents->clients_.push_back(agents->make_client(target));
  }
  return agents;
}

std::unique_ptr<AgentClient> HostAgents::make_client(const AgentTarget& target) const {
  if (target.local) return std::make_unique<AgentClient>(target.address, embedded_secret_);
  return std::make_unique<AgentClient>(target.address, remote_->secret, remote_->channel);
}

common::Result<size_t> HostAgents::add_remote(AgentTarget target) {
  if (!remote_) {
    return common::invalid_argument("host " + target.host +
                                    " is remote but no agent credentials were given "
                                    "(--secret-file)");
  }
  target.local = false;
  clients_.push_back(make_client(target));
  targets_.push_back(std::move(target));
  extra_jobs_.emplace_back();
  return targets_.size() - 1;
}

void HostAgents::renew(size_t agent) {
  clients_[agent]->stop_watch();
  clients_[agent] = make_client(targets_[agent]);
}

void HostAgents::add_job(size_t agent, const std::string& job_id) {
  extra_jobs_[agent].push_back(job_id);
}

std::vector<std::string> HostAgents::jobs(size_t agent, const std::string& job_id) const {
  std::vector<std::string> out{job_id};
  out.insert(out.end(), extra_jobs_[agent].begin(), extra_jobs_[agent].end());
  return out;
}

common::Status HostAgents::describe_info_failure(size_t agent, const common::Status& status,
                                                 std::chrono::seconds timeout) const {
  const AgentTarget& target = targets_[agent];
  if (status.code() == common::StatusCode::kUnauthenticated) {
    return {common::StatusCode::kUnauthenticated,
            "the agent on host " + target.host +
                " refused the credentials (check --secret-file/TLS): " + status.message()};
  }
  const std::string& why = status.message();
  if (tls_like(why)) {
    return common::unavailable("cannot reach the agent on host " + target.host + " (" +
                               target.address +
                               "): a TLS mismatch? check --tls-cert/--tls-key/--tls-ca on both "
                               "sides (the agent's log names the reason): " + why);
  }
  return common::unavailable("cannot reach the agent on host " + target.host + " (" +
                             target.address + ") within " + std::to_string(timeout.count()) +
                             " s: " + why);
}

common::Result<std::vector<hvd::v1::InfoReply>> HostAgents::info_all(
    std::chrono::seconds timeout, const std::function<bool()>& cancelled) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  // Once one agent failed, or hvdrun got a signal, nobody waits any longer.
  std::atomic<bool> failed{false};
  std::atomic<bool> signalled{false};
  std::vector<common::Result<hvd::v1::InfoReply>> replies(
      size(), common::Status(common::StatusCode::kCancelled, "not waited for"));
  for_each_agent(size(), [&](size_t i) {
    // Waits for the agent in slices, so that a signal to hvdrun is noticed.
    int handshake_failures = 0;
    while (!failed && !signalled) {
      auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      auto reply = clients_[i]->info(std::clamp(left, milliseconds(1), kInfoSlice),
                                     /*wait_for_ready=*/true);
      if (reply.is_ok() || reply.status().code() != common::StatusCode::kTimeout) {
        if (!reply.is_ok()) failed = true;
        replies[i] = std::move(reply);
        return;
      }
      auto probe = clients_[i]->info(kHandshakeProbeTimeout, /*wait_for_ready=*/false);
      handshake_failures =
          !probe.is_ok() && tls_like(probe.status().message()) ? handshake_failures + 1 : 0;
      if (probe.is_ok() || handshake_failures == kHandshakeFailuresToGiveUp) {
        if (!probe.is_ok()) failed = true;
        replies[i] = std::move(probe);
        return;
      }
      if (Clock::now() >= deadline) {
        auto probe = clients_[i]->info(kReasonProbeTimeout, /*wait_for_ready=*/false);
        bool useful = probe.is_ok() || probe.status().code() != common::StatusCode::kTimeout;
        replies[i] = useful ? std::move(probe) : std::move(reply);
        if (!replies[i].is_ok()) failed = true;
        return;
      }
      if (cancelled()) signalled = true;
    }
  });
  if (signalled) return common::Status(common::StatusCode::kCancelled, "cancelled by a signal");
  // The first failure in target order; agents not waited for do not count.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < size(); ++i) {
      const auto& reply = replies[i];
      if (reply.is_ok() || (pass == 0 && reply.status().code() == common::StatusCode::kCancelled))
        continue;
      return describe_info_failure(i, reply.status(), timeout);
    }
  }
  std::vector<hvd::v1::InfoReply> out;
  for (auto& reply : replies) out.push_back(std::move(reply).value());
  return out;
}

common::Status HostAgents::launch_all(const std::vector<hvd::v1::LaunchRequest>& requests,
                                      milliseconds timeout, milliseconds grace) {
  std::vector<common::Status> results(size());
  for_each_agent(size(), [&](size_t i) { results[i] = clients_[i]->launch(requests[i], timeout); });
  size_t failed = size();
  for (size_t i = 0; i < size() && failed == size(); ++i) {
    if (!results[i].is_ok()) failed = i;
  }
  if (failed == size()) return common::Status::ok();

  // Nothing of the job may stay behind on the hosts that did start.
  for_each_agent(size(), [&](size_t i) {
    if (!results[i].is_ok() || requests[i].workers_size() == 0) return;
    auto killed = clients_[i]->terminate(requests[i].job_id(), grace, grace + timeout);
    if (!killed.is_ok()) spdlog::warn("{}", killed.status().to_string());
  });
  const common::Status& error = results[failed];
  const AgentTarget& target = targets_[failed];
  return {error.code(), target.local ? error.message()
                                     : error.message() + " on host " + target.host};
}

void HostAgents::watch_all(const std::string& job_id, EventQueue& queue) {
  for (size_t i = 0; i < size(); ++i) clients_[i]->start_watch(job_id, queue, static_cast<int>(i));
}

common::Result<int> HostAgents::terminate_all(const std::string& job_id, milliseconds grace,
                                              milliseconds timeout, const std::vector<bool>& lost,
                                              milliseconds lost_timeout) {
  std::vector<common::Result<int>> results(size(), 0);
  for_each_agent(size(), [&](size_t i) {
    bool is_lost = i < lost.size() && lost[i];
    int sum = 0;
    for (const std::string& id : jobs(i, job_id)) {
      auto killed = clients_[i]->terminate(id, grace, is_lost ? lost_timeout : timeout);
      // An agent that was restarted knows only the ids launched since.
      if (!killed.is_ok() && killed.status().code() == common::StatusCode::kNotFound) continue;
      if (!killed.is_ok()) {
        results[i] = killed.status();
        return;
      }
      sum += *killed;
    }
    results[i] = sum;
  });
  int killed = 0;
  for (size_t i = 0; i < size(); ++i) {
    if (results[i].is_ok()) {
      killed += *results[i];
    } else if (i < lost.size() && lost[i]) {
      // Expected: the agent is gone, or its hvd-agent ends the orphaned job.
      spdlog::debug("{}", results[i].status().to_string());
    } else {
      return results[i].status();
    }
  }
  return killed;
}

common::Status HostAgents::signal_all(const std::string& job_id, int signo,
                                      milliseconds timeout) {
  std::vector<common::Status> results(size());
  for_each_agent(size(), [&](size_t i) {
    for (const std::string& id : jobs(i, job_id)) {
      results[i] = clients_[i]->signal(id, signo, timeout);
      if (!results[i].is_ok() && results[i].code() != common::StatusCode::kNotFound) return;
      results[i] = common::Status::ok();
    }
  });
  for (auto& status : results) {
    if (!status.is_ok()) return status;
  }
  return common::Status::ok();
}

void HostAgents::shutdown(milliseconds grace) {
  for (auto& client : clients_) client->stop_watch();
  if (embedded_) embedded_->shutdown(grace);
  if (embedded_server_) embedded_server_->shutdown(kServerShutdownGrace);
}

}  // namespace hvd::launcher
