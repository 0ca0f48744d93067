// What differs between a static job and an elastic one, for the job
// session (launcher/job_session.h: the agents, the rendezvous, the output
// and the exit decision every job has). The session calls its policy on
// its own thread:
//  - StaticPolicy (launcher/static_policy.h): -np workers for the whole
//    job; the first failure, a lost agent or a silent worker ends it.
//  - elastic::ElasticPolicy (launcher/elastic/elastic_policy.h): workers
//    come and go between --min-np and --max-np as the elastic state machine
//    decides (docs/elastic.md).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "launcher/job_events.h"
#include "launcher/worker_env.h"

namespace hvd::daemon {
class RendezvousService;
}  // namespace hvd::daemon

namespace hvd::launcher {

class JobPolicy {
 public:
  using Clock = std::chrono::steady_clock;

  virtual ~JobPolicy() = default;

  // The job's slots: HVD_SIZE, the per-rank log folders, the slots whose
  // exits are tracked (-np; elastic: up to --max-np).
  virtual int slots() const = 0;
  // The rendezvous service, before it serves.
  virtual void configure(daemon::RendezvousService& /*rendezvous*/) {}
  // What every worker's environment adds to the common one.
  virtual void add_env(Environment& /*env*/) const {}
  // Every agent launched its ranks; per agent, where its workers bind.
  virtual void launched(const std::vector<std::string>& /*bind_addresses*/) {}

  // Time passed (about every 100 ms), while the job is not terminating and
  // no failure settles.
  virtual void tick(Clock::time_point now) = 0;
  // Checked after tick(): the job is over and succeeded.
  virtual bool succeeded() const = 0;
  // Process `exit.rank` exited. True when it was the policy's own (an
  // elastic job's hot spare), not a slot's worker; a promoted spare's exit
  // becomes its slot's worker's (exit.rank is rewritten).
  virtual bool take_spare_exit(WorkerExited& /*exit*/) { return false; }
  // A slot's worker exited while the job is not terminating.
  virtual void worker_exited(const WorkerExited& exit) = 0;
  // A process (a worker or a spare, by its launch rank) stopped or runs
  // again (its agent's sample of /proc), while the job is not terminating.
  virtual void worker_state(const WorkerStateChanged& /*change*/) {}
  // The current Watch stream of `agent` ended while `running` of its
  // processes had not exited (running_on), the job not terminating.
  virtual void agent_lost(size_t agent, const std::vector<int>& running,
                          const common::Status& why) = 0;
  // A run of the host discovery script, while the job is not terminating.
  virtual void hosts_discovered(const HostsDiscovered& /*found*/) {}

  // The processes on `agent` that have not exited.
  virtual std::vector<int> running_on(size_t agent) const = 0;
  // The host of process `process`; empty when the policy does not know
  // (the session then looks in the plan).
  virtual std::string host_of(int /*process*/) const { return {}; }
  virtual bool is_spare(int /*process*/) const { return false; }
  // Hosts blacklisted at `now` and how long their cooldown lasts still
  // (elastic jobs; for hvdrun's /metrics).
  virtual std::vector<std::pair<std::string, Clock::duration>> blacklisted(
      Clock::time_point /*now*/) const {
    return {};
  }
  // The rank whose output `process` writes.
  virtual int output_rank(int process) const { return process; }
  // The session shuts down: threads of the policy end.
  virtual void stop() {}
};

}  // namespace hvd::launcher
