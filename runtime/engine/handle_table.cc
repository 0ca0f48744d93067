#include "runtime/engine/handle_table.h"

#include <algorithm>
#include <string>
#include <thread>
#include <utility>

namespace hvd::runtime::engine {

using common::Status;

HandleTable::HandleTable(int64_t first_id) : next_id_(first_id < 1 ? 1 : first_id) {}

Status HandleTable::unknown(int64_t id) const {
  return common::not_found("no handle " + std::to_string(id) +
                           " (never issued, already released, or from before hvd_shutdown)");
}

int64_t HandleTable::create(int32_t set_id) {
  std::lock_guard lock(mu_);
  int64_t id = next_id_++;
  State state;
  state.set_id = set_id;
  states_.emplace(id, std::move(state));
  return id;
}

void HandleTable::unwait(State& state) {
  if (state.waited) {
    state.waited = false;
    --waited_pending_[state.set_id];
  }
}

void HandleTable::finish(State& state, Status status, OpOutput output) {
  state.done = true;
  state.op.status = std::move(status);
  if (!state.launched) state.op.output = std::move(output);  // else set at launch
  state.launched = false;
  state.event.reset();  // the event goes back to the device
  unwait(state);
}

void HandleTable::launch(int64_t id, OpOutput output, std::shared_ptr<DeviceEvent> event) {
  {
    std::lock_guard lock(mu_);
    auto it = states_.find(id);
    if (it == states_.end() || it->second.done) return;
    State& state = it->second;
    state.launched = true;
    state.event = std::move(event);
    state.op.output = std::move(output);
    unwait(state);  // running on its device: this rank is no longer blocked on it
  }
  done_.notify_all();
}

void HandleTable::complete(int64_t id, Status status, OpOutput output) {
  {
    std::lock_guard lock(mu_);
    auto it = states_.find(id);
    if (it == states_.end() || it->second.done) return;
    finish(it->second, std::move(status), std::move(output));
  }
  done_.notify_all();
}

void HandleTable::complete_all(std::vector<Completion>& done) {
  {
    std::lock_guard lock(mu_);
    for (Completion& c : done) {
      auto it = states_.find(c.id);
      if (it == states_.end() || it->second.done) continue;
      finish(it->second, std::move(c.status), std::move(c.output));
    }
  }
  done_.notify_all();
}

common::Result<bool> HandleTable::poll(int64_t id) const {
  std::lock_guard lock(mu_);
  auto it = states_.find(id);
  if (it == states_.end()) return unknown(id);
  return it->second.done;
}

template <class Ready>
HandleTable::State* HandleTable::wait_until(std::unique_lock<std::mutex>& lock, int64_t id,
                                            std::optional<std::chrono::duration<double>> timeout,
                                            Ready ready, bool* timed_out) {
  *timed_out = false;
  auto it = states_.find(id);
  if (it == states_.end()) return nullptr;
  if (!ready(it->second) && !it->second.waited) {
    it->second.waited = true;
    ++waited_pending_[it->second.set_id];
  }
  // Iterators of an unordered_map stay valid across other insertions; only
  // release()/discard() of this very id would invalidate it, so look it up
  // again after every wake-up.
  auto finished = [&] {
    it = states_.find(id);
    return it == states_.end() || ready(it->second);
  };
  const auto now = std::chrono::steady_clock::now();
  const auto deadline =
      timeout ? now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(*timeout)
              : std::chrono::steady_clock::time_point::max();
  // Spin (yielding) a little before sleeping: a small op completes within
  // tens of microseconds, and a sleeping waiter costs the engine a futex
  // wake and this thread a context switch, more than the op itself.
  const auto spin_until = std::min(deadline, now + kWaitSpin);
  while (!finished() && std::chrono::steady_clock::now() < spin_until) {
    lock.unlock();
    std::this_thread::yield();
    lock.lock();
  }
  if (timeout) {
    if (!done_.wait_until(lock, deadline, finished)) {
      *timed_out = true;
      return &it->second;
    }
  } else {
    done_.wait(lock, finished);
  }
  return it == states_.end() ? nullptr : &it->second;
}

Status HandleTable::wait(int64_t id, std::optional<std::chrono::duration<double>> timeout) {
  std::unique_lock lock(mu_);
  bool timed_out = false;
  State* state = wait_until(lock, id, timeout, [](const State& s) { return s.done; }, &timed_out);
  if (state == nullptr) return unknown(id);
  if (timed_out) {
    return common::timeout_error("handle " + std::to_string(id) + " is still pending after " +
                                 std::to_string(timeout->count()) + " s");
  }
  return state->op.status;
}

Status HandleTable::wait_launched(int64_t id,
                                  std::optional<std::chrono::duration<double>> timeout,
                                  std::shared_ptr<DeviceEvent>* event) {
  event->reset();
  std::unique_lock lock(mu_);
  bool timed_out = false;
  State* state = wait_until(
      lock, id, timeout, [](const State& s) { return s.done || s.launched; }, &timed_out);
  if (state == nullptr) return unknown(id);
  if (timed_out) {
    return common::timeout_error("handle " + std::to_string(id) + " is still pending after " +
                                 std::to_string(timeout->count()) + " s");
  }
  if (state->done) return state->op.status;
  *event = state->event;
  return Status::ok();
}

Status HandleTable::inspect(int64_t id,
                            const std::function<Status(const FinishedOp&)>& read) const {
  std::lock_guard lock(mu_);
  auto it = states_.find(id);
  if (it == states_.end()) return unknown(id);
  if (!it->second.done && !it->second.launched) {
    return common::failed_precondition("handle " + std::to_string(id) + " is still pending");
  }
  return read(it->second.op);
}

common::Result<HandleTable::TakenOutput> HandleTable::take_host_output(int64_t id) {
  std::lock_guard lock(mu_);
  auto it = states_.find(id);
  if (it == states_.end()) return unknown(id);
  if (!it->second.done) {
    return common::failed_precondition("handle " + std::to_string(id) + " is still pending");
  }
  FinishedOp& op = it->second.op;
  if (!op.status.is_ok()) return op.status;
  if (op.output.device || !op.output.data || op.output.bytes == 0) {
    return common::invalid_argument("handle " + std::to_string(id) + " has no host output to take" +
                                    (op.output.device ? " (it is in device memory: copy it)" : ""));
  }
  TakenOutput taken{std::move(op.output.data), op.output.bytes};
  op.output.bytes = 0;
  return taken;
}

Status HandleTable::release(int64_t id) {
  State released;  // freed outside the lock
  {
    std::lock_guard lock(mu_);
    auto it = states_.find(id);
    if (it == states_.end()) return unknown(id);
    if (!it->second.done) {
      return common::failed_precondition("handle " + std::to_string(id) +
                                         " is still pending: wait for it before releasing it");
    }
    released = std::move(it->second);
    states_.erase(it);
  }
  return Status::ok();
}

void HandleTable::discard(int64_t id) {
  {
    std::lock_guard lock(mu_);
    auto it = states_.find(id);
    if (it == states_.end()) return;
    unwait(it->second);
    states_.erase(it);
  }
  done_.notify_all();
}

int HandleTable::waited_pending(int32_t set_id) const {
  std::lock_guard lock(mu_);
  auto it = waited_pending_.find(set_id);
  return it == waited_pending_.end() ? 0 : it->second;
}

int64_t HandleTable::next_id() const {
  std::lock_guard lock(mu_);
  return next_id_;
}

size_t HandleTable::size() const {
  std::lock_guard lock(mu_);
  return states_.size();
}

}  // namespace hvd::runtime::engine
