#include "launcher/launch_requests.h"

namespace hvd::launcher {

std::chrono::milliseconds job_orphan_grace(const config::Settings& settings) {
  return std::chrono::seconds(settings.get_int("heartbeat_timeout_seconds"));
}

std::vector<hvd::v1::LaunchRequest> launch_requests(
    const std::string& job_id, const std::vector<AgentTarget>& targets,
    const std::vector<Environment>& envs, const std::vector<std::string>& command,
    const std::string& cwd, std::chrono::milliseconds orphan_grace) {
  std::vector<hvd::v1::LaunchRequest> requests;
  for (const AgentTarget& target : targets) {
    hvd::v1::LaunchRequest& request = requests.emplace_back();
    request.set_job_id(job_id);
    if (orphan_grace.count() > 0) request.set_orphan_grace_ms(orphan_grace.count());
    for (int rank : target.ranks) {
      auto* worker = request.add_workers();
      worker->set_rank(rank);
      for (const auto& arg : command) worker->add_argv(arg);
      const Environment& env = envs.at(static_cast<size_t>(rank));
      worker->mutable_env()->insert(env.begin(), env.end());
      worker->set_cwd(cwd);
    }
  }
  return requests;
}

}  // namespace hvd::launcher
