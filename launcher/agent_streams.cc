#include "launcher/agent_streams.h"

#include <algorithm>

namespace hvd::launcher {

std::string why_stream_ended(const common::Status& status) {
  return status.is_ok() ? "its event stream ended before the workers exited" : status.message();
}

void AgentStreams::start(size_t agents) {
  agents_.assign(agents, Agent{});
  stream_agent_.clear();
  for (size_t a = 0; a < agents; ++a) {
    agents_[a].stream = a;
    stream_agent_.push_back(a);
  }
}

void AgentStreams::add_agent() { agents_.push_back(Agent{kNone, /*ended=*/true, false}); }

int AgentStreams::open(size_t agent) {
  agents_[agent] = Agent{stream_agent_.size(), false, false};
  stream_agent_.push_back(agent);
  return static_cast<int>(agents_[agent].stream);
}

std::optional<size_t> AgentStreams::end(int stream) {
  const auto s = static_cast<size_t>(stream);
  if (s >= stream_agent_.size()) return std::nullopt;
  const size_t agent = stream_agent_[s];
  if (agents_[agent].stream != s) return std::nullopt;  // an earlier stream of that agent
  agents_[agent].ended = true;
  return agent;
}

bool AgentStreams::all_ended() const {
  return std::all_of(agents_.begin(), agents_.end(), [](const Agent& a) { return a.ended; });
}

std::vector<bool> AgentStreams::lost_agents() const {
  std::vector<bool> lost;
  for (const Agent& a : agents_) lost.push_back(a.lost);
  return lost;
}

}  // namespace hvd::launcher
