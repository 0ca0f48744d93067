// hvd-agent's counters for its /metrics (hvd-agent --metrics-port;
// docs/metrics.md): processes started and running, exits by cause, calls
// refused by reason, output bytes by stream. The service's threads bump
// relaxed atomics; the metrics server's thread renders them.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include <grpcpp/support/status.h>

namespace hvd::daemon {

class AgentMetrics {
 public:
  enum class Exit { kSuccess, kExitCode, kSignal };
  // Why a call was refused: the gRPC code of the refusal.
  static constexpr std::array<grpc::StatusCode, 5> kRefusals = {
      grpc::StatusCode::UNAUTHENTICATED, grpc::StatusCode::PERMISSION_DENIED,
      grpc::StatusCode::RESOURCE_EXHAUSTED, grpc::StatusCode::INVALID_ARGUMENT,
      grpc::StatusCode::UNIMPLEMENTED};

  void started() { bump(started_); }
  void exited(int exit_code, int signal);
  void output(bool is_stderr, size_t bytes);
  // A refused call (any other code counts as "other").
  void refused(grpc::StatusCode code);

  // The counters in Prometheus' text format.
  std::string render() const;

 private:
  static void bump(std::atomic<int64_t>& c, int64_t by = 1) {
    c.fetch_add(by, std::memory_order_relaxed);
  }
  std::atomic<int64_t> started_{0};
  std::array<std::atomic<int64_t>, 3> exits_{};
  std::array<std::atomic<int64_t>, 2> output_bytes_{};          // stdout, stderr
  std::array<std::atomic<int64_t>, kRefusals.size() + 1> refused_{};  // the last: other
};

}  // namespace hvd::daemon
