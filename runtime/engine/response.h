// What one negotiation cycle decides, identically on every rank of the set:
// the ordered responses (ops to run, or to fail), and the cycle's events
// (shutdown, join completed, stall warning).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "runtime/engine/handle_table.h"
#include "runtime/engine/request.h"
#include "runtime/engine/tensor_queue.h"

namespace hvd::runtime::engine {

struct Response {
  Entry entry;            // this rank's op, when has_entry
  bool has_entry = false; // false: this rank joined without submitting it
  Request request;        // the agreed request, set when !has_entry
  common::Status error;   // not OK: the op fails (on every rank) without running
  // allgather: rows (first dimension) each rank contributes; alltoall: rows
  // each rank sends to this rank. 0 for a rank that joined without the op.
  std::vector<int64_t> rows;
  int64_t cache_bit = -1;  // agreed through this cache bit (in every rank's bit vector)
  bool cacheable = false;   // enters the cache after this cycle
  bool done = false;        // its handle was completed
  OpOutput output;          // what the executor produced for the handle

  const Request& op() const { return has_entry ? entry.request : request; }
};

struct CyclePlan {
  std::vector<Response> responses;  // in execution order
  // Entries the engine refused without negotiating them, and why.
  std::vector<std::pair<Entry, common::Status>> refused;
  int shutdown_rank = -1;           // >= 0: that rank (global) stopped the set's engine
  bool shutdown_self = false;       // ... and it was this one
  std::optional<Entry> join_entry;  // completed this cycle (with join_last_rank)
  bool join_done = false;
  int32_t join_last_rank = -1;      // global rank
  std::string stall_warning;        // for the set's rank 0 to log
  std::string no_progress;          // the set could not progress: every pending op failed
  int64_t restart_names = -1;       // >= 0: unnamed ops are numbered afresh in this generation
                                    // (set by a completed join and by the no-progress check)

  void clear() {
    responses.clear();
    refused.clear();
    shutdown_rank = -1;
    shutdown_self = false;
    join_entry.reset();
    join_done = false;
    join_last_rank = -1;
    stall_warning.clear();
    no_progress.clear();
    restart_names = -1;
  }
};

}  // namespace hvd::runtime::engine
