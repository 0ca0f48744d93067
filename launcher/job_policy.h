// What differs between a static job and an elastic one, for the job
// session (launcher/job_session.h: the agents, the rendezvous, the output
// and the exit decision every job has): what every policy decides. What
// only an elastic job has (hot spares, discovered and blacklisted hosts,
// the rendezvous' elastic rounds) is a JobExtension (job_extension.h) that
// its policy registers with the session. The session calls its policy on
// its own thread:
//  - StaticPolicy (launcher/static_policy.h): -np workers for the whole
//    job; the first failure, a lost agent or a silent worker ends it.
//  - elastic::ElasticPolicy (launcher/elastic/elastic_policy.h): workers
//    come and go between --min-np and --max-np as the elastic state machine
//    decides (docs/elastic.md).
#pragma once

#include <chrono>
#include <cstddef>
#include <vector>

#include "common/status.h"
#include "launcher/job_events.h"

namespace hvd::launcher {

class JobPolicy {
 public:
  using Clock = std::chrono::steady_clock;

  virtual ~JobPolicy() = default;

  // The job's slots: HVD_SIZE, the per-rank log folders, the slots whose
  // exits are tracked (-np; elastic: up to --max-np).
  virtual int slots() const = 0;
  // Time passed (about every 100 ms), while the job is not terminating and
  // no failure settles.
  virtual void tick(Clock::time_point now) = 0;
  // Checked after tick(): the job is over and succeeded.
  virtual bool succeeded() const = 0;
  // A slot's worker exited while the job is not terminating.
  virtual void worker_exited(const WorkerExited& exit) = 0;
  // A process (a worker or a spare, by its launch rank) stopped or runs
  // again (its agent's sample of /proc), while the job is not terminating.
  virtual void worker_state(const WorkerStateChanged& change) = 0;
  // The current Watch stream of `agent` ended while `running` of its
  // processes had not exited (running_on), the job not terminating.
  virtual void agent_lost(size_t agent, const std::vector<int>& running,
                          const common::Status& why) = 0;
  // The processes on `agent` that have not exited.
  virtual std::vector<int> running_on(size_t agent) const = 0;
};

}  // namespace hvd::launcher
