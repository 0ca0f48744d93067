// The agents of one job, one per AgentTarget (agent_targets.h): the agent
// embedded in hvdrun (started here on 127.0.0.1 with a fresh secret, serving
// every local host) and a client of the hvd-agent of each remote host.
// Calls that concern every agent run on all of them in parallel.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "hvd/v1/agent.pb.h"
#include "launcher/agent_client.h"
#include "launcher/agent_credentials.h"
#include "launcher/agent_targets.h"
#include "launcher/job_events.h"

namespace hvd::daemon {
class AgentService;
class GrpcServer;
}  // namespace hvd::daemon

namespace hvd::launcher {

class HostAgents {
 public:
  using milliseconds = std::chrono::milliseconds;

  // Starts the embedded agent when a target is local (reporting
  // `local_slots` in Info); remote clients are only constructed: nothing
  // connects before the first call. `remote` is required when a target is
  // remote (kInvalidArgument otherwise).
  static common::Result<std::unique_ptr<HostAgents>> start(
      std::vector<AgentTarget> targets, const std::optional<RemoteCredentials>& remote,
      int local_slots);
  ~HostAgents();
  HostAgents(const HostAgents&) = delete;
  HostAgents& operator=(const HostAgents&) = delete;

  size_t size() const { return targets_.size(); }
  // The embedded agent's target has its 127.0.0.1:PORT address filled in.
  const AgentTarget& target(size_t agent) const { return targets_[agent]; }
  const std::vector<AgentTarget>& targets() const { return targets_; }
  AgentClient& client(size_t agent) { return *clients_[agent]; }
  // The same client, for a call made off the driver thread: it stays valid
  // for the holder even when reconnect() replaces the agent's client.
  std::shared_ptr<AgentClient> shared_client(size_t agent) { return clients_[agent]; }

  // Info of every agent, each waiting up to `timeout` for its agent to be
  // reachable. The error is one line for the user about the first agent (in
  // target order) that failed: "cannot reach the agent on host h2
  // (h2:29470) within 30 s: ..." (kUnavailable) or "the agent on host h2
  // refused the credentials (check --secret-file/TLS): ..." (kUnauthenticated).
  // The first failure ends the wait for the others. `cancelled` is polled
  // about once a second while waiting; when it turns true the result is
  // kCancelled.
  common::Result<std::vector<hvd::v1::InfoReply>> info_all(
      std::chrono::seconds timeout, const std::function<bool()>& cancelled = [] { return false; });

  // requests[i] on agent i. When any fails, the agents that started their
  // workers terminate them (`grace`) and the first failure in target order
  // is returned with the agent's code (kNotFound / kFailedPrecondition: the
  // command cannot be found / executed); a remote host's message ends with
  // " on host H".
  common::Status launch_all(const std::vector<hvd::v1::LaunchRequest>& requests,
                            milliseconds timeout, milliseconds grace);

  // Starts every agent's Watch reader: WatchEnded{status, agent index}.
  void watch_all(const std::string& job_id, EventQueue& queue);

  // Elastic jobs (launcher/elastic/host_launcher.cc). A client for the
  // hvd-agent at `target` (remote; kInvalidArgument without credentials):
  // its index.
  common::Result<size_t> add_remote(AgentTarget target);
  // A fresh client for `agent` (its Watch reader is gone: the agent was lost
  // or its workers all exited), so that a new Watch can be read.
  void renew(size_t agent);
  // The job id the agent's next Launch of a new job uses; later
  // terminate_all/signal_all calls reach that job too.
  void add_job(size_t agent, const std::string& job_id);
  // The job ids launched on the agent (the first is the job's own id).
  std::vector<std::string> jobs(size_t agent, const std::string& job_id) const;

  // Terminate on every agent; agents marked in `lost` (may be empty) get
  // `lost_timeout` instead of `timeout`, and their errors are only logged.
  // The process groups that needed SIGKILL, or the first error.
  common::Result<int> terminate_all(const std::string& job_id, milliseconds grace,
                                    milliseconds timeout, const std::vector<bool>& lost,
                                    milliseconds lost_timeout);

  // Signal on every agent; the first error.
  common::Status signal_all(const std::string& job_id, int signo, milliseconds timeout);

  // Stops the Watch readers, then the embedded agent (its workers get
  // `grace`); calls after this fail without waiting. Idempotent.
  void shutdown(milliseconds grace);

 private:
  explicit HostAgents(std::vector<AgentTarget> targets);
  common::Status describe_info_failure(size_t agent, const common::Status& status,
                                       std::chrono::seconds timeout) const;

  std::unique_ptr<AgentClient> make_client(const AgentTarget& target) const;

  std::vector<AgentTarget> targets_;
  std::vector<std::shared_ptr<AgentClient>> clients_;
  std::optional<RemoteCredentials> remote_;
  std::string embedded_secret_;
  std::vector<std::vector<std::string>> extra_jobs_;  // per agent, beyond the job's own id
  std::unique_ptr<daemon::AgentService> embedded_;
  std::unique_ptr<daemon::GrpcServer> embedded_server_;
};

}  // namespace hvd::launcher
