// Where worker output goes: each line to hvdrun's stdout or stderr prefixed
// "[RANK]<stdout>:" / "[RANK]<stderr>:" like Horovod, flushed per line, and,
// with --output-filename DIR, the raw line to DIR/rank.N/stdout or stderr.
// Used from one thread (the job session's).
#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <string_view>

#include "common/status.h"

namespace hvd::launcher {

class OutputSink {
 public:
  OutputSink(std::FILE* out, std::FILE* err);
  ~OutputSink();
  OutputSink(const OutputSink&) = delete;
  OutputSink& operator=(const OutputSink&) = delete;

  // Creates DIR/rank.N/ for ranks 0..np-1 and opens (truncates) their files.
  common::Status open_log_dir(const std::string& dir, int np);

  // With timestamps, each line printed starts with the local time hvdrun got
  // it, as horovodrun's --prefix-output-with-timestamp: "Thu Nov 26
  // 16:01:36 2026[0]<stdout>:..." (not in the --output-filename files).
  void set_timestamps(bool on) { timestamps_ = on; }

  void write(int rank, bool is_stderr, std::string_view line);

  // Flushes and closes the per-rank files.
  void close();

 private:
  struct RankFiles {
    std::FILE* out = nullptr;
    std::FILE* err = nullptr;
  };
  std::FILE* out_;
  std::FILE* err_;
  std::map<int, RankFiles> files_;
  bool timestamps_ = false;
};

}  // namespace hvd::launcher
