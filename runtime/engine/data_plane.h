// Where an Executor's bytes live and how they are moved and scaled: the
// fusion buffer, engine-allocated outputs, packing (times prescale) and
// unpacking (an Average's division, postscale), the in-place scaling of a
// batch of one, and the end of a batch (its completion event, or a wait).
//  - HostDataPlane (host_data_plane.h): host memory, runtime/engine/scale.h on the
//    CPU. CPU ops; it is what the executor always did.
//  - DeviceDataPlane (device_data_plane.h): device memory through a
//    DeviceWork (a CUDA plugin's device_* functions), on the device's
//    communication stream; end() records the batch's completion event
//    (device_completions.h completes the handles later). Device ops.
// A process set's DeviceRoute gives its device executor the device plane;
// the CPU executor has the host plane. Engine thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/data_type.h"
#include "common/status.h"
#include "runtime/engine/device_event.h"
#include "runtime/engine/fusion_buffer.h"
#include "runtime/engine/handle_table.h"

namespace hvd::runtime::engine {

// A device op's stream and the event recorded on it at enqueue (null: none).
struct OpStream {
  void* stream = nullptr;
  void* ready = nullptr;
  bool operator==(const OpStream&) const = default;
};

class DataPlane {
 public:
  virtual ~DataPlane() = default;

  // Whether the memory is a device's (then begin() and end() matter).
  virtual bool on_device() const = 0;
  // Starts a batch of device ops from these streams. With the device's
  // communication stream, everything runs there, after it waited (on the
  // device) for each op's ready event, or its stream's work so far. Without
  // one (an older plugin), on ops[0]'s stream, the others waited for on the
  // host. Host: nothing.
  virtual common::Status begin(std::span<const OpStream> ops) = 0;
  // Ends a batch. A device with events: records the batch's completion
  // event after its work and returns it at once (the batch completes when
  // the event does). Without events: waits until the batch's work on the
  // device is done (bounded by the transport timeout) and returns null, as
  // does the host.
  virtual common::Result<std::shared_ptr<DeviceEvent>> end() = 0;

  // An engine-allocated output of `bytes`, its shape set.
  virtual common::Result<OpOutput> allocate(size_t bytes, std::vector<int64_t> shape) = 0;
  // At least `bytes` of fusion memory (contents not kept when it grows).
  virtual common::Result<uint8_t*> reserve(size_t bytes) = 0;
  virtual uint8_t* fusion() = 0;

  // FusionBuffer::pack / unpack (fusion_buffer.h) on this plane's memory.
  virtual common::Result<size_t> pack(std::span<const FusionPart> parts, DataType type,
                                      ReduceOp op, double prescale) = 0;
  virtual common::Status unpack(std::span<const FusionPart> parts, DataType type, int divisor,
                                double postscale) = 0;
  // runtime::scale: dst = src * factor (dst may equal src).
  virtual common::Status scale(void* dst, const void* src, size_t count, DataType type,
                               double factor) = 0;
  // runtime::finish_reduction in place.
  virtual common::Status finish(void* data, size_t count, DataType type, int divisor,
                                double factor) = 0;
  // `bytes` from src to dst (may overlap on the host).
  virtual common::Status copy(void* dst, const void* src, size_t bytes) = 0;
};

}  // namespace hvd::runtime::engine
