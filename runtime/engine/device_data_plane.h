// The DataPlane of device ops (data_plane.h): the fusion buffer and
// engine-allocated outputs in device memory, packing and unpacking as one
// batched copy each (DeviceWork::copy_on_device: the ops' tensors are
// device memory, known from their device at enqueue, so nothing is
// classified per entry) and one scaling of the whole fused buffer
// (DeviceWork::scale, finish_reduction's semantics), identities for a
// joined rank copied from pinned host memory; everything enqueued on the
// batch's stream, which the GPU transport gets too
// (StreamedTransport::set_stream) so the collective is ordered after the
// packing. The batch's stream is the device's communication stream
// (DeviceWork::comm_stream), made to wait on the device for each op's ready
// event (hvd_op.ready_event) or its stream's work: never the framework's
// stream, whose compute goes on meanwhile. A provider without one (a
// plugin of ABI version 2): the ops' own stream (hvd_op.stream).
//
// end(): with events (a plugin of ABI version 4) the batch's completion
// event, recorded at once: several batches are in flight, ordered by the
// stream (the next batch's packing runs after this one's unpacking). The
// rare steps that rewrite memory an earlier batch may still read on the
// device wait for the stream first: growing the fusion buffer, refilling a
// joined rank's identities. Without events, end() waits for the stream.
//
// Fusion entries start at multiples of 16 bytes (kFusionAlign), so every
// entry is aligned for vector loads whatever the counts before it (an odd
// float16 count no longer misaligns the ones after it).
//
// Memory is allocated through the work (the plugin's device_alloc), grown
// as needed and freed with the plane (with the set's DeviceRoute);
// engine-allocated outputs come from a DeviceOutputPool (no allocation or
// free per op: cudaFree waits for the whole device) and hold it, so they
// outlive the engine safely.
// Bool has no arithmetic: an Average or a scaling of bool fails like the
// host's (runtime/engine/scale.h's message), before anything is enqueued.
#pragma once

#include <memory>
#include <vector>

#include "runtime/engine/data_plane.h"
#include "runtime/engine/device_output_pool.h"
#include "transports/device_work.h"

namespace hvd::runtime::engine {

class DeviceDataPlane final : public DataPlane {
 public:
  static constexpr size_t kFusionAlign = 16;

  // `streamed`: the GPU transport when it takes streams (null otherwise);
  // it must outlive this plane.
  DeviceDataPlane(std::shared_ptr<transports::DeviceWork> work,
                  transports::StreamedTransport* streamed);
  ~DeviceDataPlane() override;
  DeviceDataPlane(const DeviceDataPlane&) = delete;
  DeviceDataPlane& operator=(const DeviceDataPlane&) = delete;

  bool on_device() const override { return true; }
  common::Status begin(std::span<const OpStream> ops) override;
  common::Result<std::shared_ptr<DeviceEvent>> end() override;
  common::Result<OpOutput> allocate(size_t bytes, std::vector<int64_t> shape) override;
  common::Result<uint8_t*> reserve(size_t bytes) override;
  uint8_t* fusion() override { return static_cast<uint8_t*>(fusion_.data); }
  common::Result<size_t> pack(std::span<const FusionPart> parts, DataType type, ReduceOp op,
                              double prescale) override;
  common::Status unpack(std::span<const FusionPart> parts, DataType type, int divisor,
                        double postscale) override;
  common::Status scale(void* dst, const void* src, size_t count, DataType type,
                       double factor) override;
  common::Status finish(void* data, size_t count, DataType type, int divisor,
                        double factor) override;
  common::Status copy(void* dst, const void* src, size_t bytes) override;

 private:
  struct Memory {
    void* data = nullptr;
    size_t capacity = 0;
  };
  // At least `bytes` in `memory` (device, or pinned host), contents lost.
  common::Result<void*> grow(Memory& memory, size_t bytes, bool pinned_host);
  // copies_ on stream_, then clears it; `on_device`: every entry is device
  // memory (DeviceWork::copy_on_device).
  common::Status copy_all(bool on_device);
  // Waits for stream_ when batches may be in flight on it (events).
  common::Status quiesce();

  std::shared_ptr<transports::DeviceWork> work_;
  std::shared_ptr<DeviceOutputPool> outputs_;
  transports::StreamedTransport* streamed_;
  void* stream_ = nullptr;  // the current batch's
  Memory fusion_;           // device memory
  Memory identity_;         // pinned host: a joined rank's identity elements
  std::vector<transports::DeviceCopy> copies_;
};

}  // namespace hvd::runtime::engine
