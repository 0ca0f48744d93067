// The data-plane interface every transport implements (gloo and shm built
// in; nccl a plugin library, adapted by plugin/). The engine uses it for
// collectives and for negotiation. Every call blocks until done or failed,
// within the transport timeout; a failure leaves the transport failed: later
// calls return the same error (a dead peer is not forgotten). Collectives
// come from one thread at a time; abort() (below) may come from any thread.
// A transport derives from TransportBase (transport_base.h), which keeps
// this contract and the argument checks, and implements the collectives.
//
// Buffers are bytes; every count below is in bytes and a multiple of the
// element size where a DataType is given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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

// A knob of a transport that autotune may turn (docs/autotune.md), e.g. the
// shm transport's "chunk_bytes".
struct Tunable {
  std::string_view name;
  int64_t value = 0;  // now
  int64_t min = 0;    // the range set_tunable() takes
  int64_t max = 0;
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

  // Allreduces of at least this many bytes are better run alone, in place,
  // than copied into and out of a fusion buffer with others: this
  // transport's cost per call is below the cost of those copies (0: fuse
  // whatever fits the fusion threshold, as Horovod does). The same on every
  // rank of a world.
  virtual int64_t unfused_from_bytes() const { return 0; }

  // Autotune's hook. tunables(): the knobs this transport has (none by
  // default; a transport built over others may forward theirs).
  // set_tunable(): takes effect from the next call; every rank must set the
  // same value between the same two calls (the engine switches every rank
  // in the same negotiation cycle). kNotFound for a name it does not have,
  // kInvalidArgument for a value it does not take; the transport stays usable.
  virtual std::vector<Tunable> tunables() const { return {}; }
  virtual Status set_tunable(std::string_view tunable, int64_t /*value*/) {
    return Status(common::StatusCode::kNotFound, "the " + std::string(name()) +
                                                     " transport has no tunable '" +
                                                     std::string(tunable) + "'");
  }

  // Fails the transport for good, now, for `reason` (elastic recovery: the
  // world is being rebuilt). Callable from any thread, concurrently with a
  // blocked collective and with other abort() calls, any number of times;
  // the first reason wins. Afterwards:
  //  - every call blocked in the transport returns promptly (well under a
  //    second, whatever the transport timeout) with the abort Status: the
  //    reason's code (kAborted when `reason` is OK) and a message that names
  //    the transport, this rank and the reason's message. An error the abort
  //    provokes inside such a call (a closed socket) is reported as that
  //    Status, not as an I/O error;
  //  - every later call fails at once with the same Status (argument checks
  //    still come first);
  //  - the transport stays failed: there is no un-abort; recovery builds a
  //    new transport. An earlier failure is superseded (and named in the
  //    message).
  // abort() never waits for peers or the network (it may shut sockets down,
  // which peers see as this rank leaving). Destroying an aborted transport
  // does not hang. Not to be called concurrently with the destructor.
  virtual void abort(Status reason) = 0;
};

}  // namespace hvd::transports
