#include "launcher/terminator.h"

#include <signal.h>

#include "common/logging.h"
#include "launcher/host_agents.h"

namespace hvd::launcher {

namespace {

using std::chrono::milliseconds;

// Deadline of Signal calls.
constexpr milliseconds kSignalTimeout{5'000};
// Terminate may take the grace period; the call gets this much on top.
constexpr milliseconds kTerminateSlack{10'000};
// An agent whose Watch stream failed may be gone: its Terminate gets this long.
constexpr milliseconds kLostAgentTimeout{2'000};

}  // namespace

void Terminator::begin(HostAgents& agents, const std::string& job_id, std::vector<bool> lost,
                       EventQueue& queue) {
  if (terminating_) return;
  terminating_ = true;
  terminator_ = std::thread([this, &agents, &job_id, &queue, lost = std::move(lost)] {
    auto killed = agents.terminate_all(job_id, grace_, grace_ + kTerminateSlack, lost,
                                       kLostAgentTimeout);
    if (killed.is_ok() && *killed > 0) {
      spdlog::info("{} worker process groups needed SIGKILL", *killed);
    }
    queue.push(TerminateDone{killed.status()});
  });
}

void Terminator::kill(HostAgents& agents, const std::string& job_id) {
  killer_ = std::thread([&agents, &job_id] {
    common::Status s = agents.signal_all(job_id, SIGKILL, kSignalTimeout);
    if (!s.is_ok()) spdlog::warn("killing the workers: {}", s.to_string());
  });
}

void Terminator::terminate_now(HostAgents& agents, const std::string& job_id,
                               const std::vector<bool>& lost) {
  if (terminating_) return;
  // Nothing should be left on this path; Terminate makes sure of it (and
  // takes any grandchild still in a worker's process group with it).
  terminating_ = true;
  auto killed = agents.terminate_all(job_id, grace_, grace_ + kTerminateSlack, lost,
                                     kLostAgentTimeout);
  if (!killed.is_ok()) spdlog::debug("final terminate: {}", killed.status().to_string());
}

void Terminator::join() {
  if (terminator_.joinable()) terminator_.join();
  if (killer_.joinable()) killer_.join();
}

}  // namespace hvd::launcher
