// The plugin's ops (transports/plugin/transport_plugin.h) as NCCL calls on a
// NcclComm: counts arrive in bytes and leave as elements; uneven allgather
// and reducescatter are grouped broadcasts and reduces (as Horovod does),
// alltoall is grouped sends and receives, barrier an allreduce of one int.
#pragma once

#include <cstddef>
#include <cstdint>

#include "transports/nccl/nccl_comm.h"

namespace hvd::transports::nccl {

int32_t nccl_allreduce(NcclComm& comm, void* data, size_t bytes, int32_t dtype, int32_t op,
                       void* stream, hvd_plugin_status* status);
int32_t nccl_allgatherv(NcclComm& comm, const void* in, size_t in_bytes, void* out,
                        size_t out_bytes, const int64_t* counts, int32_t ranks, void* stream,
                        hvd_plugin_status* status);
int32_t nccl_broadcast(NcclComm& comm, void* data, size_t bytes, int32_t root, void* stream,
                       hvd_plugin_status* status);
int32_t nccl_alltoallv(NcclComm& comm, const void* in, size_t in_bytes,
                       const int64_t* send_counts, void* out, size_t out_bytes,
                       const int64_t* recv_counts, int32_t ranks, void* stream,
                       hvd_plugin_status* status);
int32_t nccl_reducescatter(NcclComm& comm, const void* in, size_t in_bytes, void* out,
                           size_t out_bytes, const int64_t* recv_counts, int32_t ranks,
                           int32_t dtype, int32_t op, void* stream, hvd_plugin_status* status);
int32_t nccl_barrier(NcclComm& comm, void* stream, hvd_plugin_status* status);

}  // namespace hvd::transports::nccl
