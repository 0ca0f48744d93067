#include "transports/nccl/device_context.h"

#include <string>
#include <vector>

#include "transports/nccl/device_kernels.h"
#include "transports/nccl/plugin_status.h"

namespace hvd::transports::nccl {

namespace {

bool on_device(const void* p) {
  cudaPointerAttributes attributes{};
  return cudaPointerGetAttributes(&attributes, p) == cudaSuccess &&
         attributes.type == cudaMemoryTypeDevice;
}

}  // namespace

DeviceContext* DeviceContext::open(int32_t device, int64_t timeout_ms, hvd_plugin_status* status) {
  auto* context = new DeviceContext(
      device, std::chrono::milliseconds(timeout_ms > 0 ? timeout_ms : 30000));
  if (context->enter("opening the device", status) != HVD_OK ||
      context->check("cudaEventCreate", cudaEventCreateWithFlags(&context->done_,
                                                                 cudaEventDisableTiming),
                     status) != HVD_OK ||
      context->check("cudaEventCreate", cudaEventCreateWithFlags(&context->ready_,
                                                                 cudaEventDisableTiming),
                     status) != HVD_OK ||
      context->check("cudaStreamCreateWithFlags",
                     cudaStreamCreateWithFlags(&context->comm_, cudaStreamNonBlocking),
                     status) != HVD_OK) {
    delete context;
    return nullptr;
  }
  return context;
}

DeviceContext::~DeviceContext() {
  // Returns at once; CUDA frees the stream once its work is done (every
  // batch ended synchronized; a stuck one must not hold up the close).
  if (comm_ != nullptr) cudaStreamDestroy(comm_);
  if (done_ != nullptr) cudaEventDestroy(done_);
  if (ready_ != nullptr) cudaEventDestroy(ready_);
}

int32_t DeviceContext::stream_wait(void* waiter, void* stream, void* event,
                                   hvd_plugin_status* status) {
  if (enter("ordering the communication stream", status) != HVD_OK) return status->code;
  auto* w = static_cast<cudaStream_t>(waiter);
  if (event != nullptr) {
    return check("cudaStreamWaitEvent (the op's ready event)",
                 cudaStreamWaitEvent(w, static_cast<cudaEvent_t>(event), 0), status);
  }
  // The wait takes the event as recorded now: ready_ may be recorded again
  // at once for the next op.
  std::lock_guard<std::mutex> lock(ready_mu_);
  if (check("cudaEventRecord (the op's stream)",
            cudaEventRecord(ready_, static_cast<cudaStream_t>(stream)), status) != HVD_OK) {
    return status->code;
  }
  return check("cudaStreamWaitEvent", cudaStreamWaitEvent(w, ready_, 0), status);
}

int32_t DeviceContext::check(const char* what, cudaError_t error, hvd_plugin_status* status) {
  if (error == cudaSuccess) return HVD_OK;
  return report(status, HVD_ERR_INTERNAL,
                "CUDA device " + std::to_string(device_) + ": " + what + " failed: " +
                    cudaGetErrorName(error) + " (" + cudaGetErrorString(error) + ")");
}

int32_t DeviceContext::enter(const char* what, hvd_plugin_status* status) {
  const cudaError_t error = cudaSetDevice(device_);
  if (error == cudaSuccess) return HVD_OK;
  return report(status, HVD_ERR_UNAVAILABLE,
                "CUDA device " + std::to_string(device_) + ": " + what + ": cudaSetDevice failed: " +
                    cudaGetErrorName(error) + " (" + cudaGetErrorString(error) + ")");
}

int32_t DeviceContext::alloc(size_t bytes, bool pinned_host, void** memory,
                             hvd_plugin_status* status) {
  *memory = nullptr;
  if (enter("allocating", status) != HVD_OK) return status->code;
  if (bytes == 0) return HVD_OK;
  return pinned_host ? check("cudaHostAlloc", cudaHostAlloc(memory, bytes, cudaHostAllocDefault), status)
                     : check("cudaMalloc", cudaMalloc(memory, bytes), status);
}

void DeviceContext::free(void* memory, bool pinned_host) {
  if (memory == nullptr) return;
  cudaSetDevice(device_);
  if (pinned_host) {
    cudaFreeHost(memory);
  } else {
    cudaFree(memory);
  }
}

int32_t DeviceContext::copy(const hvd_plugin_copy* copies, size_t n, void* stream,
                            hvd_plugin_status* status) {
  if (enter("copying", status) != HVD_OK) return status->code;
  auto* s = static_cast<cudaStream_t>(stream);
  // Device-to-device entries go in batched launches; the rest (staging
  // through host memory) as one cudaMemcpyAsync each.
  std::vector<DeviceCopy> batch;
  batch.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const hvd_plugin_copy& c = copies[i];
    if (c.bytes == 0 || c.dst == c.src) continue;
    if (on_device(c.dst) && on_device(c.src)) {
      batch.push_back(DeviceCopy{c.dst, c.src, c.bytes});
    } else if (check("cudaMemcpyAsync", cudaMemcpyAsync(c.dst, c.src, c.bytes, cudaMemcpyDefault, s),
                     status) != HVD_OK) {
      return status->code;
    }
  }
  return check("the batched copy kernel", batched_copy(batch.data(), batch.size(), s), status);
}

