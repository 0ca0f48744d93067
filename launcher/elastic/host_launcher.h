// Starts an elastic job's workers and spares on their hosts' agents, for
// ElasticPolicy (elastic_policy.h). It knows which agent of the job
// (launcher/host_agents.h) serves each host — a remote host's agent is
// added on first use — where each agent's workers bind, and whether a job
// was launched there. A process goes into the agent's running job (Launch
// with append); an agent that was restarted, whose workers all exited, or
// that is new gets a job of its own (job id "JOB.N") and a new Watch
// stream (launcher/agent_streams.h).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/worker_environment.h"

namespace hvd::launcher {
class JobSession;
}  // namespace hvd::launcher

namespace hvd::launcher::elastic {

class HostLauncher {
 public:
  explicit HostLauncher(JobSession& session) : session_(session) {}

  // After the job's launch: every agent launched its plan's ranks, whose
  // workers bind `bind_addresses` (per agent).
  void launched(const std::vector<std::string>& bind_addresses);
  // Launches `process` (its launch rank) on `host` through the host's agent.
  common::Status launch(int process, const std::string& host, Environment env);

  // The agent serving `host`, when it has one yet.
  std::optional<size_t> agent_of(const std::string& host) const;
  // The hosts `agent` serves.
  std::vector<std::string> hosts_of(size_t agent) const;

 private:
  // The agent serving `host` (a remote host's agent is added on first use).
  common::Result<size_t> agent_for(const std::string& host);
  // Where the workers of `agent` bind, asked of a new agent first.
  common::Result<std::string> bind_address(size_t agent);

  JobSession& session_;
  std::map<std::string, size_t> host_agent_;  // host -> its agent
  std::vector<std::string> agent_bind_;       // per agent: its workers' bind address
  std::vector<bool> agent_launched_;          // per agent: a job was launched there
};

}  // namespace hvd::launcher::elastic
