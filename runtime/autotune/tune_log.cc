#include "runtime/autotune/tune_log.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

namespace hvd::runtime::autotune {

TuneLog::TuneLog(std::unique_ptr<std::ostream> out) : out_(std::move(out)) {
  *out_ << "sample,phase,fusion_threshold,cycle_time_ms,chunk_bytes,score_bytes_per_s"
        << std::endl;
}

common::Result<std::unique_ptr<TuneLog>> TuneLog::open(const std::string& path) {
  auto file = std::make_unique<std::ofstream>(path, std::ios::out | std::ios::trunc);
  if (!file->is_open()) {
    return common::invalid_argument("autotune log file '" + path +
                                    "' cannot be written: " + std::strerror(errno));
  }
  return std::make_unique<TuneLog>(std::move(file));
}

void TuneLog::sample(int index, std::string_view phase, const TuneParams& params, double score) {
  *out_ << index << ',' << phase << ',' << params.fusion_threshold << ',' << params.cycle_time_ms
        << ',' << params.chunk_bytes << ',' << score << std::endl;
}

void TuneLog::settled(std::string_view text) { *out_ << "# settled: " << text << std::endl; }

}  // namespace hvd::runtime::autotune
