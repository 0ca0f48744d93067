// The parameters autotune sets, and the grids it searches them on
// (docs/autotune.md, "What is tuned").
#pragma once

#include <cstdint>
#include <string>

#include "runtime/autotune/grid_search.h"

namespace hvd::runtime::autotune {

struct TuneParams {
  int64_t fusion_threshold = int64_t{64} << 20;  // bytes
  double cycle_time_ms = 1.0;
  int64_t chunk_bytes = 0;  // the transport's chunk; 0: it has none to tune

  bool operator==(const TuneParams&) const = default;
};

// "fusion_threshold=67108864 cycle_time_ms=1 chunk_bytes=1048576".
std::string describe(const TuneParams& params);

// Values lo * factor^k up to hi (factor > 1), with `value` added where it is
// not one of them; index of `value` in `start`.
Dimension log_grid(std::string name, double value, double lo, double hi, double factor);

// The dimensions searched from `defaults`: fusion_threshold 1-256 MiB and
// cycle_time_ms 0.25-16 (factors of 4), the chunk 64 KiB up to `chunk_max`
// (factors of 2; only when defaults.chunk_bytes > 0). Each includes its default.
std::vector<Dimension> search_space(const TuneParams& defaults, int64_t chunk_max);

// The parameters at `point` of search_space(...).
TuneParams params_at(const std::vector<Dimension>& dims, const Point& point);

}  // namespace hvd::runtime::autotune
