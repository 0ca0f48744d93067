// The policy of a static job (launcher/job_policy.h): its -np workers run
// from start to end. The job succeeds when every worker exited with 0; the
// first failure (job_exits.h: the one that decides among those that settle),
// a worker whose own Join timed out (the start timeout), an agent lost
// while its ranks run, or a joined worker that LivenessRule declares dead
// (late heartbeats while its process is stopped, or past the hung limit;
// launcher/liveness_rule.h) ends it, named. A late worker whose process
// runs is a warning.
#pragma once

#include <chrono>

#include "launcher/job_policy.h"
#include "launcher/liveness_rule.h"

namespace hvd::launcher {

class JobSession;

class StaticPolicy final : public JobPolicy {
 public:
  explicit StaticPolicy(JobSession& session);

  int slots() const override;
  void tick(Clock::time_point now) override;
  bool succeeded() const override;
  void worker_exited(const WorkerExited& exit) override;
  void agent_lost(size_t agent, const std::vector<int>& running,
                  const common::Status& why) override;
  std::vector<int> running_on(size_t agent) const override;
  void worker_state(const WorkerStateChanged& change) override;

 private:
  JobSession& session_;
  LivenessRule liveness_;  // timeout 0: liveness not checked
};

}  // namespace hvd::launcher
