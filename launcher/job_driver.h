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
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "hvd/v1/agent.pb.h"
#include "launcher/agent_credentials.h"
#include "launcher/agent_targets.h"
#include "launcher/cli.h"
#include "launcher/job_events.h"
#include "launcher/output_sink.h"
#include "launcher/slot_plan.h"

namespace hvd::daemon {
class GrpcServer;
class RendezvousService;
}  // namespace hvd::daemon

namespace hvd::launcher {

class HostAgents;

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
  // Elastic jobs (job_replace.cc): starts a failed worker again on its host;
  // true when the exit is dealt with (replaced, or the job ends: reset limit
  // used up, the replacement could not start).
  bool replace(const WorkerExited& exit);
  // Elastic jobs: a worker finished with 0 and every worker still running is
  // a replacement that never joined a round (the job is done without it).
  bool elastic_finished();
  // Elastic jobs: SIGKILL to workers that stopped answering (their exits
  // come back as events and are replaced).
  void kill_silent(const std::vector<int>& ranks);
  // "rank R on host H exited with code C" / "was killed by signal N (NAME)".
  std::string describe_exit(const WorkerExited& exit) const;
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

  std::unique_ptr<daemon::RendezvousService> rendezvous_;
  std::unique_ptr<daemon::GrpcServer> rendezvous_server_;
  std::unique_ptr<HostAgents> agents_;
  bool launched_ = false;  // the agents started the workers
  std::vector<hvd::v1::LaunchRequest> launched_requests_;  // per agent, for replacements
  int resets_ = 0;         // replacements started (elastic jobs)
  int succeeded_count_ = 0;  // workers that exited with 0
  std::set<int> unjoined_replacements_;  // replacements not seen in a round yet

  // Event-loop state (driver thread only).
  std::optional<int> exit_code_;
  std::vector<bool> exited_;
  int exited_count_ = 0;
  std::vector<bool> joined_once_;  // ranks seen in the first rendezvous
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
