// Transport over one POSIX shared-memory segment shared by every rank of the
// world, all on one host (segment_rendezvous.h: how they find it; collectives.h:
// the algorithms; waiter.h: how ranks wait for each other).
//
// Threading: one caller at a time (the runtime serialises collectives),
// abort() from any thread. No thread of its own.
// Errors: a failed wait (a peer died or left, the timeout passed) becomes a
// Status naming the op, this rank and the peer, which fails the transport
// for good (TransportBase keeps it), and this rank marks itself left so that
// its peers fail at once too. Invalid arguments are reported without
// touching the segment and without failing the transport.
// Abort: TransportBase sets the failure; this wakes every waiter of this
// transport through the segment's futex bell and marks this rank left;
// never waits for peers.
#pragma once

#include <chrono>
#include <memory>
#include <string_view>

#include "transports/registry.h"
#include "transports/shm/collectives.h"
#include "transports/shm/segment.h"
#include "transports/shm/waiter.h"
#include "transports/transport_base.h"

namespace hvd::transports::shm {

// Bytes each rank stages per round (and per half of its data area): the
// segment holds size * 2 * (this + this / size) bytes.
inline constexpr size_t kStagingBytes = 1 << 20;
// The smallest chunk set_tunable("chunk_bytes") takes (a multiple of 64
// bytes up to kStagingBytes; kStagingBytes by default).
inline constexpr size_t kMinChunkBytes = 64 << 10;
// Allreduces from this size on run alone, in place (unfused_from_bytes): a
// call costs the engine about 26 us here, while copying 256 KiB into and out
// of a fusion buffer costs about 50 us at 10 GB/s (bench/README.md).
inline constexpr int64_t kUnfusedFromBytes = 256 << 10;

class ShmTransport final : public TransportBase {
 public:
  static Result<std::unique_ptr<Transport>> connect(const TransportContext& context);
  ~ShmTransport() override;
  ShmTransport(const ShmTransport&) = delete;
  ShmTransport& operator=(const ShmTransport&) = delete;

  std::string_view name() const override;
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::vector<Tunable> tunables() const override;
  Status set_tunable(std::string_view tunable, int64_t value) override;
  int64_t unfused_from_bytes() const override { return kUnfusedFromBytes; }
  // Whether this world reads peers' memory directly (cross_memory.h).
  const CrossMemory& cross_memory() const { return collectives_.cross_memory(); }

 private:
  ShmTransport(int rank, int size, std::chrono::milliseconds timeout, Segment segment);

  Status do_allreduce(Buffer data, DataType type, ReduceOp op) override;
  Status do_allgatherv(ConstBuffer in, Buffer out, std::span<const int64_t> counts) override;
  Status do_broadcast(Buffer data, int root) override;
  Status do_alltoallv(ConstBuffer in, std::span<const int64_t> send_counts, Buffer out,
                      std::span<const int64_t> recv_counts) override;
  Status do_reducescatter(ConstBuffer in, Buffer out, std::span<const int64_t> recv_counts,
                          DataType type, ReduceOp op) override;
  Status do_barrier() override;
  // reduce_functions.h's: what the collectives can reduce.
  Status check_reduction(Reduction collective, DataType type, ReduceOp op) const override;
  // Logs the failure and marks this rank left with its code.
  void on_failure(const Status& error) override;
  // Wakes every waiter and marks this rank left.
  void on_abort(const Status& reason, const Status& aborted) override;

  // A collective's outcome `s` as "shm <op> failed on rank R of S: ...";
  // after an abort woke it, `s` as it is (TransportBase returns the abort's
  // Status), once this rank is marked left.
  Status outcome(std::string_view op, Status s);

  int rank_;
  int size_;
  Segment segment_;
  Waiter waiter_;
  Collectives collectives_;
};

}  // namespace hvd::transports::shm
