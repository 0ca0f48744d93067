// Work on one device's memory around a collective, without a communicator:
// device and pinned host memory, batched copies, the end of a reduction
// (runtime/engine/scale.h's finish_reduction) and a bounded wait. The engine's
// device data plane (runtime/engine/device_data_plane.h) and the staging of
// CUDA tensors for the CPU transport (transports/staging/) use it. A CUDA
// transport plugin of ABI version 2 provides it (plugin/plugin_device.h:
// the device_* functions); the registry opens one per process set
// (TransportRegistry::open_device).
//
// Every call but synchronize() only enqueues on `stream` (a cudaStream_t,
// opaque here; null: the legacy default stream) and returns at once.
// A provider with a communication stream (comm_stream()) gets every device
// op of the engine there, ordered after the op's stream by stream_wait().
// Callable from several threads (the engine thread, and user threads
// copying engine-allocated outputs); synchronize() calls are serialized by
// the implementation.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "common/data_type.h"
#include "common/status.h"

namespace hvd::transports {

class Transport;

// One entry of a batched copy (device or pinned host memory, any direction;
// entries must not overlap). Layout-compatible with hvd_plugin_copy.
struct DeviceCopy {
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
};

class DeviceWork {
 public:
  virtual ~DeviceWork() = default;

  // "nccl device 0": names the provider and the device in errors.
  virtual const std::string& name() const = 0;
  virtual int device() const = 0;

  // `bytes` of device memory, or page-locked host memory when pinned_host.
  virtual common::Result<void*> alloc(size_t bytes, bool pinned_host) = 0;
  virtual void free(void* memory, bool pinned_host) = 0;
  virtual common::Status copy(std::span<const DeviceCopy> copies, void* stream) = 0;
  // data = data / divisor * factor, as runtime::finish_reduction (count
  // elements of `type`; divisor 1 and factor 1: nothing).
  virtual common::Status scale(void* data, size_t count, common::DataType type, int divisor,
                               double factor, void* stream) = 0;
  // Until `stream`'s work so far is done, at most the transport timeout.
  virtual common::Status synchronize(void* stream) = 0;

  // The device's communication stream, on which the engine runs device ops
  // (never the framework's stream); null when the provider has none (a
  // plugin of ABI version 2: ops then run on their own stream).
  virtual void* comm_stream() const = 0;
  // `waiter` waits on the device (no host wait) for `event` when it is not
  // null (recorded by the framework on `stream` when the op was enqueued),
  // else for the work enqueued on `stream` so far.
  virtual common::Status stream_wait(void* waiter, void* stream, void* event) = 0;

  // Events (a plugin of ABI version 4): has_events() false means none, and
  // the engine then waits for each batch with synchronize() as before.
  // An event is created once and recorded many times; query() says whether
  // the work before its last record is done, never blocking.
  virtual bool has_events() const { return false; }
  virtual common::Result<void*> event_create() {
    return common::failed_precondition(name() + " has no events");
  }
  virtual void event_destroy(void* /*event*/) {}
  virtual common::Status event_record(void* /*event*/, void* /*stream*/) {
    return common::failed_precondition(name() + " has no events");
  }
  virtual common::Result<bool> event_query(void* /*event*/) {
    return common::failed_precondition(name() + " has no events");
  }
  // copy() whose every entry's dst and src the caller knows to be device
  // memory (from the tensors' devices, decided once at enqueue): nothing is
  // classified per entry. Default: copy().
  virtual common::Status copy_on_device(std::span<const DeviceCopy> copies, void* stream) {
    return copy(copies, stream);
  }
};

// Optional extension of a Transport whose ops enqueue on a CUDA stream (a
// plugin of the CUDA device, the staging transport): the stream of the next
// collectives (null: the default stream). Engine thread only, like the ops.
class StreamedTransport {
 public:
  virtual ~StreamedTransport() = default;
  virtual void set_stream(void* stream) = 0;
  // OK, or the failure of collectives enqueued earlier that shows only
  // asynchronously (a plugin of ABI version 4: ncclCommGetAsyncError); a
  // failure leaves the transport failed. Never blocks; any thread (the
  // engine's completion thread asks while it waits for a batch's event).
  virtual common::Status async_error() { return common::Status::ok(); }
};

// What a process set's device ops run on: the GPU transport and the device
// work of the same device (owned together by the set's DeviceRoute).
struct DeviceLink {
  std::unique_ptr<Transport> transport;
  std::shared_ptr<DeviceWork> work;
};

}  // namespace hvd::transports
