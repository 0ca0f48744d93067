// Small helpers shared by the hvd benchmarks: timing, medians, C ABI checks.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hvd/c_api.h"

namespace hvd::bench {

inline void check(int code, const char* what) {
  if (code != HVD_OK) {
    std::fprintf(stderr, "bench: %s failed (code %d): %s\n", what, code, hvd_last_error());
    std::exit(1);
  }
}

inline double now_us() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The largest value of x over all ranks (so every rank reports the slowest).
inline double max_over_ranks(double x) {
  check(hvd_allreduce(&x, 1, HVD_FLOAT64, HVD_OP_MAX), "allreduce(max)");
  return x;
}

// "4K" / "256M" / "1G" / plain bytes.
inline long long parse_size(const std::string& text) {
  char* end = nullptr;
  long long n = std::strtoll(text.c_str(), &end, 10);
  std::string suffix(end);
  if (suffix == "K" || suffix == "k") n <<= 10;
  else if (suffix == "M" || suffix == "m") n <<= 20;
  else if (suffix == "G" || suffix == "g") n <<= 30;
  else if (!suffix.empty() || n <= 0) {
    std::fprintf(stderr, "bench: bad size '%s'\n", text.c_str());
    std::exit(2);
  }
  return n;
}

}  // namespace hvd::bench
