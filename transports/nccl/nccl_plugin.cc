// libhvd_nccl.so's entry point: the hvd_transport_plugin object that
// libhvd.so finds with dlsym (transports/plugin/transport_plugin.h).
//
// In this build the plugin probes for real (CUDA devices, NCCL) but its
// collectives are not implemented yet: create() and every op fail with
// HVD_ERR_UNIMPLEMENTED, and can_run() says so on a machine with a GPU
// (docs/gpu.md).
#include <cstdio>
#include <string>

#include "transports/nccl/cuda_probe.h"
#include "transports/plugin/transport_plugin.h"

namespace hvd::transports::nccl {

namespace {

constexpr char kNotImplemented[] =
    "the nccl transport's collectives are not implemented yet in this build";

int32_t not_implemented(hvd_plugin_status* status) {
  status->code = HVD_ERR_UNIMPLEMENTED;
  std::snprintf(status->message, sizeof(status->message), "%s", kNotImplemented);
  return status->code;
}

int32_t can_run(char* why, size_t why_len) {
  const CudaProbe probe = probe_cuda();
  std::string reason = probe.reason;
  if (probe.usable) {
    reason = std::to_string(probe.devices) + " CUDA device(s) and NCCL " + probe.nccl_version +
             " found, but " + kNotImplemented;
  }
  std::snprintf(why, why_len, "%s", reason.c_str());
  return 0;
}

int32_t create(const hvd_plugin_world*, void** handle, hvd_plugin_status* status) {
  *handle = nullptr;
  return not_implemented(status);
}

int32_t allreduce(void*, void*, size_t, int32_t, int32_t, void*, hvd_plugin_status* status) {
  return not_implemented(status);
}

int32_t allgatherv(void*, const void*, size_t, void*, size_t, const int64_t*, int32_t, void*,
                   hvd_plugin_status* status) {
  return not_implemented(status);
}

int32_t broadcast(void*, void*, size_t, int32_t, void*, hvd_plugin_status* status) {
  return not_implemented(status);
}

int32_t alltoallv(void*, const void*, size_t, const int64_t*, void*, size_t, const int64_t*,
                  int32_t, void*, hvd_plugin_status* status) {
  return not_implemented(status);
}

int32_t reducescatter(void*, const void*, size_t, void*, size_t, const int64_t*, int32_t, int32_t,
                      int32_t, void*, hvd_plugin_status* status) {
  return not_implemented(status);
}

int32_t barrier(void*, void*, hvd_plugin_status* status) { return not_implemented(status); }

void abort_transport(void*, int32_t, const char*) {}

void destroy(void*) {}

}  // namespace

}  // namespace hvd::transports::nccl

extern "C" __attribute__((visibility("default")))
const hvd_transport_plugin_t hvd_transport_plugin = {
    sizeof(hvd_transport_plugin_t),
    HVD_TRANSPORT_PLUGIN_ABI_VERSION,
    "nccl",
    HVD_PLUGIN_DEVICE_CUDA,
    hvd::transports::nccl::can_run,
    hvd::transports::nccl::create,
    hvd::transports::nccl::allreduce,
    hvd::transports::nccl::allgatherv,
    hvd::transports::nccl::broadcast,
    hvd::transports::nccl::alltoallv,
    hvd::transports::nccl::reducescatter,
    hvd::transports::nccl::barrier,
    hvd::transports::nccl::abort_transport,
    hvd::transports::nccl::destroy,
};
