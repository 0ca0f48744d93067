// Handles: what a user thread holds while the engine runs its op. The table
// maps handle ids to their state (pending or done, the Status, what the engine
// allocated for the op: output bytes and shape, alltoall's received splits,
// join's result). Any thread may create, poll, wait on and release handles;
// the engine threads complete them. Waiting uses one condition variable.
//
// Each handle belongs to a process set. A pending handle that some thread
// has waited on counts as "waited" for its set until it completes: the
// engine reports such a rank as blocked, which is how it tells a job that
// can make no progress at all (every rank blocked, nothing runnable) from
// one that is merely slow (docs/engine.md, "No progress").
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "runtime/engine/device_event.h"
#include "runtime/engine/host_buffer_pool.h"

namespace hvd::runtime::engine {

// What an op leaves behind besides its Status.
// An engine-allocated output in device memory (a device op's,
// data_plane.h), handed back to its device when it goes.
class DeviceOutput {
 public:
  virtual ~DeviceOutput() = default;
  virtual uint8_t* data() const = 0;
  // The batch that writes it was launched: its completion event (null: the
  // batch was waited for, the output is complete). Engine thread.
  virtual void launched(std::shared_ptr<DeviceEvent> done) = 0;
  // Copies the output to `dst` (device memory of the op's device; any
  // thread) on `stream` (a framework stream of that device; null: the
  // legacy default stream), which first waits on the device for the op;
  // returns once enqueued, or with `wait` once the copy is done (within the
  // transport timeout).
  virtual common::Status copy_to(void* dst, size_t bytes, void* stream, bool wait) const = 0;
};

struct OpOutput {
  // Engine-allocated output (allgather, alltoall, reducescatter): host
  // memory in `data`, or, for a device op, device memory in `device`.
  HostBuffer data;
  std::unique_ptr<DeviceOutput> device;
  uint8_t* memory() const { return device ? device->data() : data.get(); }
  size_t bytes = 0;
  std::vector<int64_t> shape;           // of `data`
  std::vector<int64_t> received_splits; // alltoall: rows from each rank of the set
  int32_t join_last_rank = -1;          // join: the rank that joined last
};

// A finished op, as seen through HandleTable::inspect().
struct FinishedOp {
  common::Status status;
  OpOutput output;
};

class HandleTable {
 public:
  // How long wait() spins (yielding the core) before it sleeps.
  static constexpr std::chrono::microseconds kWaitSpin{50};

  // Ids start at `first_id` (>= 1), so that a new runtime does not hand out
  // the ids of the one before it.
  explicit HandleTable(int64_t first_id = 1);

  // A pending handle of process set `set_id`.
  int64_t create(int32_t set_id = 0);
  // Marks the op done; a waiter wakes. Unknown ids are ignored. A launched
  // op keeps the output it was launched with (`output` is ignored).
  void complete(int64_t id, common::Status status, OpOutput output = {});
  // Marks several ops done at once (a group): no waiter sees some done and
  // others pending.
  struct Completion {
    int64_t id = 0;
    common::Status status;
    OpOutput output;
  };
  void complete_all(std::vector<Completion>& done);

  // A device op was launched on its device (device_completions.h): its
  // output (shape, splits, device memory) is final and readable, its
  // completion `event` may be waited on by a framework stream (launched());
  // it is done only when the event completed (complete()). A waiter in
  // wait_launched() wakes; the handle no longer counts as waited.
  void launch(int64_t id, OpOutput output, std::shared_ptr<DeviceEvent> event);
  // Until the op is launched or done, at most `timeout` (kTimeout then;
  // none: as long as it takes): the op's Status once done (with *event
  // null), or OK with *event set once launched and not yet done.
  common::Status wait_launched(int64_t id, std::optional<std::chrono::duration<double>> timeout,
                               std::shared_ptr<DeviceEvent>* event);

  // true when done; kNotFound for an unknown handle.
  common::Result<bool> poll(int64_t id) const;
  // The op's Status once done; kTimeout when `timeout` passes first (the
  // handle stays valid); no timeout: waits as long as it takes.
  // The first wait on a pending handle marks it waited (see above).
  common::Status wait(int64_t id, std::optional<std::chrono::duration<double>> timeout);
  // Runs `read` on a finished (or launched: its status then OK) op under
  // the table's lock; kNotFound, or kFailedPrecondition while the op is
  // pending.
  common::Status inspect(int64_t id, const std::function<common::Status(const FinishedOp&)>& read) const;
  // Moves a finished op's engine-allocated host output out of the table
  // (the handle keeps its shape, with no bytes left); kNotFound,
  // kFailedPrecondition while pending, the op's own Status when it failed,
  // kInvalidArgument when it has no host output (none, already taken, or in
  // device memory).
  struct TakenOutput {
    HostBuffer data;
    size_t bytes = 0;
  };
  common::Result<TakenOutput> take_host_output(int64_t id);
  // Forgets a finished op; kFailedPrecondition while pending.
  common::Status release(int64_t id);
  // Forgets an op whatever its state (one that never reached an engine).
  void discard(int64_t id);

  // Pending handles of the set that a thread has waited on.
  int waited_pending(int32_t set_id) const;

  int64_t next_id() const;
  size_t size() const;

 private:
  struct State {
    bool done = false;
    bool launched = false;                // a device op on its device, not done
    std::shared_ptr<DeviceEvent> event;   // launched: its completion
    bool waited = false;  // pending, and a thread waited on it
    int32_t set_id = 0;
    FinishedOp op;
  };
  common::Status unknown(int64_t id) const;
  // Marks `state` done (mu_ held).
  void finish(State& state, common::Status status, OpOutput output);
  // No longer counted as waited (mu_ held).
  void unwait(State& state);
  // Waits (lock held) until `ready(state)` or the deadline; the state found
  // then, or null when the handle went; timed_out says which.
  template <class Ready>
  State* wait_until(std::unique_lock<std::mutex>& lock, int64_t id,
                    std::optional<std::chrono::duration<double>> timeout, Ready ready,
                    bool* timed_out);

  mutable std::mutex mu_;
  mutable std::condition_variable done_;
  std::unordered_map<int64_t, State> states_;
  std::unordered_map<int32_t, int> waited_pending_;  // set id -> waited pending handles
  int64_t next_id_;
};

}  // namespace hvd::runtime::engine