int32_t DeviceContext::scale(void* data, size_t count, int32_t dtype, int32_t divisor,
                             double factor, void* stream, hvd_plugin_status* status) {
  if (divisor <= 0) {
    return report(status, HVD_ERR_INVALID_ARGUMENT, "cannot divide by " + std::to_string(divisor));
  }
  if (dtype == HVD_BOOL && (divisor != 1 || factor != 1.0)) {
    return report(status, HVD_ERR_INVALID_ARGUMENT, "bool has no arithmetic: no average, no scaling");
  }
  if (count == 0 || (divisor == 1 && factor == 1.0)) return HVD_OK;
  if (enter("scaling", status) != HVD_OK) return status->code;
  auto* s = static_cast<cudaStream_t>(stream);
  const cudaError_t error = factor != 1.0
                                ? scale_on_device(data, count, dtype, factor / divisor, s)
                                : divide_on_device(data, count, dtype, divisor, s);
  return check("the scale kernel", error, status);
}

int32_t DeviceContext::synchronize(void* stream, hvd_plugin_status* status) {
  if (enter("synchronizing", status) != HVD_OK) return status->code;
  if (check("cudaEventRecord", cudaEventRecord(done_, static_cast<cudaStream_t>(stream)), status) !=
      HVD_OK) {
    return status->code;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (int round = 0;; ++round) {
    const cudaError_t ready = cudaEventQuery(done_);
    if (ready == cudaSuccess) return HVD_OK;
    if (ready != cudaErrorNotReady) return check("cudaEventQuery", ready, status);
    if (std::chrono::steady_clock::now() > deadline) {
      return report(status, HVD_ERR_TIMEOUT,
                    "CUDA device " + std::to_string(device_) + ": the stream's work did not "
                    "complete within " + std::to_string(timeout_.count()) + " ms");
    }
    poll_pause(round);
  }
}

int32_t DeviceContext::event_create(void** event, hvd_plugin_status* status) {
  *event = nullptr;
  if (enter("creating an event", status) != HVD_OK) return status->code;
  cudaEvent_t made = nullptr;
  if (check("cudaEventCreateWithFlags", cudaEventCreateWithFlags(&made, cudaEventDisableTiming),
            status) != HVD_OK) {
    return status->code;
  }
  *event = made;
  return HVD_OK;
}

void DeviceContext::event_destroy(void* event) {
  if (event == nullptr) return;
  cudaSetDevice(device_);
  cudaEventDestroy(static_cast<cudaEvent_t>(event));
}

int32_t DeviceContext::event_record(void* event, void* stream, hvd_plugin_status* status) {
  if (enter("recording an event", status) != HVD_OK) return status->code;
  return check("cudaEventRecord",
               cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)),
               status);
}

int32_t DeviceContext::event_query(void* event, int32_t* done, hvd_plugin_status* status) {
  *done = 0;
  // No cudaSetDevice: cudaEventQuery works from any device, and the
  // completion thread asks often.
  const cudaError_t ready = cudaEventQuery(static_cast<cudaEvent_t>(event));
  if (ready == cudaSuccess) {
    *done = 1;
    return HVD_OK;
  }
  if (ready == cudaErrorNotReady) return HVD_OK;
  return check("cudaEventQuery", ready, status);
}

int32_t DeviceContext::copy_on_device(const hvd_plugin_copy* copies, size_t n, void* stream,
                                      hvd_plugin_status* status) {
  if (enter("copying", status) != HVD_OK) return status->code;
  std::vector<DeviceCopy> batch;
  batch.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const hvd_plugin_copy& c = copies[i];
    if (c.bytes > 0 && c.dst != c.src) batch.push_back(DeviceCopy{c.dst, c.src, c.bytes});
  }
  return check("the batched copy kernel",
               batched_copy(batch.data(), batch.size(), static_cast<cudaStream_t>(stream)),
               status);
}

}  // namespace hvd::transports::nccl
