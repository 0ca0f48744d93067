// Runs one job to its end and decides hvdrun's exit code. It starts the
// job's Rendezvous service and the embedded Agent (each a gRPC server on
// 127.0.0.1), launches every rank through the Agent's gRPC API, then reacts
// to one queue of events: worker output (printed), worker exits, the end of
// the Watch stream, signals to hvdrun and the rendezvous start timeout.
// Whatever the outcome, every worker's process group is gone and the
// servers are shut down when run() returns. See exit_codes.h.
#pragma once

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "launcher/agent_client.h"
#include "launcher/cli.h"
#include "launcher/job_events.h"
#include "launcher/output_sink.h"
#include "launcher/slot_plan.h"

namespace hvd::daemon {
class AgentService;
class GrpcServer;
class RendezvousService;
}  // namespace hvd::daemon

namespace hvd::launcher {

class JobDriver {
 public:
  // `plan` comes from plan_slots(options.hosts, options.np); every host in it
  // must be this machine.
  JobDriver(const LaunchOptions& options, std::vector<RankSlot> plan);
  ~JobDriver();
  JobDriver(const JobDriver&) = delete;
  JobDriver& operator=(const JobDriver&) = delete;

  // hvdrun's exit code.
  int run();

 private:
  int start();      // services, launch; an exit code when the job cannot start
  int supervise();  // the event loop
  void handle(const WorkerExited& exit);
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
  // Names the failure that decides the job (see kFailureSettle) and
  // terminates the others.
  void report_failure();
  void finish(int code);   // records the job's exit code once
  void begin_terminate();  // Agent.Terminate on a thread; TerminateDone when done
  void shutdown();         // every exit path: workers gone, servers down
  void error_line(const std::string& message);

  const LaunchOptions& options_;
  const std::vector<RankSlot> plan_;
  const std::chrono::seconds start_timeout_;
  const std::chrono::seconds terminate_grace_;
  std::string job_id_;
  EventQueue queue_;
  OutputSink sink_;

  std::unique_ptr<daemon::RendezvousService> rendezvous_;
  std::unique_ptr<daemon::GrpcServer> rendezvous_server_;
  std::unique_ptr<daemon::AgentService> agent_;
  std::unique_ptr<daemon::GrpcServer> agent_server_;
  std::unique_ptr<AgentClient> client_;

  // Event-loop state (driver thread only).
  std::optional<int> exit_code_;
  std::vector<bool> exited_;
  int exited_count_ = 0;
  std::vector<bool> joined_once_;  // ranks seen in the first rendezvous
  // Failures seen since the first one, while they settle.
  std::vector<WorkerExited> pending_failures_;
  std::optional<std::chrono::steady_clock::time_point> settle_deadline_;
  bool watch_ended_ = false;
  bool terminating_ = false;
  bool terminate_done_ = false;
  bool signalled_ = false;  // hvdrun received SIGINT/SIGTERM/SIGHUP
  bool killed_ = false;     // a second signal escalated to SIGKILL
  std::thread terminator_;
};

}  // namespace hvd::launcher
