// The data-plane interface every transport implements (gloo built in; nccl
// and shm to come as their own folders). The engine uses it for collectives
// and for negotiation. Every call blocks until done or failed, within the
// transport timeout; a failure leaves the transport failed: later calls
// return the same error (a dead peer is not forgotten).
//
// Buffers are bytes; every count below is in bytes and a multiple of the
// element size where a DataType is given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "common/data_type.h"
#include "common/status.h"

namespace hvd::transports {

using common::DataType;
using common::ReduceOp;
using common::Status;

struct Buffer {
  void* data = nullptr;
  size_t size = 0;  // bytes
};

struct ConstBuffer {
  const void* data = nullptr;
  size_t size = 0;  // bytes
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual std::string_view name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // In place. op is kSum, kMin, kMax or kProduct (never kAverage).
  virtual Status allreduce(Buffer data, DataType type, ReduceOp op) = 0;
  // out receives every rank's input in rank order; counts[r] = bytes from rank r.
  virtual Status allgatherv(ConstBuffer in, Buffer out, std::span<const int64_t> counts) = 0;
  // In place; data.size bytes from root to everyone.
  virtual Status broadcast(Buffer data, int root) = 0;
  // send_counts[r] bytes of `in` go to rank r; recv_counts[r] bytes arrive from r.
  virtual Status alltoallv(ConstBuffer in, std::span<const int64_t> send_counts, Buffer out,
                           std::span<const int64_t> recv_counts) = 0;
  // Reduces `in` (the sum of recv_counts bytes, the same recv_counts on every
  // rank) across ranks; rank r's `out` (recv_counts[r] bytes) receives the
  // part of the reduced result at offset sum(recv_counts[0..r)).
  // op as for allreduce. (The design card's signature plus recv_counts:
  // uneven splits need them.)
  virtual Status reducescatter(ConstBuffer in, Buffer out, std::span<const int64_t> recv_counts,
                               DataType type, ReduceOp op) = 0;
  virtual Status barrier() = 0;
};

}  // namespace hvd::transports
