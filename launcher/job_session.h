// One job, run to its end: what every job has — its agents (host_agents.h:
// the agent embedded in hvdrun for local hosts, the hvd-agent of each
// remote host), its rendezvous service, the workers' output and the
// decision of hvdrun's exit code (exit_codes.h) — with a policy for what
// differs between a static and an elastic job (job_policy.h).
//
// run() asks every agent for Info, plans the network (job_network.h),
// starts the rendezvous, launches each host's ranks through its agent and
// watches every agent, then reacts to one queue of events: worker output
// (printed), worker exits, the end of a Watch stream, signals to hvdrun,
// discovery results, and the clock (the start timeout of the first
// rendezvous; the policy's checks). Whatever the
// outcome, every worker's process group is gone and the servers are shut
// down when run() returns.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/agent_credentials.h"
#include "launcher/agent_streams.h"
#include "launcher/agent_targets.h"
#include "launcher/cli.h"
#include "launcher/first_round.h"
#include "launcher/job_events.h"
#include "launcher/job_exits.h"
#include "launcher/job_monitor.h"
#include "launcher/job_extension.h"
#include "launcher/job_policy.h"
#include "launcher/output_hints.h"
#include "launcher/output_sink.h"
#include "launcher/slot_plan.h"
#include "launcher/terminator.h"
#include "launcher/worker_environment.h"

namespace hvd::daemon {
class GrpcServer;
class RendezvousService;
}  // namespace hvd::daemon

namespace hvd::launcher {

class HostAgents;
class MetricsExporter;

class JobSession {
 public:
  // Makes the job's policy while the session is constructed: it may keep
  // the session (which outlives it) and read options() and plan(), no more.
  using PolicyFactory = std::function<std::unique_ptr<JobPolicy>(JobSession&)>;

  // `plan` comes from plan_slots(options.hosts, options.np), `targets` from
  // plan_agent_targets(plan, ...); `remote` is required when a target is
  // remote (remote_credentials()).
  JobSession(const LaunchOptions& options, std::vector<RankSlot> plan,
             std::vector<AgentTarget> targets, std::optional<RemoteCredentials> remote,
             const PolicyFactory& make_policy);
  ~JobSession();
  JobSession(const JobSession&) = delete;
  JobSession& operator=(const JobSession&) = delete;

  // hvdrun's exit code.
  int run();

  // For the policy while it is constructed: `extension` (the policy
  // itself, which the session owns) adds to the session what only an
  // elastic job has (job_extension.h).
  void extend(JobExtension& extension) { extension_ = &extension; }

  // For the policy, on the session's thread, once run() has started the job.
  const LaunchOptions& options() const { return options_; }
  const std::vector<RankSlot>& plan() const { return plan_; }
  const std::string& job_id() const { return job_id_; }
  const std::string& cwd() const { return base_.cwd; }
  EventQueue& queue() { return queue_; }
  HostAgents& agents() { return *agents_; }
  const HostAgents& agents() const { return *agents_; }
  AgentStreams& streams() { return streams_; }
  daemon::RendezvousService& rendezvous() { return *rendezvous_; }
  JobExits& exits() { return exits_; }
  const JobExits& exits() const { return exits_; }
  bool terminating() const { return stop_.terminating(); }
  // The environment of the worker in `slot` whose agent binds `bind_address`.
  Environment worker_env(const RankSlot& slot, const std::string& bind_address) const;
  // "rank R on host H exited with code C" / "was killed by signal N (NAME)".
  std::string describe_exit(const WorkerExited& exit) const;
  // A failed worker (static jobs): the start timeout when its own Join
  // timed out, else a failure that settles (job_exits.h).
  void worker_failed(const WorkerExited& exit);
  // Ends the job with the failure that settled, if any: true when it did.
  bool report_failure();
  // Ends the job: `error` (when not empty) printed, `code` recorded, every
  // agent's workers terminated.
  void end_job(int code, const std::string& error);
  // The stream of `agent` ended while the job was ending already.
  void note_stream_end(size_t agent, const common::Status& why) const;

 private:
  // What every worker's environment is built from (set by launch()).
  struct WorkerBase {
    std::string job_token;
    std::string rendezvous_addr;
    std::string cwd;
    Environment env;       // hvdrun's
    Environment settings;  // the resolved settings
  };

  int start();  // agents, services, launch; an exit code when the job cannot start
  void print_plan();  // --verbose: hosts and ranks
  int launch(const std::string& job_token, const std::string& rendezvous_addr,
             const std::vector<std::string>& bind_addresses);
  int supervise();  // the event loop
  void handle(WorkerExited exit);
  void handle(const WatchEnded& end);
  // The first signal terminates the workers; a second one kills them.
  void handle(const SignalReceived& signal);
  void handle(const WorkerOutput& out);
  void check_start_timeout(std::chrono::steady_clock::time_point now);
  // --metrics-port: the exporter started (an exit code when it cannot be).
  int start_metrics();
  // The monitor's view of the slots and spares, at most every 250 ms.
  void refresh_monitor(std::chrono::steady_clock::time_point now);
  std::string host_of(int process) const;
  void shutdown();  // every exit path: workers gone, servers down
  static void error_line(const std::string& message);  // "hvdrun: error: MESSAGE"

  const LaunchOptions& options_;
  const std::vector<RankSlot> plan_;
  std::vector<AgentTarget> targets_;
  std::optional<RemoteCredentials> remote_;
  std::string job_id_;
  EventQueue queue_;
  OutputSink sink_;
  OutputHints hints_;
  WorkerBase base_;
  JobExtension no_extension_;                 // a static job's: the defaults
  JobExtension* extension_ = &no_extension_;  // before policy_, which may set it
  std::unique_ptr<JobPolicy> policy_;         // before what is sized by its slots()

  std::unique_ptr<daemon::RendezvousService> rendezvous_;
  std::unique_ptr<daemon::GrpcServer> rendezvous_server_;
  FirstRound first_round_;
  std::unique_ptr<HostAgents> agents_;
  AgentStreams streams_;
  bool launched_ = false;  // the agents started the workers

  JobExits exits_;
  std::unique_ptr<JobMonitor> monitor_;          // --metrics-port only
  std::unique_ptr<MetricsExporter> metrics_;     // after monitor_, which it reads
  std::chrono::steady_clock::time_point monitor_refreshed_{};
  Terminator stop_;
  int signals_ = 0;                   // SIGINT/SIGTERM/SIGHUP received
  std::atomic<int> first_signal_{0};  // set by the signal watcher; read while starting
};

}  // namespace hvd::launcher
