#include "runtime/rank_stats_report.h"

#include <algorithm>

#include "runtime/engine/request.h"
#include "runtime/engine/set_engine.h"

namespace hvd::runtime {

hvd::v1::RankStats rank_stats(const std::vector<std::shared_ptr<const engine::ProcessSet>>& sets) {
  std::vector<std::shared_ptr<const engine::ProcessSet>> members;
  for (const auto& set : sets) {
    if (set && set->engine) members.push_back(set);
  }
  std::sort(members.begin(), members.end(),
            [](const auto& a, const auto& b) { return a->id < b->id; });
  if (members.size() > kMaxReportedSets) members.resize(kMaxReportedSets);

  hvd::v1::RankStats out;
  std::array<int64_t, engine::kLatencyBounds.size() + 1> buckets{};
  int64_t latency_ns = 0;
  for (const auto& set : members) {
    const engine::OpStats ops = set->engine->op_stats();
    const engine::EngineStats engine = set->engine->stats();
    for (size_t t = 0; t < engine::kCountedOpTypes; ++t) {
      if (ops.completed[t] == 0) continue;
      auto* row = out.add_ops();
      row->set_process_set(set->id);
      row->set_op(std::string(engine::op_type_name(static_cast<engine::OpType>(t))));
      row->set_completed(ops.completed[t]);
      row->set_bytes(ops.bytes[t]);
    }
    for (size_t b = 0; b < buckets.size(); ++b) buckets[b] += ops.latency_buckets[b];
    latency_ns += ops.latency_sum_ns;
    out.set_fused_batches(out.fused_batches() + engine.fused_batches);
    out.set_fused_tensors(out.fused_tensors() + engine.fused_tensors);
    out.set_stall_warnings(out.stall_warnings() + engine.stall_warnings);
  }
  int64_t cumulative = 0;
  for (int64_t count : buckets) {
    cumulative += count;
    out.add_allreduce_latency_buckets(cumulative);
  }
  out.set_allreduce_latency_sum_seconds(static_cast<double>(latency_ns) * 1e-9);
  return out;
}

}  // namespace hvd::runtime
