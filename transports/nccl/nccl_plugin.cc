// libhvd_nccl.so's entry point: the hvd_transport_plugin object that
// libhvd.so finds with dlsym (transports/plugin/transport_plugin.h). The
// handle is a NcclComm (transports/nccl/nccl_comm.h); the ops are in
// nccl_collectives.cc. can_run() probes for real: a CUDA device the runtime
// can use and NCCL (docs/gpu.md).
#include <cstdio>
#include <string>

#include "transports/nccl/cuda_probe.h"
#include "transports/nccl/device_context.h"
#include "transports/nccl/nccl_collectives.h"
#include "transports/nccl/nccl_comm.h"
#include "transports/plugin/transport_plugin.h"

namespace hvd::transports::nccl {

namespace {

NcclComm& comm_of(void* handle) { return *static_cast<NcclComm*>(handle); }

int32_t can_run(char* why, size_t why_len) {
  const CudaProbe probe = probe_cuda();
  std::snprintf(why, why_len, "%s", probe.usable ? "" : probe.reason.c_str());
  return probe.usable ? 1 : 0;
}

int32_t create(const hvd_plugin_world* world, void** handle, hvd_plugin_status* status) {
  *handle = NcclComm::create(*world, status);
  return *handle != nullptr ? HVD_OK : status->code;
}

int32_t allreduce(void* handle, void* data, size_t bytes, int32_t dtype, int32_t op, void* stream,
                  hvd_plugin_status* status) {
  return nccl_allreduce(comm_of(handle), data, bytes, dtype, op, stream, status);
}

int32_t allgatherv(void* handle, const void* in, size_t in_bytes, void* out, size_t out_bytes,
                   const int64_t* counts, int32_t ranks, void* stream, hvd_plugin_status* status) {
  return nccl_allgatherv(comm_of(handle), in, in_bytes, out, out_bytes, counts, ranks, stream,
                         status);
}

int32_t broadcast(void* handle, void* data, size_t bytes, int32_t root, void* stream,
                  hvd_plugin_status* status) {
  return nccl_broadcast(comm_of(handle), data, bytes, root, stream, status);
}

int32_t alltoallv(void* handle, const void* in, size_t in_bytes, const int64_t* send_counts,
                  void* out, size_t out_bytes, const int64_t* recv_counts, int32_t ranks,
                  void* stream, hvd_plugin_status* status) {
  return nccl_alltoallv(comm_of(handle), in, in_bytes, send_counts, out, out_bytes, recv_counts,
                        ranks, stream, status);
}

int32_t reducescatter(void* handle, const void* in, size_t in_bytes, void* out, size_t out_bytes,
                      const int64_t* recv_counts, int32_t ranks, int32_t dtype, int32_t op,
                      void* stream, hvd_plugin_status* status) {
  return nccl_reducescatter(comm_of(handle), in, in_bytes, out, out_bytes, recv_counts, ranks,
                            dtype, op, stream, status);
}

int32_t barrier(void* handle, void* stream, hvd_plugin_status* status) {
  return nccl_barrier(comm_of(handle), stream, status);
}

int32_t async_error(void* handle, hvd_plugin_status* status) {
  return comm_of(handle).async_error(status);
}

int32_t shrink(void* handle, const hvd_plugin_world* world, const int32_t* excluded,
               int32_t n_excluded, void** new_handle, hvd_plugin_status* status) {
  *new_handle = comm_of(handle).shrink(*world, excluded, n_excluded, status);
  return *new_handle != nullptr ? HVD_OK : status->code;
}

void abort_transport(void* handle, int32_t code, const char* reason) {
  comm_of(handle).abort(code, reason != nullptr ? reason : "");
}

void destroy(void* handle) { delete static_cast<NcclComm*>(handle); }

DeviceContext& context_of(void* context) { return *static_cast<DeviceContext*>(context); }

int32_t device_open(int32_t device, int64_t timeout_ms, void** context,
                    hvd_plugin_status* status) {
  *context = DeviceContext::open(device, timeout_ms, status);
  return *context != nullptr ? HVD_OK : status->code;
}

void device_close(void* context) { delete static_cast<DeviceContext*>(context); }

int32_t device_alloc(void* context, size_t bytes, int32_t pinned_host, void** memory,
                     hvd_plugin_status* status) {
  return context_of(context).alloc(bytes, pinned_host != 0, memory, status);
}

void device_free(void* context, void* memory, int32_t pinned_host) {
  context_of(context).free(memory, pinned_host != 0);
}

int32_t device_copy(void* context, const hvd_plugin_copy* copies, size_t n, void* stream,
                    hvd_plugin_status* status) {
  return context_of(context).copy(copies, n, stream, status);
}

int32_t device_scale(void* context, void* data, size_t count, int32_t dtype, int32_t divisor,
                     double factor, void* stream, hvd_plugin_status* status) {
  return context_of(context).scale(data, count, dtype, divisor, factor, stream, status);
}

int32_t device_synchronize(void* context, void* stream, hvd_plugin_status* status) {
  return context_of(context).synchronize(stream, status);
}

int32_t device_comm_stream(void* context, void** stream, hvd_plugin_status* status) {
  *stream = context_of(context).comm_stream();
  status->code = HVD_OK;
  return HVD_OK;
}

int32_t device_stream_wait(void* context, void* waiter, void* stream, void* event,
                           hvd_plugin_status* status) {
  return context_of(context).stream_wait(waiter, stream, event, status);
}

int32_t device_event_create(void* context, void** event, hvd_plugin_status* status) {
  return context_of(context).event_create(event, status);
}

void device_event_destroy(void* context, void* event) { context_of(context).event_destroy(event); }

int32_t device_event_record(void* context, void* event, void* stream, hvd_plugin_status* status) {
  return context_of(context).event_record(event, stream, status);
}

int32_t device_event_query(void* context, void* event, int32_t* done, hvd_plugin_status* status) {
  return context_of(context).event_query(event, done, status);
}

int32_t device_copy_on_device(void* context, const hvd_plugin_copy* copies, size_t n,
                              void* stream, hvd_plugin_status* status) {
  return context_of(context).copy_on_device(copies, n, stream, status);
}

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
    hvd::transports::nccl::device_open,
    hvd::transports::nccl::device_close,
    hvd::transports::nccl::device_alloc,
    hvd::transports::nccl::device_free,
    hvd::transports::nccl::device_copy,
    hvd::transports::nccl::device_scale,
    hvd::transports::nccl::device_synchronize,
    hvd::transports::nccl::device_comm_stream,
    hvd::transports::nccl::device_stream_wait,
    hvd::transports::nccl::async_error,
    hvd::transports::nccl::device_event_create,
    hvd::transports::nccl::device_event_destroy,
    hvd::transports::nccl::device_event_record,
    hvd::transports::nccl::device_event_query,
    hvd::transports::nccl::device_copy_on_device,
    hvd::transports::nccl::shrink,
};
