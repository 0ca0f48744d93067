#include "runtime/autotune/tune_params.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

namespace hvd::runtime::autotune {

namespace {

constexpr double kMiB = 1 << 20;

bool near(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)); }

}  // namespace

std::string describe(const TuneParams& params) {
  std::ostringstream out;
  out << "fusion_threshold=" << params.fusion_threshold << " cycle_time_ms=" << params.cycle_time_ms
      << " chunk_bytes=" << params.chunk_bytes;
  return out.str();
}

Dimension log_grid(std::string name, double value, double lo, double hi, double factor) {
  Dimension d;
  d.name = std::move(name);
  for (double v = lo; v <= hi * (1 + 1e-9); v *= factor) d.values.push_back(v);
  bool listed = std::any_of(d.values.begin(), d.values.end(), [&](double v) { return near(v, value); });
  if (!listed) d.values.insert(std::upper_bound(d.values.begin(), d.values.end(), value), value);
  d.start = static_cast<size_t>(
      std::find_if(d.values.begin(), d.values.end(), [&](double v) { return near(v, value); }) -
      d.values.begin());
  d.values[d.start] = value;  // exactly the default
  return d;
}

std::vector<Dimension> search_space(const TuneParams& defaults, int64_t chunk_max) {
  std::vector<Dimension> dims;
  dims.push_back(log_grid("fusion_threshold", static_cast<double>(defaults.fusion_threshold),
                          1 * kMiB, 256 * kMiB, 4));
  dims.push_back(log_grid("cycle_time_ms", defaults.cycle_time_ms, 0.25, 16, 4));
  if (defaults.chunk_bytes > 0 && chunk_max > 0) {
    dims.push_back(log_grid("chunk_bytes", static_cast<double>(defaults.chunk_bytes), 64 << 10,
                            static_cast<double>(chunk_max), 2));
  }
  return dims;
}

TuneParams params_at(const std::vector<Dimension>& dims, const Point& point) {
  TuneParams p;
  p.fusion_threshold = std::llround(dims[0].values[point[0]]);
  p.cycle_time_ms = dims[1].values[point[1]];
  p.chunk_bytes = dims.size() > 2 ? std::llround(dims[2].values[point[2]]) : 0;
  return p;
}

}  // namespace hvd::runtime::autotune
