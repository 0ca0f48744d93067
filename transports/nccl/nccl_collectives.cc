#include "transports/nccl/nccl_collectives.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "transports/nccl/nccl_types.h"

namespace hvd::transports::nccl {

namespace {

int32_t refuse(const NcclComm& comm, hvd_plugin_status* status, const std::string& why) {
  status->code = HVD_ERR_INVALID_ARGUMENT;
  std::snprintf(status->message, sizeof(status->message), "nccl on rank %d: %s", comm.rank(),
                why.c_str());
  return status->code;
}

std::string bytes_of(const char* op, size_t bytes) {
  return std::string(op) + " of " + std::to_string(bytes) + " bytes";
}

// Sum of counts[0..ranks); false when one is negative.
bool total_of(const int64_t* counts, int32_t ranks, size_t* total) {
  *total = 0;
  for (int32_t r = 0; r < ranks; ++r) {
    if (counts[r] < 0) return false;
    *total += static_cast<size_t>(counts[r]);
  }
  return true;
}

bool all_equal(const int64_t* counts, int32_t ranks) {
  for (int32_t r = 1; r < ranks; ++r) {
    if (counts[r] != counts[0]) return false;
  }
  return true;
}

// HVD_NCCL_TEST_STALL_MS: a test hook that holds the stream for that long
// before each op (a host function that sleeps), as a peer that never comes
// would: the op then times out and the communicator is aborted.
void stall_for_tests(cudaStream_t stream) {
  static const long stall_ms = [] {
    const char* value = std::getenv("HVD_NCCL_TEST_STALL_MS");
    return value != nullptr ? std::strtol(value, nullptr, 10) : 0L;
  }();
  if (stall_ms <= 0) return;
  cudaLaunchHostFunc(
      stream, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(stall_ms)); },
      nullptr);
}

char* at(void* base, size_t offset) { return static_cast<char*>(base) + offset; }
const char* at(const void* base, size_t offset) {
  return static_cast<const char*>(base) + offset;
}

}  // namespace

int32_t nccl_allreduce(NcclComm& comm, void* data, size_t bytes, int32_t dtype, int32_t op,
                       void* stream, hvd_plugin_status* status) {
  const NcclReduction r = nccl_reduction(dtype, op);
  if (!r.error.empty()) return refuse(comm, status, "allreduce: " + r.error);
  if (bytes % r.element_size != 0) {
    return refuse(comm, status, "allreduce: " + std::to_string(bytes) +
                                    " bytes is not a whole number of elements");
  }
  return comm.run(bytes_of("allreduce", bytes), stream,
                  [&](ncclComm_t c, cudaStream_t s) {
                    stall_for_tests(s);
                    return ncclAllReduce(data, data, bytes / r.element_size, r.type, r.op, c, s);
                  },
                  status);
}

int32_t nccl_allgatherv(NcclComm& comm, const void* in, size_t in_bytes, void* out,
                        size_t out_bytes, const int64_t* counts, int32_t ranks, void* stream,
                        hvd_plugin_status* status) {
  size_t total = 0;
  if (ranks != comm.size() || !total_of(counts, ranks, &total) || total != out_bytes ||
      static_cast<size_t>(counts[comm.rank()]) != in_bytes) {
    return refuse(comm, status, "allgather: the counts do not match the buffers");
  }
  const bool even = all_equal(counts, ranks);
  return comm.run(bytes_of("allgather", out_bytes), stream,
                  [&](ncclComm_t c, cudaStream_t s) {
                    stall_for_tests(s);
                    if (even) return ncclAllGather(in, out, in_bytes, ncclUint8, c, s);
                    ncclGroupStart();
                    size_t offset = 0;
                    for (int32_t r = 0; r < ranks; ++r) {
                      ncclBroadcast(in, at(out, offset), static_cast<size_t>(counts[r]),
                                    ncclUint8, r, c, s);
                      offset += static_cast<size_t>(counts[r]);
                    }
                    return ncclGroupEnd();
                  },
                  status);
}

