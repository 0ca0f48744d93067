#include "launcher/static_policy.h"

#include <cstdio>

#include "daemon/rendezvous/rendezvous_service.h"
#include "launcher/agent_targets.h"
#include "launcher/exit_codes.h"
#include "launcher/host_agents.h"
#include "launcher/job_session.h"

namespace hvd::launcher {

StaticPolicy::StaticPolicy(JobSession& session)
    : session_(session), liveness_(liveness_limits(session.options().settings)) {}

int StaticPolicy::slots() const { return static_cast<int>(session_.plan().size()); }

void StaticPolicy::worker_state(const WorkerStateChanged& change) {
  liveness_.process_state(change.rank, change.stopped, Clock::now());
}

void StaticPolicy::tick(Clock::time_point now) {
  if (liveness_.timeout().count() == 0) return;
  const daemon::Liveness& heartbeats = session_.rendezvous().liveness();
  std::vector<LivenessRule::Late> late;
  for (int rank : heartbeats.silent(liveness_.timeout(), now)) {
    // An exited worker stops beating too; its exit event tells the story.
    if (session_.exits().has_exited(rank)) continue;
    if (auto quiet = heartbeats.quiet_for(rank, now)) late.push_back({rank, *quiet});
  }
  std::vector<std::pair<std::string, LivenessRule::Finding>> warnings;
  std::vector<std::pair<std::string, LivenessRule::Finding>> deaths;
  const size_t watched =
      session_.plan().size() - static_cast<size_t>(session_.exits().exited_count());
  for (LivenessRule::Finding& f : liveness_.review(late, now, watched)) {
    std::string who = "rank " + std::to_string(f.process) + " on host " +
                      session_.plan()[static_cast<size_t>(f.process)].host;
    (f.dead ? deaths : warnings).emplace_back(std::move(who), std::move(f));
  }
  const std::string dead = LivenessRule::death_message(deaths);
  for (const std::string& line : LivenessRule::warning_lines(warnings)) {
    std::fprintf(stderr, "hvdrun: warning: %s\n", line.c_str());
  }
  std::fflush(stderr);
  if (dead.empty()) return;
  session_.end_job(exit_code::kWorkerUnresponsive,
                   dead + "; HVD_HEARTBEAT_TIMEOUT_SECONDS=" +
                       std::to_string(liveness_.timeout().count()) + "; terminating the job");
}

bool StaticPolicy::succeeded() const {
  // A failure ends the job before the last exit: these all exited with 0.
  return session_.exits().exited_count() == slots();
}

void StaticPolicy::worker_exited(const WorkerExited& exit) {
  if (exit.exit_code == 0 && exit.signal == 0) return;
  session_.worker_failed(exit);
}

void StaticPolicy::agent_lost(size_t agent, const std::vector<int>& running,
                              const common::Status& why) {
  // A failure seen first decides the job; the lost agent still ends it.
  if (session_.report_failure()) {
    session_.note_stream_end(agent, why);
    return;
  }
  session_.end_job(exit_code::kAgentFailure,
                   "lost the agent on host " + session_.agents().target(agent).host + " (" +
                       describe_ranks(running) + "): " + why_stream_ended(why));
}

std::vector<int> StaticPolicy::running_on(size_t agent) const {
  std::vector<int> running;
  for (int rank : session_.agents().target(agent).ranks) {
    if (!session_.exits().has_exited(rank)) running.push_back(rank);
  }
  return running;
}

}  // namespace hvd::launcher
