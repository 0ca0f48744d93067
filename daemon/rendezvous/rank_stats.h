// The op counters each worker's heartbeat carries (HeartbeatRequest.stats,
// hvdrun --metrics-port; docs/metrics.md), kept per slot for hvdrun's
// /metrics: the latest report of each slot and when it came, with the
// commit it holds (elastic step counter). gRPC handler threads write, the
// metrics page reads; one mutex. A slot's counters start again from zero
// when its worker is replaced (a new process): Prometheus' rate() and
// increase() treat that as a counter reset.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

#include "hvd/v1/rendezvous.pb.h"

namespace hvd::daemon {

class RankStats {
 public:
  using Clock = std::chrono::steady_clock;

  struct Report {
    hvd::v1::RankStats stats;
    int64_t round = 0;
    std::optional<int64_t> commit;  // the elastic commit the worker holds
    Clock::time_point at;
  };

  // A heartbeat of `slot` in `round`.
  void reported(int slot, int64_t round, const hvd::v1::RankStats& stats, Clock::time_point now);
  void committed(int slot, int64_t commit);
  // Every slot's last report.
  std::map<int, Report> all() const;

 private:
  mutable std::mutex mu_;
  std::map<int, Report> slots_;
};

}  // namespace hvd::daemon
