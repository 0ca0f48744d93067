#include "daemon/agent/agent_metrics.h"

#include "common/prometheus_text.h"

namespace hvd::daemon {

namespace {

constexpr std::array<std::string_view, AgentMetrics::kRefusals.size() + 1> kRefusalNames = {
    "unauthenticated", "permission_denied", "resource_exhausted", "invalid_argument",
    "unimplemented", "other"};

}  // namespace

void AgentMetrics::exited(int exit_code, int signal) {
  bump(exits_[signal != 0 ? 2 : exit_code != 0 ? 1 : 0]);
}

void AgentMetrics::output(bool is_stderr, size_t bytes) {
  bump(output_bytes_[is_stderr ? 1 : 0], static_cast<int64_t>(bytes));
}

void AgentMetrics::refused(grpc::StatusCode code) {
  size_t i = 0;
  while (i < kRefusals.size() && kRefusals[i] != code) ++i;
  bump(refused_[i]);
}

std::string AgentMetrics::render() const {
  auto get = [](const std::atomic<int64_t>& c) {
    return static_cast<double>(c.load(std::memory_order_relaxed));
  };
  common::PrometheusText out;
  double exited = 0;
  for (const auto& e : exits_) exited += get(e);
  out.family("hvd_agent_processes_started_total", "counter", "Worker processes the agent started");
  out.sample("hvd_agent_processes_started_total", {}, get(started_));
  out.family("hvd_agent_processes_running", "gauge", "Worker processes started and not exited");
  out.sample("hvd_agent_processes_running", {}, get(started_) - exited);
  out.family("hvd_agent_exits_total", "counter", "Worker exits by cause");
  out.sample("hvd_agent_exits_total", {{"cause", "success"}}, get(exits_[0]));
  out.sample("hvd_agent_exits_total", {{"cause", "exit_code"}}, get(exits_[1]));
  out.sample("hvd_agent_exits_total", {{"cause", "signal"}}, get(exits_[2]));
  out.family("hvd_agent_refused_calls_total", "counter", "Calls the agent refused, by reason");
  for (size_t i = 0; i < refused_.size(); ++i) {
    out.sample("hvd_agent_refused_calls_total", {{"reason", std::string(kRefusalNames[i])}},
               get(refused_[i]));
  }
  out.family("hvd_agent_output_bytes_total", "counter",
             "Bytes of worker output lines the agent read, by stream");
  out.sample("hvd_agent_output_bytes_total", {{"stream", "stdout"}}, get(output_bytes_[0]));
  out.sample("hvd_agent_output_bytes_total", {{"stream", "stderr"}}, get(output_bytes_[1]));
  return out.text();
}

}  // namespace hvd::daemon
