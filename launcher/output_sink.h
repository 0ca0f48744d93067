// Where worker output goes: each line to hvdrun's stdout or stderr prefixed
// "[RANK]<stdout>:" / "[RANK]<stderr>:" like Horovod, and, with
// --output-filename DIR, the raw line to DIR/rank.N/stdout or stderr. The
// lines of one write() are written together and flushed (blocking writes: a
// slow reader of hvdrun's stdout holds the job's output back, nothing is
// dropped). Used from one thread (the job session's).
#pragma once

#include <cstdio>
#include <map>
#include <span>
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

  // Lines of one worker's stream, each without its '\n'.
  void write(int rank, bool is_stderr, std::span<const std::string> lines);
  void write(int rank, bool is_stderr, std::string_view line) {
    const std::string one(line);
    write(rank, is_stderr, std::span<const std::string>(&one, 1));
  }

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
