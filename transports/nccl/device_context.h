// The nccl plugin's device context (ABI version 2's device_* functions):
// memory, copies and the arithmetic around a collective on one CUDA device,
// without a communicator (staging through host memory needs none).
// Every call sets the device first (the engine thread's current device may
// be another); synchronize() polls an event with the context's deadline.
// ABI version 3: the context owns the device's communication stream (made
// non-blocking, so it never waits for, nor holds up, the legacy default
// stream the framework may compute on); stream_wait() orders it after the
// framework's stream with an event, on the device. ABI version 4: events
// (timing disabled) the engine records after a batch and queries without
// blocking, and copy_on_device(), the batched copy of entries the caller
// knows are device memory (no cudaPointerGetAttributes per entry).
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>

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
  void* comm_stream() const { return comm_; }
  int32_t stream_wait(void* waiter, void* stream, void* event, hvd_plugin_status* status);
  int32_t event_create(void** event, hvd_plugin_status* status);
  void event_destroy(void* event);
  int32_t event_record(void* event, void* stream, hvd_plugin_status* status);
  // *done 1 (cudaSuccess) or 0 (cudaErrorNotReady); any other error fails.
  int32_t event_query(void* event, int32_t* done, hvd_plugin_status* status);
  int32_t copy_on_device(const hvd_plugin_copy* copies, size_t n, void* stream,
                         hvd_plugin_status* status);

 private:
  DeviceContext(int32_t device, std::chrono::milliseconds timeout)
      : device_(device), timeout_(timeout) {}
  // cudaSetDevice; its error in *status.
  int32_t enter(const char* what, hvd_plugin_status* status);
  int32_t check(const char* what, cudaError_t error, hvd_plugin_status* status);

  const int32_t device_;
  const std::chrono::milliseconds timeout_;
  cudaEvent_t done_ = nullptr;
  cudaEvent_t ready_ = nullptr;   // stream_wait() without the framework's event
  cudaStream_t comm_ = nullptr;  // the communication stream
  std::mutex ready_mu_;          // one stream_wait() at a time (ready_ is shared)
};

}  // namespace hvd::transports::nccl
