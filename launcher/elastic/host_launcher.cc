#include "launcher/elastic/host_launcher.h"

#include "common/worker_env_names.h"
#include "launcher/agent_streams.h"
#include "launcher/host_agents.h"
#include "launcher/job_network.h"
#include "launcher/job_session.h"
#include "launcher/launch_requests.h"
#include "launcher/local_host.h"

namespace hvd::launcher::elastic {

namespace {

// Starting a worker may take a while on a loaded host.
constexpr std::chrono::milliseconds kStartTimeout{60'000};
// How long a host's agent may take to answer Info before a worker starts there.
constexpr std::chrono::milliseconds kAgentInfoTimeout{10'000};

}  // namespace

void HostLauncher::launched(const std::vector<std::string>& bind_addresses) {
  const HostAgents& agents = session_.agents();
  agent_bind_ = bind_addresses;
  agent_launched_.assign(agents.size(), true);
  for (size_t a = 0; a < agents.size(); ++a) {
    for (int rank : agents.target(a).ranks) {
      host_agent_[session_.plan()[static_cast<size_t>(rank)].host] = a;
    }
  }
}

std::optional<size_t> HostLauncher::agent_of(const std::string& host) const {
  auto it = host_agent_.find(host);
  if (it == host_agent_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> HostLauncher::hosts_of(size_t agent) const {
  std::vector<std::string> hosts;
  for (const auto& [host, a] : host_agent_) {
    if (a == agent) hosts.push_back(host);
  }
  return hosts;
}

common::Result<size_t> HostLauncher::agent_for(const std::string& host) {
  if (auto it = host_agent_.find(host); it != host_agent_.end()) return it->second;
  HostAgents& agents = session_.agents();
  if (is_local_host(host, LocalIdentity::current())) {
    for (size_t a = 0; a < agents.size(); ++a) {
      if (agents.target(a).local) return host_agent_[host] = a;
    }
    return common::failed_precondition(
        "host " + host + " is this machine, but the job started without a local host (its "
        "agent runs only when a first host is local)");
  }
  AgentTarget target{host, false, host_port(host, session_.options().agent_port), {}};
  auto added = agents.add_remote(target);
  if (!added.is_ok()) return added.status();
  const size_t agent = *added;
  host_agent_[host] = agent;
  agent_bind_.resize(agents.size());
  agent_launched_.resize(agents.size(), false);
  session_.streams().add_agent();
  return agent;
}

common::Result<std::string> HostLauncher::bind_address(size_t agent) {
  if (!agent_bind_[agent].empty()) return agent_bind_[agent];
  // An agent that is not up fails the start now (its host is blacklisted
  // for a cooldown and tried again), without holding up the job.
  HostAgents& agents = session_.agents();
  auto info = agents.client(agent).info(kAgentInfoTimeout, /*wait_for_ready=*/false);
  if (!info.is_ok()) return info.status();
  const LaunchOptions& options = session_.options();
  auto network = plan_job_network({agents.target(agent)}, {*info}, options.network_interfaces,
                                  options.agent_port);
  if (!network.is_ok()) return network.status();
  agent_bind_[agent] = network->bind_addresses.at(0);
  return agent_bind_[agent];
}

common::Status HostLauncher::launch(int process, const std::string& host, Environment env) {
  auto agent_or = agent_for(host);
  if (!agent_or.is_ok()) return agent_or.status();
  const size_t agent = *agent_or;
  HostAgents& agents = session_.agents();
  AgentStreams& streams = session_.streams();
  const std::string& job_id = session_.job_id();
  // A lost agent may be back (restarted): a fresh channel reaches it at once
  // instead of after the old one's reconnect backoff.
  if (streams.lost(agent)) agents.renew(agent);
  auto bind = bind_address(agent);  // a new agent: where its workers bind
  if (!bind.is_ok()) return bind.status();
  env[common::env::kBindAddress] = *bind;

  hvd::v1::LaunchRequest request;
  auto* worker = request.add_workers();
  worker->set_rank(process);
  for (const auto& arg : session_.options().command) worker->add_argv(arg);
  worker->mutable_env()->insert(env.begin(), env.end());
  worker->set_cwd(session_.cwd());
  // Into the agent's running job; an agent that was restarted, or whose
  // workers all exited, gets a new job (the old one's stream has ended).
  const std::vector<std::string> ids = agents.jobs(agent, job_id);
  request.set_job_id(ids.back());
  request.set_orphan_grace_ms(job_orphan_grace(session_.options().settings).count());
  common::Status started = common::Status::ok();
  if (agent_launched_[agent] && !streams.ended(agent)) {
    request.set_append(true);
    started = agents.client(agent).launch(request, kStartTimeout);
    if (started.is_ok()) return started;
    if (started.code() != common::StatusCode::kNotFound &&
        started.code() != common::StatusCode::kFailedPrecondition) {
      return started;
    }
  }
  request.set_append(false);
  if (agent_launched_[agent]) {
    const std::string id = job_id + "." + std::to_string(ids.size());
    agents.add_job(agent, id);
    request.set_job_id(id);
  }
  started = agents.client(agent).launch(request, kStartTimeout);
  if (!started.is_ok() && started.code() == common::StatusCode::kAlreadyExists) {
    const std::string id = job_id + "." + std::to_string(agents.jobs(agent, job_id).size());
    agents.add_job(agent, id);
    request.set_job_id(id);
    started = agents.client(agent).launch(request, kStartTimeout);
  }
  if (!started.is_ok()) return started;
  agent_launched_[agent] = true;
  if (request.append()) return started;
  // A new job on the agent: a fresh stream (an older one still open ends
  // without consequence: its id is no longer the agent's).
  agents.renew(agent);
  agents.client(agent).start_watch(request.job_id(), session_.queue(), streams.open(agent));
  return started;
}

}  // namespace hvd::launcher::elastic
