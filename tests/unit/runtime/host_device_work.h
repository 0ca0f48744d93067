// A DeviceWork (transports/device_work.h) on host memory for unit tests:
// malloc, memmove, runtime::finish_reduction, a no-op synchronize; it counts
// its calls and live allocations and records the streams it was given, so a
// test proves what the engine asked of the device. With `events` it has
// events (a plugin of ABI version 4): they complete when recorded, unless
// the test holds them (hold_events: event_query says not done).
#pragma once

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/engine/scale.h"
#include "transports/device_work.h"

namespace hvd::runtime::testing {

class HostDeviceWork final : public transports::DeviceWork {
 public:
  // `comm`: the communication stream it claims (null: none, as a plugin of
  // ABI version 2).
  explicit HostDeviceWork(int device = 0, void* comm = nullptr, bool events = false)
      : device_(device), comm_(comm), events_(events) {}
  const std::string& name() const override { return name_; }
  int device() const override { return device_; }

  common::Result<void*> alloc(size_t bytes, bool pinned_host) override {
    std::lock_guard lock(mu_);
    ++(pinned_host ? pinned_allocs : allocs);
    ++live;
    return std::malloc(bytes > 0 ? bytes : 1);
  }
  void free(void* memory, bool) override {
    if (memory == nullptr) return;
    std::lock_guard lock(mu_);
    --live;
    std::free(memory);
  }
  common::Status copy(std::span<const transports::DeviceCopy> entries, void* stream) override {
    std::lock_guard lock(mu_);
    classified_entries += static_cast<int>(entries.size());
    return copy_locked(entries, stream);
  }
  common::Status copy_on_device(std::span<const transports::DeviceCopy> entries,
                                void* stream) override {
    std::lock_guard lock(mu_);
    return copy_locked(entries, stream);
  }
  common::Status scale(void* data, size_t count, common::DataType type, int divisor,
                       double factor, void* stream) override {
    std::lock_guard lock(mu_);
    ++scales;
    streams.push_back(stream);
    return finish_reduction(data, data, count, type, divisor, factor);
  }
  common::Status synchronize(void* stream) override {
    std::lock_guard lock(mu_);
    ++syncs;
    synced.push_back(stream);
    return common::Status::ok();
  }

  void* comm_stream() const override { return comm_; }
  common::Status stream_wait(void* waiter, void* stream, void* event) override {
    std::lock_guard lock(mu_);
    waits.push_back({waiter, stream, event});
    return common::Status::ok();
  }

  bool has_events() const override { return events_; }
  common::Result<void*> event_create() override {
    std::lock_guard lock(mu_);
    ++events_made;
    ++live_events;
    return static_cast<void*>(new int(0));
  }
  void event_destroy(void* event) override {
    std::lock_guard lock(mu_);
    --live_events;
    delete static_cast<int*>(event);
  }
  common::Status event_record(void* event, void* stream) override {
    std::lock_guard lock(mu_);
    recorded.push_back(stream);
    *static_cast<int*>(event) = ++records;  // its record number
    return common::Status::ok();
  }
  common::Result<bool> event_query(void* event) override {
    std::lock_guard lock(mu_);
    if (!event_error.is_ok()) return event_error;
    // Held: every event recorded from the hold's point on is not done.
    return held_from == 0 || *static_cast<int*>(event) < held_from;
  }
  // Events recorded from now on stay not done until release_events().
  void hold_events() {
    std::lock_guard lock(mu_);
    held_from = records + 1;
  }
  void release_events() {
    std::lock_guard lock(mu_);
    held_from = 0;
  }
  void fail_events(common::Status error) {
    std::lock_guard lock(mu_);
    event_error = std::move(error);
  }

  struct Wait {
    void* waiter;
    void* stream;
    void* event;
  };
  int allocs = 0, pinned_allocs = 0, live = 0, copies = 0, copy_entries = 0, scales = 0,
      syncs = 0;
  int classified_entries = 0;  // entries of copy() (copy_on_device: none)
  int events_made = 0, live_events = 0, records = 0;
  std::vector<Wait> waits;     // of stream_wait(), in order
  std::vector<void*> streams;  // of copy(), copy_on_device() and scale(), in order
  std::vector<void*> synced;   // of synchronize()
  std::vector<void*> recorded; // streams of event_record(), in order
  std::vector<transports::DeviceCopy> copied;  // every entry copied, in order

 private:
  common::Status copy_locked(std::span<const transports::DeviceCopy> entries, void* stream) {
    ++copies;
    copy_entries += static_cast<int>(entries.size());
    streams.push_back(stream);
    for (const auto& c : entries) {
      std::memmove(c.dst, c.src, c.bytes);
      copied.push_back(c);
    }
    return common::Status::ok();
  }

  const int device_;
  void* const comm_;
  const bool events_;
  int held_from = 0;  // 0: nothing held
  common::Status event_error;
  const std::string name_ = "host-device-work";
  std::mutex mu_;
};

}  // namespace hvd::runtime::testing
