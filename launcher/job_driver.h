// Runs one job to its end and decides hvdrun's exit code. It reaches the
// job's agents (host_agents.h: the agent embedded in hvdrun for local hosts,
// the hvd-agent of each remote host) and asks each for Info, plans the
// network (job_network.h), starts the job's Rendezvous service, launches
// each host's ranks through its agent's gRPC API and watches every agent,
// then reacts to one queue of events: worker output (printed), worker exits,
// the end of a Watch stream (an agent lost while its ranks run ends the
// job), signals to hvdrun and the rendezvous start timeout. Whatever the
// outcome, every worker's process group is gone and the servers are shut
// down when run() returns. See exit_codes.h. start() and what it calls live
// in job_start.cc, the event loop in job_driver.cc.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hvd/v1/agent.pb.h"
#include "launcher/agent_credentials.h"
#include "launcher/agent_targets.h"
#include "launcher/cli.h"
#include "launcher/elastic/elastic_machine.h"
#include "launcher/job_events.h"
#include "launcher/output_hints.h"
#include "launcher/output_sink.h"
#include "launcher/slot_plan.h"
#include "launcher/worker_env.h"

namespace hvd::daemon {
class GrpcServer;
class RendezvousService;
}  // namespace hvd::daemon

namespace hvd::launcher {

class HostAgents;
namespace elastic {
class DiscoveryPoller;
}  // namespace elastic

class JobDriver {
 public:
  // `plan` comes from plan_slots(options.hosts, options.np), `targets` from
  // plan_agent_targets(plan, ...); `remote` is required when a target is
  // remote (remote_credentials()).
  JobDriver(const LaunchOptions& options, std::vector<RankSlot> plan,
            std::vector<AgentTarget> targets, std::optional<RemoteCredentials> remote);
  ~JobDriver();
  JobDriver(const JobDriver&) = delete;
  JobDriver& operator=(const JobDriver&) = delete;

  // hvdrun's exit code.
  int run();

 private:
  int start();      // agents, services, launch; an exit code when the job cannot start
  void print_plan();  // --verbose: hosts and ranks
  int launch(const std::string& job_token, const std::string& rendezvous_addr,
             const std::vector<std::string>& bind_addresses);
  int supervise();  // the event loop
  void handle(const WorkerExited& exit);
  // "rank R on host H exited with code C" / "was killed by signal N (NAME)".
  std::string describe_exit(const WorkerExited& exit) const;
  // The environment of the worker in `slot` whose agent binds `bind_address`.
  Environment worker_env(const RankSlot& slot, const std::string& bind_address) const;

