#include "launcher/static_policy.h"

#include "daemon/rendezvous/rendezvous_service.h"
#include "launcher/agent_targets.h"
#include "launcher/exit_codes.h"
#include "launcher/host_agents.h"
#include "launcher/job_session.h"

namespace hvd::launcher {

StaticPolicy::StaticPolicy(JobSession& session)
    : session_(session),
      heartbeat_timeout_(session.options().settings.get_int("heartbeat_timeout_seconds")) {}

int StaticPolicy::slots() const { return static_cast<int>(session_.plan().size()); }

void StaticPolicy::tick(Clock::time_point now) {
  if (heartbeat_timeout_.count() == 0) return;
  std::vector<int> silent;
  for (int rank : session_.rendezvous().liveness().silent(heartbeat_timeout_, now)) {
    // An exited worker stops beating too; its exit event tells the story.
    if (!session_.exits().has_exited(rank)) silent.push_back(rank);
  }
  if (silent.empty()) return;
  std::string who;
  for (int rank : silent) {
    who += (who.empty() ? "" : ", ") + std::string("rank ") + std::to_string(rank) + " on host " +
           session_.plan()[static_cast<size_t>(rank)].host;
  }
  session_.end_job(exit_code::kWorkerUnresponsive,
                   who + " stopped responding: no heartbeat for " +
                       std::to_string(heartbeat_timeout_.count()) +
                       " s (the process is stopped or its host hangs or is unreachable; "
                       "HVD_HEARTBEAT_TIMEOUT_SECONDS); terminating the job");
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
