// The collectives of the shm transport, over one segment (segment.h) and
// its waiter (waiter.h). Arguments are checked by the caller; counts are
// bytes, in the same order on every rank.
//
// Every collective is a sequence of rounds; a round number is shared by all
// ranks (they run the same collectives in the same order) and rounds
// alternate between the two halves of each rank's data area. In a round a
// rank waits until its half is free (every rank consumed the round two
// before), stages its part in its staging area, publishes `posted`, reads
// what it needs from its peers' areas, and publishes `consumed`. So a rank
// may run at most a round ahead of the slowest, and never writes what a
// peer still reads.
//
// allreduce of more than kOneShotBytes, per staging-sized chunk: each rank
// stages its chunk; rank r reduces slice r of the chunk straight from every
// rank's staging area (in rank order: every rank gets the same bits) into
// its result area and publishes `reduced`; every rank copies the slices
// from the result areas (reduce-scatter then allgather: each byte is read
// once per rank from shared memory). Smaller allreduces take one round:
// every rank reduces the whole buffer from every staging area itself.
// reducescatter: each rank stages an equal share of every rank's region;
// rank r reduces its region's shares straight into its output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "common/status.h"
#include "transports/reduce_functions.h"
#include "transports/shm/cross_memory.h"
#include "transports/shm/segment.h"
#include "transports/shm/waiter.h"

namespace hvd::transports::shm {

inline constexpr size_t kOneShotBytes = 32 << 10;

class Collectives {
 public:
  Collectives(const Segment& segment, Waiter& waiter, int rank);

  // `logical` (bool): results are 0 or 1 even in a world of one.
  common::Status allreduce(std::byte* data, size_t bytes, size_t element, ReduceFunction fn,
                           bool logical);
  common::Status reducescatter(const std::byte* in, std::byte* out, std::span<const int64_t> recv_counts,
                               size_t element, ReduceFunction fn, bool logical);
  common::Status allgatherv(const std::byte* in, std::byte* out, std::span<const int64_t> counts);
  common::Status broadcast(std::byte* data, size_t bytes, int root);
  common::Status alltoallv(const std::byte* in, std::span<const int64_t> send_counts, std::byte* out,
                           std::span<const int64_t> recv_counts);
  common::Status barrier();

  // Decides, with every rank, whether large alltoallv reads peers' buffers
  // by cross-memory attach (cross_memory.h). Once, right after every rank
  // attached; before, and when it fails, it does not.
  common::Status agree_on_cross_memory();
  const CrossMemory& cross_memory() const { return cross_; }

  // Bytes per round of allreduce, allgatherv and broadcast (and, split by
  // rank, of reducescatter and alltoallv): the staging size by default, at
  // most that. The same on every rank, changed between collectives only.
  size_t chunk_bytes() const { return chunk_bytes_; }
  void set_chunk_bytes(size_t bytes) { chunk_bytes_ = bytes; }

 private:
  struct Round {
    uint64_t index;
    int half;
    uint64_t done() const { return index + 1; }  // the counter value that marks it
  };
  Round next_round();
  // Waits until this rank may write its half of `round`.
  common::Status await_free(const Round& round);
  // The bytes every rank puts in the region of each rank per round (a
  // multiple of every element size).
  size_t share() const;
  // Whether `count` bytes from one rank to another cross by CMA.
  bool crosses(int64_t count) const;
  // Offers `source` for peers to read by CMA in `round`; the address a
  // peer offered.
  void offer_source(const Round& round, const std::byte* source);
  uint64_t source_of(int peer, const Round& round) const;
  // Reads `bytes` at `address` in `peer`'s memory into `dst` by CMA; a
  // failure names the peer (gone, or the errno).
  common::Status read_across(int peer, uint64_t address, std::byte* dst, size_t bytes);
  common::Status allreduce_one_shot(std::byte* data, size_t bytes, size_t element, ReduceFunction fn,
                                    bool logical);

  const Segment& segment_;
  Waiter& waiter_;
  int rank_;
  int size_;
  uint64_t rounds_ = 0;
  size_t chunk_bytes_;
  std::vector<const std::byte*> sources_;  // one per rank, for reduce_sources
  CrossMemory cross_;
};

// memcpy that accepts null pointers when there is nothing to copy.
inline void copy_bytes(std::byte* dst, const std::byte* src, size_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, bytes);
}

// dst = sources[0] (op) sources[1] (op) ... in that order, `bytes` of each,
// in cache-sized blocks (the partial result stays in cache). dst may be
// sources[0] only when there is one source. `logical`: see allreduce.
void reduce_sources(ReduceFunction fn, std::span<const std::byte* const> sources, std::byte* dst,
                    size_t bytes, size_t element, bool logical);

}  // namespace hvd::transports::shm