  // Elastic jobs (job_elastic.cc): the state machine gets the events and
  // its actions are carried out here.
  void start_elastic();  // after the launch: the machine and the discovery poller
  void elastic_exit(const WorkerExited& exit);
  // A hot spare's process exited (a promoted one: its slot's worker).
  void spare_exit(const WorkerExited& exit);
  // The rank worker output is labelled with: a promoted spare's slot.
  int output_rank(int process) const;
  void elastic_agent_lost(size_t agent, const common::Status& why);
  void elastic_tick(std::chrono::steady_clock::time_point now);  // joins, silence, time
  void handle(const HostsDiscovered& found);
  void carry_out(elastic::Actions actions);
  common::Status start_worker(const elastic::StartWorker& start);
  common::Status start_spare(const elastic::StartSpare& start);
  // Launches `process` (its launch rank) on `host` through the host's agent.
  common::Status start_process(int process, const std::string& host, Environment env);
  // The agent serving `host` (a remote host's agent is added on first use).
  common::Result<size_t> agent_for(const std::string& host);
  std::string host_of(int rank) const;
  // The ranks (elastic: slots) the agent runs that have not exited.
  std::vector<int> running_on(size_t agent) const;
  // A Watch stream that ends while its agent's ranks still run: agent lost.
  void handle(const WatchEnded& end);
  // The first signal terminates the workers; a second one kills them.
  void handle(const SignalReceived& signal);
  // Notes which ranks have joined the first rendezvous so far.
  void track_joins();
  void check_start_timeout(std::chrono::steady_clock::time_point now);
  // Ranks that never joined the first rendezvous, once it is within `slack`
  // of its start timeout; empty when the rendezvous is complete or not due.
  std::vector<int> overdue_ranks(std::chrono::steady_clock::time_point now,
                                 std::chrono::milliseconds slack);
  void report_start_timeout(const std::vector<int>& missing);
  // Every kJoinProgressEvery while the first rendezvous waits: who joined,
  // who is missing where, how long of the start timeout has passed.
  void report_join_progress(std::chrono::steady_clock::time_point now);
  // A joined worker that sent no heartbeat for the heartbeat timeout (its
  // process stopped, its host hung) ends the job, named (daemon/liveness.h).
  void check_liveness(std::chrono::steady_clock::time_point now);
  // Names the failure that decides the job (see kFailureSettle) and
  // terminates the others.
  void report_failure();
  void finish(int code);   // records the job's exit code once
  void begin_terminate();  // Terminate on every agent on a thread; TerminateDone when done
  bool all_watches_ended() const;
  void shutdown();         // every exit path: workers gone, servers down
  void error_line(const std::string& message);

  const LaunchOptions& options_;
  const std::vector<RankSlot> plan_;
  std::vector<AgentTarget> targets_;
  std::optional<RemoteCredentials> remote_;
  const std::chrono::seconds start_timeout_;
  const std::chrono::seconds terminate_grace_;
  const std::chrono::seconds heartbeat_timeout_;  // 0: liveness not checked
  std::string job_id_;
  EventQueue queue_;
  OutputSink sink_;
  OutputHints hints_;

  std::unique_ptr<daemon::RendezvousService> rendezvous_;
  std::unique_ptr<daemon::GrpcServer> rendezvous_server_;
  std::unique_ptr<HostAgents> agents_;
  bool launched_ = false;  // the agents started the workers

  // Elastic jobs.
  std::unique_ptr<elastic::ElasticMachine> machine_;
  std::unique_ptr<elastic::DiscoveryPoller> poller_;
  std::map<std::string, size_t> host_agent_;  // host -> its agent
  std::vector<std::string> agent_bind_;       // per agent: its workers' bind address
  std::vector<bool> agent_launched_;          // per agent: a job was launched there
  std::vector<size_t> stream_agent_;          // Watch stream id -> agent
  std::vector<size_t> agent_stream_;          // agent -> its current stream id
  std::string last_discovery_error_;
  // What every worker's environment is built from (set by launch()).
  std::string job_token_;
  std::string rendezvous_addr_;
  std::string cwd_;
  Environment base_env_;
  Environment settings_env_;

  // Event-loop state (driver thread only).
  std::optional<int> exit_code_;
  std::vector<bool> exited_;
  int exited_count_ = 0;
  std::vector<bool> joined_once_;  // ranks seen in the first rendezvous
  std::optional<std::chrono::steady_clock::time_point> next_join_progress_;
  // Failures seen since the first one, while they settle.
  std::vector<WorkerExited> pending_failures_;
  std::optional<std::chrono::steady_clock::time_point> settle_deadline_;
  std::vector<bool> watch_ended_;  // per agent
  std::vector<bool> agent_lost_;   // per agent: its Watch ended while its ranks ran
  bool terminating_ = false;
  bool terminate_done_ = false;
  bool signalled_ = false;  // hvdrun received SIGINT/SIGTERM/SIGHUP
  std::atomic<int> first_signal_{0};  // set by the signal watcher; read while starting
  bool killed_ = false;     // a second signal escalated to SIGKILL
  std::thread terminator_;
  std::thread killer_;  // SIGKILL to every agent's workers after a second signal
};

}  // namespace hvd::launcher
