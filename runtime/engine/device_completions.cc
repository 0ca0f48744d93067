#include "runtime/engine/device_completions.h"

#include <spdlog/spdlog.h>

#include <optional>
#include <utility>

namespace hvd::runtime::engine {

namespace {

using common::Status;

// Between two polls of the events: a few yields (a small batch completes
// within tens of microseconds), then short sleeps (the framework needs the
// cores).
void poll_pause(int round) {
  if (round < 64) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(round < 1024 ? 20 : 200));
  }
}

}  // namespace

DeviceCompletions::DeviceCompletions(std::string name, size_t max_in_flight,
                                     std::chrono::milliseconds timeout, Complete complete,
                                     OnFailure on_failure)
    : name_(std::move(name)), max_in_flight_(max_in_flight < 1 ? 1 : max_in_flight),
      timeout_(timeout), complete_(std::move(complete)), on_failure_(std::move(on_failure)) {}

DeviceCompletions::~DeviceCompletions() {
  drain();
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void DeviceCompletions::add(Batch batch) {
  std::unique_lock lock(mu_);
  // Bounded: the front batch completes within 2 x timeout of its launch.
  changed_.wait(lock, [&] { return batches_.size() < max_in_flight_; });
  batches_.emplace_back(std::move(batch), Clock::now());
  if (!thread_.joinable()) {
    thread_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "hvd-device-done");
      run();
    });
  }
  lock.unlock();
  changed_.notify_all();
}

void DeviceCompletions::drain() {
  std::unique_lock lock(mu_);
  changed_.wait(lock, [&] { return batches_.empty() && !busy_; });
}

size_t DeviceCompletions::in_flight() const {
  std::lock_guard lock(mu_);
  return batches_.size();
}

void DeviceCompletions::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    changed_.wait(lock, [&] { return stop_ || !batches_.empty(); });
    if (batches_.empty()) return;  // stopping, nothing left
    busy_ = true;
    auto& [batch, launched] = batches_.front();  // stays put while others are added
    lock.unlock();
    const Status outcome = wait_for(batch, launched);
    if (!outcome.is_ok()) {
      for (Status& s : batch.statuses) {
        if (s.is_ok()) s = outcome;
      }
    }
    complete_(batch);
    lock.lock();
    batches_.pop_front();
    busy_ = false;
    lock.unlock();
    changed_.notify_all();
    lock.lock();
  }
}

void DeviceCompletions::fail(const Status& status) {
  {
    std::lock_guard lock(mu_);
    if (!failure_.is_ok()) return;
    failure_ = status;
  }
  on_failure_(status);
}

Status DeviceCompletions::wait_for(Batch& batch, Clock::time_point launched) {
  if (!batch.failure.is_ok()) fail(batch.failure);
  std::optional<Clock::time_point> drain_deadline;  // set once the set failed
  for (int round = 0;; ++round) {
    Status failure;
    {
      std::lock_guard lock(mu_);
      failure = failure_;
    }
    if (!failure.is_ok() && !drain_deadline) drain_deadline = Clock::now() + timeout_;
    bool done = true;
    for (const auto& event : batch.events) {
      auto finished = event->done();
      if (!finished.is_ok()) {
        // The device failed: nothing to wait for any more.
        fail(finished.status());
        std::lock_guard lock(mu_);
        return failure_;
      }
      done = done && finished.value();
    }
    if (done) {
      // Events complete for collectives that failed too (an asynchronous
      // error: a peer's data never came; an abort ended the kernels): the
      // transport says whether they did. A batch never completes OK with
      // what a failed collective left in its tensors.
      if (failure.is_ok() && batch.failure.is_ok()) {
        for (transports::StreamedTransport* t : batch.watched) {
          if (Status s = t->async_error(); !s.is_ok()) {
            fail(s);
            std::lock_guard lock(mu_);
            return failure_;
          }
        }
      }
      return !batch.failure.is_ok() ? batch.failure : failure;
    }
    const auto now = Clock::now();
    if (failure.is_ok()) {
      for (transports::StreamedTransport* t : batch.watched) {
        if (Status s = t->async_error(); !s.is_ok()) {
          fail(s);
          break;
        }
      }
      if (now - launched > timeout_) {
        fail(common::timeout_error(
            name_ + ": a batch of " + std::to_string(batch.entries.size()) + " device op(s) (" +
            (batch.entries.empty() ? std::string("-") : batch.entries.front().request.name) +
            (batch.entries.size() > 1 ? ", ..." : "") + ") did not complete within " +
            std::to_string(timeout_.count()) +
            " ms on the device (a peer is gone or stuck); the transport was aborted"));
      }
    } else if (now > *drain_deadline) {
      spdlog::error("{}: the device did not finish a failed batch's work within {} ms after the "
                    "abort; its {} op(s) complete now, and their tensors may still be written "
                    "on the device",
                    name_, timeout_.count(), batch.entries.size());
      return !batch.failure.is_ok() ? batch.failure : failure;
    }
    poll_pause(round);
  }
}

}  // namespace hvd::runtime::engine
