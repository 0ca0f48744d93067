// A worker's op counters as its heartbeat carries them to hvdrun
// (HeartbeatRequest.stats; hvdrun --metrics-port, docs/metrics.md): the
// counters of every process set this worker is a member of, summed since
// its runtime started. Read from relaxed atomics (engine_stats.h): never
// waits on an engine.
#pragma once

#include <memory>
#include <vector>

#include "hvd/v1/rendezvous.pb.h"
#include "runtime/engine/process_sets.h"

namespace hvd::runtime {

// At most this many process sets are reported (the lowest ids), so that a
// heartbeat stays within its size limit.
inline constexpr size_t kMaxReportedSets = 8;

hvd::v1::RankStats rank_stats(const std::vector<std::shared_ptr<const engine::ProcessSet>>& sets);

}  // namespace hvd::runtime
