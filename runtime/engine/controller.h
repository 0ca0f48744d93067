// The negotiation of one process set (docs/engine.md, "A cycle"): which ops
// are ready on every rank, and in which order they run. One Controller per
// set engine, used by its engine thread only.
//
// Each cycle every rank sends a fixed-size header (payload size, flags, its
// clock, the response cache's bit vector, and a small payload inline) and,
// when it has any, a payload of requests it has not announced before (a
// second exchange only when some payload is too big for the header, see
// message_codec.h); every rank receives everything and
// runs the same deterministic decision, so no coordinator broadcast is
// needed. The set's rank 0 contributes the clock every rank's stall
// inspector uses, so that all of them expire the same tensors in the same
// cycle.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "runtime/engine/engine_stats.h"
#include "runtime/engine/message_codec.h"
#include "runtime/engine/no_progress.h"
#include "runtime/engine/response.h"
#include "runtime/engine/response_cache.h"
#include "runtime/engine/stall_inspector.h"
#include "runtime/engine/tensor_queue.h"
#include "transports/transport.h"

namespace hvd::runtime::engine {

struct ControllerOptions {
  int32_t process_set_id = 0;
  int rank = 0;                   // this rank's rank within the set
  std::vector<int> global_ranks;  // the set's members; member i is global_ranks[i]
  size_t cache_capacity = 1024;
  std::chrono::seconds stall_warning{60};  // 0: no warnings
  std::chrono::seconds stall_shutdown{0};  // 0: stalled tensors never fail
  std::chrono::seconds no_progress{10};    // 0: never fail a set that cannot progress
};

class Controller {
 public:
  Controller(ControllerOptions options, transports::Transport& transport, EngineCounters& counters);

  // Takes the entries drained from the queue (in order). Entries enqueued
  // after a pending join are refused into plan.refused.
  void add(std::vector<Entry>& drained, CyclePlan& plan);

  // One exchange with every rank of the set, then the decision, into `plan`
  // (cleared by the caller). `stop`: this rank asks every rank to stop the
  // set's engine. `blocked`: a thread of this rank waits for one of the
  // set's ops (see no_progress.h). A transport error is returned as is (the
  // engine fails).
  common::Status negotiate(bool stop, bool blocked, CyclePlan& plan);

  // Autotune's fields this rank sends from the next exchange on, and those
  // of the set's rank 0 in the last exchange (engine_tuning.h).
  void set_tune(const TuneFields& tune) { tune_out_ = tune; }
  TuneFields agreed_tune() const { return header(0).tune(); }

  // After the plan ran: the response cache's puts and touches.
  void finish(const CyclePlan& plan);

  // This rank waits for others: it holds ops not yet agreed, or a join.
  bool busy() const { return !pending_.empty() || join_entry_.has_value(); }
  // This rank holds ops it has not announced yet (its next exchange says
  // something new).
  bool has_news() const;
  // After the last negotiate(): every rank of the set holds an op (or a join)
  // that waits for another rank, so no exchange can progress until some
  // rank enqueues more. The same answer on every rank (same data); false
  // before the first cycle. See SetEngine's pacing.
  bool every_rank_waits() const { return every_rank_waits_; }

  // Every op this rank still holds, for failing them (shutdown, failure).
  void take_all(std::vector<Entry>& out);

  int rank() const { return options_.rank; }
  int size() const { return static_cast<int>(options_.global_ranks.size()); }

 private:
  // Announcements of one name, per rank of the set.
  struct Row {
    std::vector<Request> requests;  // valid where announced
    std::vector<uint8_t> announced;
    int count = 0;
    int64_t first_seen_ns = 0;      // rank 0's clock
    int64_t complete_cycle = -1;    // when every non-joined rank had announced it
  };
  using RowIterator = std::map<std::string, Row>::iterator;

  common::Status exchange(bool stop, bool blocked);
  HeaderView header(int r) const;
  bool joined(int r) const { return joined_cycle_[static_cast<size_t>(r)] >= 0; }
  int global(int r) const { return options_.global_ranks[static_cast<size_t>(r)]; }
  bool has_bit(int r, size_t bit) const;

  common::Status read_payloads();
  void revalidate_bits();
  void collect_cached(CyclePlan& plan);
  void collect_rows(CyclePlan& plan);
  void set_rows(Response& resp, const Row* row, size_t bit);
  // What is pending (with_complete: also complete
  // rows waiting for their group), stall warnings and expiry, no progress.
  void collect_pending(std::vector<PendingTensor>& out, bool with_complete) const;
  void inspect_stalls(CyclePlan& plan);
  void check_progress(CyclePlan& plan);
  // Sets every_rank_waits_ from what is left undecided after this cycle.
  void note_waiting();
  // Fails every op pending on this rank, and forgets every row (the same
  // decision on every rank).
  void fail_pending(const common::Status& error, CyclePlan& plan);
  void complete_join(CyclePlan& plan);
  // Moves this rank's pending entry for `name` into `resp` (if it has one).
  void take_entry(const std::string& name, Response& resp);

  ControllerOptions options_;
  transports::Transport& transport_;
  EngineCounters& counters_;
  ResponseCache cache_;
  StallInspector inspector_;
  NoProgressWatch no_progress_;
  Clock::time_point epoch_ = Clock::now();

  int64_t cycle_ = 0;
  int64_t clock_ns_ = 0;  // rank 0's clock of the current cycle
  std::unordered_map<std::string, Entry> pending_;  // this rank's ops not yet agreed
  std::optional<Entry> join_entry_;
  std::map<std::string, Row> table_;               // names announced in full
  std::vector<int64_t> joined_cycle_;              // per rank: cycle its join began, or -1
  // Bits with some bits set but not all: first seen (rank 0's clock), last cycle seen.
  std::map<size_t, std::pair<int64_t, int64_t>> partial_bits_;
  int64_t last_stall_check_ns_ = 0;
  bool stall_checked_ = false;

  // Buffers reused every cycle.
  std::vector<uint64_t> bits_;
  std::vector<uint8_t> header_out_;
  std::vector<uint8_t> headers_in_;
  std::vector<int64_t> header_counts_;
  std::vector<uint8_t> payload_out_;
  std::vector<uint8_t> payloads_in_;
  std::vector<int64_t> payload_counts_;
  std::vector<const Request*> announce_;
  std::vector<Request> decoded_;
  std::vector<RowIterator> ready_;
  std::vector<PendingTensor> stalled_;
  bool had_payload_ = false;
  bool every_rank_waits_ = false;
  TuneFields tune_out_;
  std::vector<uint8_t> waits_;  // per rank, scratch of note_waiting()
};

}  // namespace hvd::runtime::engine
