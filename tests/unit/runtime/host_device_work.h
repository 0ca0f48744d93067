// A DeviceWork (transports/device_work.h) on host memory for unit tests:
// malloc, memmove, runtime::finish_reduction, a no-op synchronize; it counts
// its calls and live allocations and records the streams it was given, so a
// test proves what the engine asked of the device.
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
  explicit HostDeviceWork(int device = 0, void* comm = nullptr) : device_(device), comm_(comm) {}
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
    ++copies;
    copy_entries += static_cast<int>(entries.size());
    streams.push_back(stream);
    for (const auto& c : entries) std::memmove(c.dst, c.src, c.bytes);
    return common::Status::ok();
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

  struct Wait {
    void* waiter;
    void* stream;
    void* event;
  };
  int allocs = 0, pinned_allocs = 0, live = 0, copies = 0, copy_entries = 0, scales = 0,
      syncs = 0;
  std::vector<Wait> waits;     // of stream_wait(), in order
  std::vector<void*> streams;  // of copy() and scale(), in order
  std::vector<void*> synced;   // of synchronize()

 private:
  const int device_;
  void* const comm_;
  const std::string name_ = "host-device-work";
  std::mutex mu_;
};

}  // namespace hvd::runtime::testing
