// The hand-off from user threads to a process set's engine thread. User
// threads push entries (a request, its buffers, its handle); the engine
// drains everything queued at the start of each cycle and sleeps on the
// queue between cycles, so an enqueue wakes it at once. Once woken it may
// let a burst of pushes gather (wait_quiet: the batching window), so that
// tensors enqueued together are negotiated together.
//
// The queue also keeps the names in flight on its process set (pushed and not
// yet finished), so that a second op with a pending name is refused at once,
// and a closed status: once the engine stops or fails, every push fails with
// the reason.
//
// Unnamed ops are named here, under the queue's lock and only once admitted
// ("<op type>.noname.<n>", n counting per op type on this set): an op refused
// on one rank never consumes a number, so ranks that make the same calls get
// the same names. When a join completes, and when the engine finds the
// ranks out of step anyway (no progress, docs/engine.md), every rank
// restarts its numbering in the same cycle with restart_names(); names then
// read "<op type>.noname.<g>.<n>".
#pragma once

#include <array>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/status.h"
#include "runtime/engine/engine_stats.h"
#include "runtime/engine/request.h"

namespace hvd::runtime::engine {

using Clock = std::chrono::steady_clock;

class Timeline;

// One op on its way through the engine.
struct Entry {
  Request request;
  const void* input = nullptr;  // null when the op has no input (join, barrier)
  void* output = nullptr;       // allreduce, broadcast: the result; else null
  // Device ops: the framework's CUDA stream (hvd_op.stream; null: default)
  // and the event recorded on it at enqueue (hvd_op.ready_event; may be
  // null): the device's communication stream waits for it (docs/gpu.md).
  void* stream = nullptr;
  void* ready_event = nullptr;
  int64_t handle = 0;
  Clock::time_point enqueued{};

  // Engine-thread bookkeeping (the controller's).
  int64_t cache_bit = -1;     // >= 0: announced through this cache bit
  bool announced = false;      // sent in full in a negotiation payload
  const Timeline* negotiate_timeline = nullptr;  // recorded NEGOTIATE's begin
};

class TensorQueue {
 public:
  // kAlreadyExists when an op of the same name is in flight (or, for join,
  // when a join is); kFailedPrecondition for an op while this rank's join
  // is pending; the close() status once closed. The entry is consumed only
  // on success; an unnamed one is named then.
  common::Status push(Entry& entry);
  // All of them or none (same checks, and no two of them share a name).
  // Sets each member's group_id (the same on every rank: a hash of the
  // members' names) and group_size.
  common::Status push_group(std::vector<Entry>& entries);

  // Every later unnamed op is numbered from 0 in naming generation `g`.
  void restart_names(int64_t generation);

  // Moves everything queued to the end of `out`, in push order.
  void drain(std::vector<Entry>& out);
  // The op left the engine: its name may be used again. Call before
  // completing its handle, so that a waiter may reuse the name at once.
  void finish(const Entry& entry);

  // Later pushes fail with `reason` (the first reason is kept).
  void close(common::Status reason);
  bool closed() const;

  // Sleeps until `deadline`; wakes earlier after interrupt(), or when
  // `wake_on_work` and something is queued. With `wake_on_work` it first
  // spins (yielding the core) for up to kIdleSpin: a push meanwhile needs
  // no wake-up.
  void wait(Clock::time_point deadline, bool wake_on_work);
  static constexpr std::chrono::microseconds kIdleSpin{50};
  // The batching window: while something is queued, waits until nothing was
  // pushed for `quiet`, but no longer than `longest` after the oldest
  // queued entry arrived (nor past interrupt()). Returns at once when
  // nothing is queued. Pushes made meanwhile do not wake the engine (it
  // looks at the time of the last push when its deadline comes).
  void wait_quiet(Clock::duration quiet, Clock::duration longest);
  // Whether anything is queued (not drained yet).
  bool has_work() const;
  // Makes the current and every later wait() return at once (engine stop).
  void interrupt();
  // finish() counts each op into `counters` (its type, input bytes and,
  // for allreduce, the time since its enqueue); null: no counting.
  void count_into(OpCounters* counters) { counters_ = counters; }

 private:
  // Whether `request` may enter under `name` (its own, or the one it would be
  // given), under mu_.
  common::Status admit(const Request& request, const std::string& name) const;
  // The name the next unnamed op of `type` gets, `skip` numbers ahead (under mu_).
  std::string auto_name(OpType type, int64_t skip) const;
  // Records the time of a push (under mu_); whether the engine must be woken.
  bool note_push();

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::vector<Entry> queued_;
  Clock::time_point first_push_{};  // of the oldest queued entry
  Clock::time_point last_push_{};
  bool waiting_for_work_ = false;   // the engine sleeps in wait(..., true)
  std::unordered_set<std::string> in_flight_;
  std::array<int64_t, 7> auto_names_{};  // next number per op type
  int64_t name_generation_ = 0;
  bool join_in_flight_ = false;
  bool interrupted_ = false;
  bool closed_ = false;
  common::Status closed_status_;
  OpCounters* counters_ = nullptr;
};

}  // namespace hvd::runtime::engine
