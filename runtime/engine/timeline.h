// The timeline: a Chrome-trace JSON file (opens in Perfetto and
// chrome://tracing) with one row per tensor showing its phases: NEGOTIATE
// (enqueued until agreed by every rank), QUEUE (agreed until its batch runs),
// MEMCPY_IN_FUSION_BUFFER, the transport op (e.g. ALLREDUCE), and
// MEMCPY_OUT_FUSION_BUFFER; plus a CYCLE marker per engine cycle.
//
// Recording is cheap and thread-safe: events go into a buffer under a short
// lock; a writer thread of the timeline's own formats and writes them, so the
// engine thread never waits for the disk. The file is valid JSON once the
// Timeline is destroyed (or stop()ped); a crash leaves a file that Perfetto
// and chrome://tracing still read (an unterminated JSON array is accepted by
// both).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace hvd::runtime::engine {

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;

  // Creates/truncates `path` and starts the writer thread. kInvalidArgument
  // naming the path when it cannot be opened. `rank` goes into the metadata.
  static common::Result<std::unique_ptr<Timeline>> open(const std::string& path, int rank);

  // Writes everything recorded, closes the JSON array, joins the writer.
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // A phase of a tensor starts / ends ("B"/"E" events on the tensor's row;
  // rows are numbered in order of first appearance and named after the tensor).
  void begin(std::string_view tensor, std::string_view phase, Clock::time_point when = Clock::now());
  void end(std::string_view tensor, std::string_view phase, Clock::time_point when = Clock::now());
  // An instant event on the engine's own row (e.g. "CYCLE").
  void mark(std::string_view what, Clock::time_point when = Clock::now());

  const std::string& path() const;

 private:
  struct Impl;
  explicit Timeline(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hvd::runtime::engine
