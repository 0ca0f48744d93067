// The policy of an elastic job (docs/elastic.md; launcher/job_policy.h,
// launcher/job_extension.h):
// the events of the job feed the elastic state machine (elastic_machine.h)
// and its actions are carried out here — workers and hot spares started
// through their host's agent (host_launcher.h), stopped with SIGKILL, the
// rendezvous told which slots are gone and which spare takes a slot, lines
// printed, the job ended. With --host-discovery-script the script runs
// every --discovery-interval (discovery_poller.h) and its hosts go to the
// machine. Workers are known by their slot (HVD_RANK, below HVD_SIZE =
// --max-np), spares by their id (HVD_SPARE).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "launcher/elastic/background_calls.h"
#include "launcher/elastic/elastic_machine.h"
#include "launcher/elastic/host_launcher.h"
#include "launcher/state_loss.h"
#include "launcher/job_extension.h"
#include "launcher/job_policy.h"
#include "launcher/liveness_rule.h"

namespace hvd::launcher {
class JobSession;
}  // namespace hvd::launcher

namespace hvd::launcher::elastic {

class DiscoveryPoller;

// Both the job's policy and its extension (job_extension.h): the
// constructor registers it with the session.
class ElasticPolicy final : public JobPolicy, public JobExtension {
 public:
  using Clock = JobPolicy::Clock;

  explicit ElasticPolicy(JobSession& session);
  ~ElasticPolicy() override;

  int slots() const override;
  void configure(daemon::RendezvousService& rendezvous) override;
  void add_env(Environment& env) const override;
  // The machine and the discovery poller start.
  void launched(const std::vector<std::string>& bind_addresses) override;
  // Joins (a worker's Join returned), spares waiting in hvd.init(), late
  // workers (LivenessRule: dead ones are replaced, running ones warned of),
  // then the machine's clock.
  void tick(Clock::time_point now) override;
  bool succeeded() const override { return false; }  // the machine ends the job
  bool take_spare_exit(WorkerExited& exit) override;
  bool holds_slot(int process) const override;
  void worker_exited(const WorkerExited& exit) override;
  // A worker or spare stopped or runs again: the machine gives up one that
  // stays stopped before it joins a round.
  void worker_state(const WorkerStateChanged& change) override;
  void agent_lost(size_t agent, const std::vector<int>& running,
                  const common::Status& why) override;
  void hosts_discovered(const HostsDiscovered& found) override;
  // The live slots and spares on the agent's hosts.
  std::vector<int> running_on(size_t agent) const override;
  std::string host_of(int process) const override;
  bool is_spare(int process) const override;
  // A promoted spare's output is labelled with its slot.
  int output_rank(int process) const override;
  std::vector<std::pair<std::string, Clock::duration>> blacklisted(
      Clock::time_point now) const override;
  void stop() override;

 private:
  void carry_out(Actions actions);
  // Silent members judged by liveness_: replaced when dead, else warned of.
  void late_workers(Clock::time_point now);
  common::Status start_worker(const StartWorker& start);
  common::Status start_spare(const StartSpare& start);
  void stop_worker(const StopWorker& stop);
  // SIGKILL to `process` (a launch rank) on `host`, off the driver thread.
  void stop_process(int process, const std::string& host);

  JobSession& session_;
  const std::chrono::seconds heartbeat_timeout_;  // 0: liveness not checked
  LivenessRule liveness_;                         // late members: warned or dead
  std::unique_ptr<ElasticMachine> machine_;       // from launched() on
  std::unique_ptr<DiscoveryPoller> poller_;
  HostLauncher hosts_;
  BackgroundCalls stops_;  // Signals stopping workers (stop_worker); joined in stop()
  std::string last_discovery_error_;
  OnStateLoss on_state_loss_ = OnStateLoss::kRestart;  // the setting, read in launched()
};

}  // namespace hvd::launcher::elastic
