#include "runtime/autotune/parameter_manager.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <utility>

namespace hvd::runtime::autotune {

namespace {

const char* phase_name(GridSearch::Phase phase) {
  switch (phase) {
    case GridSearch::Phase::kBaseline: return "baseline";
    case GridSearch::Phase::kDescent: return "trial";
    case GridSearch::Phase::kConfirm: return "confirm";
    case GridSearch::Phase::kDone: return "settled";
  }
  return "?";
}

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f%%", fraction * 100);
  return text;
}

}  // namespace

ParameterManager::ParameterManager(TuneParams defaults, int64_t chunk_max, TunerOptions options,
                                   std::unique_ptr<TuneLog> log)
    : options_(options),
      log_(std::move(log)),
      search_(search_space(defaults, chunk_max), options.search),
      current_(params_at(search_.dimensions(), search_.current())) {}

bool ParameterManager::record(int64_t bytes, double seconds) {
  if (settled() || bytes <= 0) return false;
  window_bytes_ += bytes;
  window_seconds_ += seconds;
  ++window_steps_;
  if (window_steps_ < options_.steps_per_sample || window_seconds_ < options_.min_sample_seconds ||
      window_seconds_ <= 0) {
    return false;
  }
  const double score = static_cast<double>(window_bytes_) / window_seconds_;
  window_bytes_ = 0;
  window_seconds_ = 0;
  window_steps_ = 0;
  ++index_;
  if (warmed_ < options_.warmup_samples) {
    ++warmed_;
    if (log_) log_->sample(index_, "warmup", current_, score);
    return false;
  }
  if (log_) log_->sample(index_, phase_name(search_.phase()), current_, score);
  spdlog::debug("autotune sample {} ({}): {} scored {:.4g} bytes/s", index_,
                phase_name(search_.phase()), describe(current_), score);
  search_.add_sample(score);
  if (search_.done()) settle();
  TuneParams next = params_at(search_.dimensions(), search_.current());
  if (next == current_) return false;
  current_ = next;
  return true;
}

void ParameterManager::settle() {
  const std::string noise = percent(search_.noise());
  const TuneParams best = params_at(search_.dimensions(), search_.best_candidate());
  std::string why;
  if (!search_.kept_defaults()) {
    why = "beat the defaults by " + percent(search_.gain()) + ", more than noise " + noise;
  } else if (search_.best_candidate() == search_.defaults()) {
    why = "defaults kept: no candidate beat them by more than noise " + noise;
  } else if (!search_.confirmed()) {
    why = "defaults kept: no samples left to confirm the best candidate (" + describe(best) + ")";
  } else {
    why = "defaults kept: the best candidate (" + describe(best) + ") scored " +
          percent(search_.gain()) + " against them when measured again, within noise " + noise;
  }
  if (search_.budget_exhausted()) why += "; sample budget of " +
                                         std::to_string(options_.search.max_samples) + " reached";
  const TuneParams chosen = params_at(search_.dimensions(), search_.current());
  verdict_ = describe(chosen) + " after " + std::to_string(index_) + " samples (" + why + ")";
  if (log_) log_->settled(verdict_);
  spdlog::info("autotune settled: {}", verdict_);
}

}  // namespace hvd::runtime::autotune