int32_t nccl_broadcast(NcclComm& comm, void* data, size_t bytes, int32_t root, void* stream,
                       hvd_plugin_status* status) {
  if (root < 0 || root >= comm.size()) {
    return refuse(comm, status, "broadcast: root " + std::to_string(root) + " is not a rank");
  }
  return comm.run(bytes_of("broadcast", bytes), stream,
                  [&](ncclComm_t c, cudaStream_t s) {
                    stall_for_tests(s);
                    return ncclBroadcast(data, data, bytes, ncclUint8, root, c, s);
                  },
                  status);
}

int32_t nccl_alltoallv(NcclComm& comm, const void* in, size_t in_bytes,
                       const int64_t* send_counts, void* out, size_t out_bytes,
                       const int64_t* recv_counts, int32_t ranks, void* stream,
                       hvd_plugin_status* status) {
  size_t sent = 0;
  size_t received = 0;
  if (ranks != comm.size() || !total_of(send_counts, ranks, &sent) ||
      !total_of(recv_counts, ranks, &received) || sent != in_bytes || received != out_bytes) {
    return refuse(comm, status, "alltoall: the counts do not match the buffers");
  }
  return comm.run(bytes_of("alltoall", in_bytes), stream,
                  [&](ncclComm_t c, cudaStream_t s) {
                    stall_for_tests(s);
                    ncclGroupStart();
                    size_t send_offset = 0;
                    size_t recv_offset = 0;
                    for (int32_t r = 0; r < ranks; ++r) {
                      const auto send = static_cast<size_t>(send_counts[r]);
                      const auto recv = static_cast<size_t>(recv_counts[r]);
                      if (send > 0) ncclSend(at(in, send_offset), send, ncclUint8, r, c, s);
                      if (recv > 0) ncclRecv(at(out, recv_offset), recv, ncclUint8, r, c, s);
                      send_offset += send;
                      recv_offset += recv;
                    }
                    return ncclGroupEnd();
                  },
                  status);
}

int32_t nccl_reducescatter(NcclComm& comm, const void* in, size_t in_bytes, void* out,
                           size_t out_bytes, const int64_t* recv_counts, int32_t ranks,
                           int32_t dtype, int32_t op, void* stream, hvd_plugin_status* status) {
  const NcclReduction r = nccl_reduction(dtype, op);
  if (!r.error.empty()) return refuse(comm, status, "reducescatter: " + r.error);
  size_t total = 0;
  if (ranks != comm.size() || !total_of(recv_counts, ranks, &total) || total != in_bytes ||
      static_cast<size_t>(recv_counts[comm.rank()]) != out_bytes ||
      in_bytes % r.element_size != 0) {
    return refuse(comm, status, "reducescatter: the counts do not match the buffers");
  }
  for (int32_t i = 0; i < ranks; ++i) {
    if (static_cast<size_t>(recv_counts[i]) % r.element_size != 0) {
      return refuse(comm, status, "reducescatter: a part is not a whole number of elements");
    }
  }
  const bool even = all_equal(recv_counts, ranks);
  return comm.run(bytes_of("reducescatter", in_bytes), stream,
                  [&](ncclComm_t c, cudaStream_t s) {
                    stall_for_tests(s);
                    if (even) {
                      return ncclReduceScatter(in, out, out_bytes / r.element_size, r.type, r.op,
                                               c, s);
                    }
                    ncclGroupStart();
                    size_t offset = 0;
                    for (int32_t i = 0; i < ranks; ++i) {
                      const auto part = static_cast<size_t>(recv_counts[i]);
                      ncclReduce(at(in, offset), i == comm.rank() ? out : nullptr,
                                 part / r.element_size, r.type, r.op, i, c, s);
                      offset += part;
                    }
                    return ncclGroupEnd();
                  },
                  status);
}

int32_t nccl_barrier(NcclComm& comm, void* stream, hvd_plugin_status* status) {
  return comm.barrier(stream, status);
}

}  // namespace hvd::transports::nccl
