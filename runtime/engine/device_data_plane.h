// The DataPlane of device ops (data_plane.h): the fusion buffer and
// engine-allocated outputs in device memory, packing and unpacking as one
// batched copy each (DeviceWork::copy) and one scaling of the whole fused
// buffer (DeviceWork::scale, finish_reduction's semantics), identities for a
// joined rank copied from pinned host memory; everything enqueued on the
// batch's stream, which the GPU transport gets too
// (StreamedTransport::set_stream) so the collective is ordered after the
// packing. The batch's stream is the device's communication stream
// (DeviceWork::comm_stream), made to wait on the device for each op's ready
// event (hvd_op.ready_event) or its stream's work: never the framework's
// stream, whose compute goes on meanwhile. A provider without one (a
// plugin of ABI version 2): the ops' own stream (hvd_op.stream).
// synchronize() waits for that stream at the end of every batch:
// a handle completes only when its result is in place (so the next batch
// may reuse the fusion buffer and the pinned scratch).
//
// Memory is allocated through the work (the plugin's device_alloc), grown
// as needed and freed with the plane (with the set's DeviceRoute); an
// engine-allocated output holds the work, so it outlives the engine safely.
// Bool has no arithmetic: an Average or a scaling of bool fails like the
// host's (runtime/engine/scale.h's message), before anything is enqueued.
#pragma once

#include <memory>
#include <vector>

#include "runtime/engine/data_plane.h"
#include "transports/device_work.h"

namespace hvd::runtime::engine {

class DeviceDataPlane final : public DataPlane {
 public:
  // `streamed`: the GPU transport when it takes streams (null otherwise);
  // it must outlive this plane.
  DeviceDataPlane(std::shared_ptr<transports::DeviceWork> work,
                  transports::StreamedTransport* streamed);
  ~DeviceDataPlane() override;
  DeviceDataPlane(const DeviceDataPlane&) = delete;
  DeviceDataPlane& operator=(const DeviceDataPlane&) = delete;

  bool on_device() const override { return true; }
  common::Status begin(std::span<const OpStream> ops) override;
  common::Status synchronize() override;
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
  common::Status copy_all();  // copies_ on stream_, then clears it

  std::shared_ptr<transports::DeviceWork> work_;
  transports::StreamedTransport* streamed_;
  void* stream_ = nullptr;  // the current batch's
  Memory fusion_;           // device memory
  Memory identity_;         // pinned host: a joined rank's identity elements
  std::vector<transports::DeviceCopy> copies_;
};

}  // namespace hvd::runtime::engine
