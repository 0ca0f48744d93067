// The nccl plugin's device context (ABI version 2's device_* functions):
// memory, copies and the arithmetic around a collective on one CUDA device,
// without a communicator (staging through host memory needs none).
// Every call sets the device first (the engine thread's current device may
// be another); synchronize() polls an event with the context's deadline.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "transports/plugin/transport_plugin.h"

namespace hvd::transports::nccl {

class DeviceContext {
 public:
  // nullptr with *status set on failure.
  static DeviceContext* open(int32_t device, int64_t timeout_ms, hvd_plugin_status* status);
  ~DeviceContext();

  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  int32_t alloc(size_t bytes, bool pinned_host, void** memory, hvd_plugin_status* status);
  void free(void* memory, bool pinned_host);
  int32_t copy(const hvd_plugin_copy* copies, size_t n, void* stream, hvd_plugin_status* status);
  int32_t scale(void* data, size_t count, int32_t dtype, int32_t divisor, double factor,
                void* stream, hvd_plugin_status* status);
  int32_t synchronize(void* stream, hvd_plugin_status* status);

 private:
  DeviceContext(int32_t device, std::chrono::milliseconds timeout)
      : device_(device), timeout_(timeout) {}
  // cudaSetDevice; its error in *status.
  int32_t enter(const char* what, hvd_plugin_status* status);
  int32_t check(const char* what, cudaError_t error, hvd_plugin_status* status);

  const int32_t device_;
  const std::chrono::milliseconds timeout_;
  cudaEvent_t done_ = nullptr;
};

}  // namespace hvd::transports::nccl
