// The transport for device (CUDA) ops, from the gpu_transport setting
// (HVD_GPU_TRANSPORT; docs/gpu.md): checked against the registry when hvd
// starts, resolved and created per process set at the set's first device op
// (SetEngine's DeviceRoute calls connect()). Nothing falls back silently:
//  - auto: nccl when it can run here; otherwise connect() fails with nccl's
//    reason;
//  - gloo: staging CUDA tensors through host memory for the CPU transport;
//    not built yet, connect() says so;
//  - another name: a registered CUDA transport (nccl, or a plugin of the
//    transport_plugins setting); connect() fails with its reason when it
//    cannot run here.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "transports/registry.h"

namespace hvd::runtime {

class GpuTransportChoice {
 public:
  // kInvalidArgument naming `setting` when it is no transport for CUDA
  // tensors (unknown, or a CPU transport), listing the choices.
  static common::Result<GpuTransportChoice> parse(const std::string& setting,
                                                  const transports::TransportRegistry& registry);

  // The transport for one set's device ops (context.device: the ordinal).
  // kFailedPrecondition "HVD_GPU_TRANSPORT=X cannot run here: <reason>" when
  // it cannot; the factory's Status when it cannot connect.
  common::Result<std::unique_ptr<transports::Transport>> connect(
      const transports::TransportRegistry& registry,
      const transports::TransportContext& context) const;

  const std::string& setting() const { return setting_; }

 private:
  explicit GpuTransportChoice(std::string setting) : setting_(std::move(setting)) {}
  std::string setting_;
};

}  // namespace hvd::runtime
