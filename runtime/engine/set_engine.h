// One process set's engine: its transport, controller (negotiation, response
// cache, stall inspector), executor and fusion buffer, its queue, and its
// own engine thread, so that the negotiations of different sets never wait
// for one another. See docs/engine.md and docs/threading.md.
//
// Pacing (docs/engine.md, "A cycle"): there is no latency floor. An idle
// engine sleeps until an op is enqueued (or idle_wake passes, so that it
// still joins the exchanges of ranks that wait for it) and then starts a
// cycle at once, after a short batching window: it waits while ops keep
// arriving, until none came for batch_quiet, and never longer than
// cycle_time after the first one, so a burst (a backward pass) is
// negotiated and fused as one. A rank whose ops wait for peers goes
// straight into the next exchange, which blocks (without spinning) until the
// peers come with their ops; only when every rank waits on another (the
// ranks enqueued different tensors) does it wait for new work or cycle_time
// (at most idle_wake), so a set that cannot progress costs at most one
// exchange per cycle_time.
//
// Device ops (device >= 0) run on a GPU transport held beside the CPU one
// (device_route.h: created at the set's first device op, aborted with the
// set); negotiation and CPU ops stay on the CPU transport. A device batch
// is launched on the device and handed, with its completion event, to the
// set's DeviceCompletions (device_completions.h), which completes its
// handles when the device is done; the engine thread goes straight on to
// the next cycle. A launched op's handle shows its output and event at once
// (HandleTable::launch: a framework stream may wait on it). The timeline
// gets a DEVICE span from the launch to the completion, on a row
// "<tensor>/device".
//
// Failures: a transport error fails every pending and later op of the set
// with that Status (the transport stays failed) and is reported to
// on_transport_failure (the runtime then aborts every other set: the world
// is broken). abort() (any thread) aborts the transport: a blocked call
// returns at once and the engine fails every pending and later op with the
// abort's reason, with no exchange. stop() is collective: the rank sets the
// shutdown flag in its next exchange, and every member's engine fails its
// pending ops and ends in that same cycle; after an abort it only joins the
// thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "runtime/engine/controller.h"
#include "runtime/engine/device_completions.h"
#include "runtime/engine/device_route.h"
#include "runtime/engine/engine_stats.h"
#include "runtime/engine/engine_tuning.h"
#include "runtime/engine/executor.h"
#include "runtime/engine/fusion_planner.h"
#include "runtime/engine/handle_table.h"
#include "runtime/engine/tensor_queue.h"
#include "runtime/engine/active_timeline.h"
#include "transports/transport.h"

namespace hvd::runtime::engine {

struct SetEngineOptions {
  int32_t process_set_id = 0;
  int rank = 0;                   // this rank within the set
  std::vector<int> global_ranks;  // the set's members, ascending
  double cycle_time_ms = 1.0;
  int64_t fusion_threshold = int64_t{64} << 20;  // bytes; 0 disables fusion
  size_t cache_capacity = 1024;
  // Device batches in flight at most (device_completions.h), and how long
  // one may run on the device before the set fails (the transport timeout).
  size_t device_batches_in_flight = 4;
  std::chrono::milliseconds device_timeout{30000};
  std::chrono::seconds stall_warning{60};
  std::chrono::seconds stall_shutdown{0};
  std::chrono::seconds no_progress{10};      // 0: never (see no_progress.h)
  std::chrono::milliseconds idle_wake{100};  // longest sleep of an idle engine
  // The batching window's quiet time; negative: cycle_time / 50, at most 20 us.
  std::chrono::microseconds batch_quiet{-1};
  // Autotune (docs/autotune.md): set on every rank where it is on; only the
  // global set's rank 0 tunes, the other ranks follow it whatever this says.
  std::optional<AutotuneOptions> autotune;
  // Called on the engine thread with the Status of a failed exchange or
  // transport call (not after abort()); may call abort() on any engine.
  std::function<void(const common::Status&)> on_transport_failure;
  // Creates the set's GPU transport at its first device op (DeviceRoute);
  // null: device ops fail saying there is none.
  DeviceConnector connect_device;
  // How long an abort leaves a GPU transport that can shrink unaborted,
  // waiting for shrink_device() (DeviceRoute); 0: aborted at once.
  std::chrono::milliseconds device_shrink_grace{0};
};

class SetEngine {
 public:
  // Starts the engine thread. `timeline` may be null (never a timeline).
  SetEngine(SetEngineOptions options, std::unique_ptr<transports::Transport> transport,
            HandleTable& handles, const ActiveTimeline* timeline);
  // stop()s the engine if it still runs.
  ~SetEngine();
  SetEngine(const SetEngine&) = delete;
  SetEngine& operator=(const SetEngine&) = delete;

