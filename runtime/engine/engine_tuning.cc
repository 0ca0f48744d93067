#include "runtime/engine/engine_tuning.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

namespace hvd::runtime::engine {

namespace {

constexpr char kChunk[] = "chunk_bytes";

autotune::TuneParams params_of(const TuneFields& t) {
  return {t.fusion_threshold, static_cast<double>(t.cycle_time_ns) / 1e6, t.chunk_bytes};
}

}  // namespace

EngineTuning::EngineTuning(double cycle_time_ms, int64_t fusion_threshold,
                           transports::Transport& transport,
                           const std::optional<AutotuneOptions>& tuner)
    : transport_(transport), cycle_time_ms_(cycle_time_ms), fusion_threshold_(fusion_threshold) {
  if (!tuner) return;
  autotune::TuneParams defaults{fusion_threshold, cycle_time_ms, 0};
  int64_t chunk_max = 0;
  for (const transports::Tunable& knob : transport_.tunables()) {
    if (knob.name != kChunk) continue;
    defaults.chunk_bytes = knob.value;
    chunk_max = knob.max;
  }
  std::unique_ptr<autotune::TuneLog> log;
  if (!tuner->log_file.empty()) {
    auto opened = autotune::TuneLog::open(tuner->log_file);
    if (opened.is_ok()) {
      log = std::move(opened).value();
    } else {
      spdlog::warn("autotune: {}; tuning without a log", opened.status().message());
    }
  }
  manager_ = std::make_unique<autotune::ParameterManager>(defaults, chunk_max, tuner->tuner,
                                                          std::move(log));
  spdlog::info("autotune: starting from {} ({} transport)", autotune::describe(defaults),
               transport_.name());
}

void EngineTuning::apply(const TuneFields& agreed) {
  if (agreed.generation == 0 || agreed.generation == applied_generation_) return;
  applied_generation_ = agreed.generation;
  fusion_threshold_ = agreed.fusion_threshold;
  cycle_time_ms_ = static_cast<double>(agreed.cycle_time_ns) / 1e6;
  if (agreed.chunk_bytes > 0) {
    // The same values on every rank, so the same outcome on every rank.
    common::Status s = transport_.set_tunable(kChunk, agreed.chunk_bytes);
    if (!s.is_ok()) spdlog::warn("autotune: {}", s.message());
  }
  skip_next_ = true;  // this cycle's ops were batched under the old parameters
  spdlog::debug("autotune: switched to {}", autotune::describe(params_of(agreed)));
}

void EngineTuning::before_run(const CyclePlan& plan) {
  cycle_bytes_ = 0;
  if (!manager_ || manager_->settled()) return;
  oldest_ = Clock::time_point::max();
  for (const Response& r : plan.responses) {
    if (!r.has_entry || !r.error.is_ok()) continue;
    const OpType type = r.op().op_type;
    if (type == OpType::kBarrier || type == OpType::kJoin) continue;
    cycle_bytes_ += r.op().byte_size();
    oldest_ = std::min(oldest_, r.entry.enqueued);
  }
}

void EngineTuning::after_run(Clock::time_point previous_end, Clock::time_point end) {
  if (std::exchange(skip_next_, false) || cycle_bytes_ <= 0 || !manager_) return;
  const double seconds = std::chrono::duration<double>(end - std::max(oldest_, previous_end)).count();
  if (!manager_->record(cycle_bytes_, seconds)) return;
  const autotune::TuneParams& next = manager_->current();
  outgoing_ = TuneFields{outgoing_.generation + 1, next.fusion_threshold,
                         std::llround(next.cycle_time_ms * 1e6), next.chunk_bytes};
}

}  // namespace hvd::runtime::engine
