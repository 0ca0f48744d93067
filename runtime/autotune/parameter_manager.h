// Autotune's driver on rank 0 of the global process set (docs/autotune.md):
// turns the engine's cycles into samples, feeds their scores to the search,
// logs every sample and says which parameters the engine should use next.
// Pure logic (the engine measures and applies; set_engine.cc): one engine
// thread calls it.
//
// A sample is a window of at least `steps_per_sample` engine cycles that
// moved data and at least `min_sample_seconds` of their busy time; its
// score is the bytes they moved per second of busy time. The engine counts
// a cycle's busy time from when its oldest op was enqueued (or the previous
// cycle ended, if later) to when it finished, so time the engine sat idle,
// waiting for the framework, never lowers a score. The first
// `warmup_samples` samples are thrown away; then the search (grid_search.h)
// decides until it settles, and the parameters stay where it settled.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/autotune/grid_search.h"
#include "runtime/autotune/tune_log.h"
#include "runtime/autotune/tune_params.h"

namespace hvd::runtime::autotune {

struct TunerOptions {
  int warmup_samples = 3;
  int steps_per_sample = 10;
  double min_sample_seconds = 0.05;
  SearchOptions search;
};

class ParameterManager {
 public:
  // `defaults`: the configured parameters, the baseline. `chunk_max`: the
  // largest chunk the transport takes (0: it has none; defaults.chunk_bytes
  // is then 0 too). `log` may be null.
  ParameterManager(TuneParams defaults, int64_t chunk_max, TunerOptions options,
                   std::unique_ptr<TuneLog> log);

  // One engine cycle that moved `bytes` in `seconds` of busy time under
  // current(). True when current() changed (a new trial, or the settled
  // parameters): the engine then switches every rank to it.
  bool record(int64_t bytes, double seconds);

  const TuneParams& current() const { return current_; }
  bool settled() const { return search_.done(); }
  // After settled(): why these parameters (the log's last line, without "# settled: ").
  const std::string& verdict() const { return verdict_; }
  int samples() const { return index_; }

 private:
  void settle();

  TunerOptions options_;
  std::unique_ptr<TuneLog> log_;
  GridSearch search_;
  TuneParams current_;
  int64_t window_bytes_ = 0;
  double window_seconds_ = 0;
  int window_steps_ = 0;
  int warmed_ = 0;
  int index_ = 0;  // samples so far, warm-up included
  std::string verdict_;
};

}  // namespace hvd::runtime::autotune