  // Hands ops to the engine thread (see TensorQueue::push); the refusal
  // Status otherwise (name in flight, engine stopped or failed).
  common::Status enqueue(Entry& entry);
  common::Status enqueue_group(std::vector<Entry>& entries);

  // Stops the engine (collectively, see above) and joins its thread; ops
  // still pending here fail with `reason`. Later enqueues fail with it too.
  void stop(common::Status reason);

  // Fails the set now, from any thread, for `reason` (the first reason
  // wins): the transport is aborted (a blocked call returns at once), later
  // enqueues fail with `reason`, and the engine thread fails every pending
  // op with it and ends without another exchange. Never waits for peers.
  void abort(common::Status reason);
  // abort(reason) for a set that lost the members request.excluded: its GPU
  // transport, when it can, makes the survivors' one first (DeviceRoute::shrink).
  void shrink_device(const common::Status& reason, ShrinkRequest request);
  // Returns once the GPU transport is no longer waiting for shrink_device()
  // after an abort (DeviceRoute::settle; at most its grace).
  void settle_device() { device_.settle(); }

  const SetEngineOptions& options() const { return options_; }
  EngineStats stats() const { return counters_.snapshot(); }
  OpStats op_stats() const { return counters_.ops.snapshot(); }

 private:
  void run() noexcept;
  void cycle_loop(std::vector<Entry>& drained, CyclePlan& plan);
  void wait_for_cycle(Clock::time_point last_start, Clock::time_point last_end);
  common::Status execute(CyclePlan& plan, Timeline* timeline);
  // Runs batch_ on the CPU executor, or on the GPU transport's for device ops.
  common::Status run_batch(Timeline* timeline);
  void finish_response(Response& r, Timeline* timeline);
  // batch_ ran on a device executor that recorded `event`: its ops go to
  // completions_ (group members once the group ran: hand_over_groups);
  // `failure`: the launch failed midway.
  void launch_batch(const std::shared_ptr<DeviceEvent>& event,
                    transports::StreamedTransport* watched, const common::Status& failure);
  // The cycle's group members not done yet, when some ran on a device: to
  // completions_ as one group (with `failure` when not OK). false: none
  // ran on a device (they complete at once).
  bool hand_over_groups(std::vector<Response>& responses, const common::Status& failure);
  // On the completion thread: a device batch is done.
  void complete_device(DeviceCompletions::Batch& batch);
  void complete(Entry& entry, common::Status status, OpOutput output = {});
  void fail_everything(const common::Status& status, CyclePlan& plan);
  // A failed exchange or transport call: fails everything with the abort's
  // reason when there was one, else with `status` after reporting it.
  void fail_transport(const char* what, const common::Status& status, CyclePlan& plan);
  common::Status abort_reason() const;
  std::string row(const std::string& name) const { return prefix_ + name; }
  // A launched device op's DEVICE span has a row of its own beside its
  // tensor's, as it overlaps the next op of that name's phases.
  std::string device_row(const std::string& name) const { return prefix_ + name + "/device"; }

  SetEngineOptions options_;
  std::string prefix_;  // timeline rows: "" for the global set, "ps<id>/" otherwise
  std::unique_ptr<transports::Transport> transport_;
  HandleTable& handles_;
  const ActiveTimeline* timeline_;
  EngineCounters counters_;
  Controller controller_;
  Executor executor_;
  DeviceRoute device_;  // device ops: the GPU transport, created at the first one
  EngineTuning tuning_;  // the cycle time and fusion threshold in force
  TensorQueue queue_;
  // After queue_ and device_: destroyed (drained) before them.
  DeviceCompletions completions_;

  std::atomic<bool> stop_requested_{false};
  std::mutex join_mu_;    // one stop() at a time
  mutable std::mutex reason_mu_;  // guards stop_reason_ and abort_reason_
  common::Status stop_reason_;
  common::Status abort_reason_;   // OK until abort()

  // Engine-thread scratch, reused every cycle.
  std::vector<FusionItem> items_;
  std::vector<size_t> item_response_;
  std::vector<Response*> batch_;
  std::vector<HandleTable::Completion> group_done_;
  Executor* ran_on_ = nullptr;                      // run_batch's executor
  std::shared_ptr<Timeline> cycle_timeline_;        // this cycle's (may be null)
  std::vector<std::shared_ptr<DeviceEvent>> group_events_;  // this cycle's groups on devices
  std::vector<transports::StreamedTransport*> group_watched_;
  std::vector<int64_t> group_launched_;  // handles of group members launched (names freed)

  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace hvd::runtime::engine
