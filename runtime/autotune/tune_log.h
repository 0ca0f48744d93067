// The autotune log (rank 0 only; docs/autotune.md, "Log"): a CSV header, one
// line per sample, and a last line, starting with '#', saying what autotune
// settled on and why:
//   sample,phase,fusion_threshold,cycle_time_ms,chunk_bytes,score_bytes_per_s
//   1,warmup,67108864,1,1048576,1.52e+09
//   ...
//   # settled: fusion_threshold=... cycle_time_ms=... chunk_bytes=... after 21 samples (...)
// phase: warmup (thrown away), baseline (the defaults), trial (a candidate),
// confirm (defaults and best candidate, interleaved). Each line is flushed.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <string_view>

#include "common/status.h"
#include "runtime/autotune/tune_params.h"

namespace hvd::runtime::autotune {

class TuneLog {
 public:
  // Writes the header line.
  explicit TuneLog(std::unique_ptr<std::ostream> out);
  // A file at `path` (truncated); kInvalidArgument naming it when it cannot
  // be opened.
  static common::Result<std::unique_ptr<TuneLog>> open(const std::string& path);

  void sample(int index, std::string_view phase, const TuneParams& params, double score);
  void settled(std::string_view text);  // "# settled: <text>"

 private:
  std::unique_ptr<std::ostream> out_;
};

}  // namespace hvd::runtime::autotune
