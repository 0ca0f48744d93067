// Transport over one POSIX shared-memory segment shared by every rank of the
// world, all on one host (rendezvous.h: how they find it; collectives.h:
// the algorithms; waiter.h: how ranks wait for each other).
//
// Threading: one caller at a time (the runtime serialises collectives),
// abort() from any thread. No thread of its own.
// Errors: a failed wait (a peer died or left, the timeout passed) becomes a
// Status naming the op, this rank and the peer; the first one is kept and
// returned by every later call, and this rank marks itself left so that
// its peers fail at once too. Invalid arguments are reported without
// touching the segment and without failing the transport.
// Abort: sets the failure, wakes every waiter of this transport through the
// segment's futex bell and marks this rank left; never waits for peers.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string_view>

#include "transports/registry.h"
#include "transports/shm/collectives.h"
#include "transports/shm/segment.h"
#include "transports/shm/waiter.h"
#include "transports/transport.h"

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

class ShmTransport final : public Transport {
 public:
  static Result<std::unique_ptr<Transport>> connect(const TransportContext& context);
  ~ShmTransport() override;
  ShmTransport(const ShmTransport&) = delete;
  ShmTransport& operator=(const ShmTransport&) = delete;

  std::string_view name() const override;
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Status allreduce(Buffer data, DataType type, ReduceOp op) override;
  Status allgatherv(ConstBuffer in, Buffer out, std::span<const int64_t> counts) override;
  Status broadcast(Buffer data, int root) override;
  Status alltoallv(ConstBuffer in, std::span<const int64_t> send_counts, Buffer out,
                   std::span<const int64_t> recv_counts) override;
  Status reducescatter(ConstBuffer in, Buffer out, std::span<const int64_t> recv_counts,
                       DataType type, ReduceOp op) override;
  Status barrier() override;
  void abort(Status reason) override;
  std::vector<Tunable> tunables() const override;
  Status set_tunable(std::string_view tunable, int64_t value) override;
  int64_t unfused_from_bytes() const override { return kUnfusedFromBytes; }
  // Whether this world reads peers' memory directly (cross_memory.h).
  const CrossMemory& cross_memory() const { return collectives_.cross_memory(); }

 private:
  ShmTransport(int rank, int size, std::chrono::milliseconds timeout, Segment segment);

  // Runs `body` (a collective) unless the transport already failed; a
  // failure it returns becomes the transport's lasting failure.
  template <typename Body>
  Status run(std::string_view op, Body&& body);
  Status failure() const;
  // Records `error` unless there is a failure already (an abort's, say),
  // marks this rank left, and returns the lasting failure.
  Status fail(Status error);

  int rank_;
  int size_;
  Segment segment_;
  Waiter waiter_;
  Collectives collectives_;
  mutable std::mutex mutex_;  // guards failure_ and aborted_
  Status failure_;
  bool aborted_ = false;
};

}  // namespace hvd::transports::shm
