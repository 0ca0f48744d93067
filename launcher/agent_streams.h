// The Watch streams of a job's agents (launcher/host_agents.h), for the job
// session. Streams are numbered in the order they are opened (the number
// is WatchEnded::agent): the job's first streams are agent i's stream i;
// an elastic job opens another when an agent gets a job of its own. An
// agent's current stream is its latest; the end of an older one is of no
// consequence. An agent is lost when its current stream ended while its
// workers ran (Terminate then gives it less time).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace hvd::launcher {

// Why an agent is lost, for the user: the stream's error, or that it ended
// (normally) before the agent's workers exited.
std::string why_stream_ended(const common::Status& status);

class AgentStreams {
 public:
  // The job's `agents` agents, each watched through its first stream
  // (stream i is agent i's); none lost.
  void start(size_t agents);
  // An agent added to the job (elastic): no stream yet (as if ended).
  void add_agent();
  // A new stream for `agent`, replacing its current one: its number.
  int open(size_t agent);
  // Stream `stream` ended: its agent, when it is that agent's current one.
  std::optional<size_t> end(int stream);

  void mark_lost(size_t agent) { agents_[agent].lost = true; }
  bool lost(size_t agent) const { return agents_[agent].lost; }
  // The agent's current stream ended (or it has none).
  bool ended(size_t agent) const { return agents_[agent].ended; }
  bool all_ended() const;
  // Per agent: lost (for HostAgents::terminate_all).
  std::vector<bool> lost_agents() const;

 private:
  static constexpr size_t kNone = static_cast<size_t>(-1);
  struct Agent {
    size_t stream = kNone;  // its current stream
    bool ended = false;
    bool lost = false;
  };
  std::vector<Agent> agents_;
  std::vector<size_t> stream_agent_;  // stream -> agent
};

}  // namespace hvd::launcher
