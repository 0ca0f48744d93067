// The transport for device (CUDA) ops, from the gpu_transport setting
// (HVD_GPU_TRANSPORT; docs/gpu.md): checked against the registry when hvd
// starts, resolved and created per process set at the set's first device op
// (SetEngine's DeviceRoute calls connect()). The names come from the
// transport table (transports/table/transport_table.h). Nothing falls back
// silently:
//  - auto: the table's first CUDA transport (nccl) when it can run here;
//    otherwise connect() fails with its reason;
//  - the table's staged one (gloo): CUDA tensors staged through pinned host
//    memory for the best CPU transport of the set ("auto": shm on one host,
//    hierarchical across equal hosts, else gloo; transports/staging/), the
//    device work (copies, pinned memory) from the CUDA plugin named by
//    gpu_staging_plugin (HVD_GPU_STAGING_PLUGIN, default nccl:
//    libhvd_nccl.so's device functions, which need no NCCL communicator);
//  - another name: a registered CUDA transport (nccl, or a plugin of the
//    transport_plugins setting); connect() fails with its reason when it
//    cannot run here.
// Either way connect() also opens the device work for the op's device (the
// engine's device fusion buffer, scaling and outputs): a CUDA plugin of ABI
// version 1 has none, and device ops then fail saying so.
// With the hierarchical_allreduce setting on, a set whose ranks span hosts
// of equal rank counts gets a hierarchical transport (gpu_hierarchical.h):
// the GPU transport within each host and gloo across hosts for allreduce;
// staged (gloo), the CPU hierarchical transport (shm within hosts) is staged.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "transports/registry.h"
#include "transports/table/transport_table.h"

namespace hvd::runtime {

class GpuTransportChoice {
 public:
  // kInvalidArgument naming `setting` when it is no transport for CUDA
  // tensors (unknown, or a CPU transport), listing the choices.
  // `staging_plugin` (gpu_staging_plugin; default the table's first CUDA
  // transport): the CUDA transport whose device work stages for `gloo`;
  // kInvalidArgument when it is none.
  // `hierarchical`: the hierarchical_allreduce setting; `staging_chunk`:
  // gpu_staging_chunk (bytes of a staged allreduce per step).
  static common::Result<GpuTransportChoice> parse(const std::string& setting,
                                                  const transports::TransportRegistry& registry,
                                                  const std::string& staging_plugin = std::string(
                                                      transports::default_gpu_transport()),
                                                  bool hierarchical = false,
                                                  size_t staging_chunk = size_t{4} << 20);

  // The transport and device work for one set's device ops (context.device:
  // the ordinal; context.timeout bounds the device's waits).
  // kFailedPrecondition "HVD_GPU_TRANSPORT=X cannot run here: <reason>" when
  // it cannot; "HVD_GPU_TRANSPORT=X: <why>" when the device work cannot be
  // had (a plugin of ABI version 1) or the factory cannot connect.
  common::Result<transports::DeviceLink> connect(
      const transports::TransportRegistry& registry,
      const transports::TransportContext& context) const;

  const std::string& setting() const { return setting_; }
  bool hierarchical() const { return hierarchical_; }

 private:
  GpuTransportChoice(std::string setting, std::string staging_plugin, bool hierarchical,
                     size_t staging_chunk)
      : setting_(std::move(setting)), staging_plugin_(std::move(staging_plugin)),
        hierarchical_(hierarchical), staging_chunk_(staging_chunk) {}
  common::Result<transports::DeviceLink> connect_staged(
      const transports::TransportRegistry& registry,
      const transports::TransportContext& context) const;

  std::string setting_;
  std::string staging_plugin_;
  bool hierarchical_;
  size_t staging_chunk_;
};

}  // namespace hvd::runtime
