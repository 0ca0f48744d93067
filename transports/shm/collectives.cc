// Round bookkeeping shared by the collectives, and the blocked reduction.
// The collectives themselves: reduce_collectives.cc, exchange_collectives.cc.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "transports/shm/collectives.h"

namespace hvd::transports::shm {

namespace {

constexpr size_t kBlockBytes = 16 << 10;  // a partial result that stays in L1

}  // namespace

Collectives::Collectives(const Segment& segment, Waiter& waiter, int rank)
    : segment_(segment),
      waiter_(waiter),
      rank_(rank),
      size_(segment.size()),
      chunk_bytes_(segment.staging_bytes()),
      sources_(static_cast<size_t>(segment.size())),
      cross_(segment, rank) {}

Collectives::Round Collectives::next_round() {
  uint64_t index = rounds_++;
  return Round{index, static_cast<int>(index & 1)};
}

common::Status Collectives::await_free(const Round& round) {
  if (round.index < 2) return common::Status::ok();
  return waiter_.await_all(Counter::kConsumed, round.index - 1);  // round index - 2 consumed
}

size_t Collectives::share() const {
  return chunk_bytes_ / static_cast<size_t>(size_) / 64 * 64;
}

common::Status Collectives::barrier() {
  Round round = next_round();
  waiter_.publish(Counter::kPosted, round.done());
  HVD_RETURN_IF_ERROR(waiter_.await_all(Counter::kPosted, round.done()));
  waiter_.publish(Counter::kConsumed, round.done());
  return common::Status::ok();
}

common::Status Collectives::agree_on_cross_memory() {
  if (size_ == 1) return common::Status::ok();
  cross_.offer_probe();
  HVD_RETURN_IF_ERROR(barrier());  // every probe word is offered
  cross_.probe_peers();
  HVD_RETURN_IF_ERROR(barrier());  // every verdict is in, and no one reads a probe word any more
  cross_.agree();
  return common::Status::ok();
}

bool Collectives::crosses(int64_t count) const {
  // alltoallv's send offsets go in the sender's result area.
  return cross_.enabled() && static_cast<size_t>(count) >= kCrossMemoryMinBytes &&
         static_cast<size_t>(size_) * sizeof(size_t) <= segment_.result_bytes();
}

void Collectives::offer_source(const Round& round, const std::byte* source) {
  std::atomic_ref<uint64_t>(segment_.slot(rank_).cross_source[round.half])
      .store(reinterpret_cast<uintptr_t>(source), std::memory_order_relaxed);
}

uint64_t Collectives::source_of(int peer, const Round& round) const {
  return std::atomic_ref<uint64_t>(segment_.slot(peer).cross_source[round.half]).load(std::memory_order_relaxed);
}

common::Status Collectives::read_across(int peer, uint64_t address, std::byte* dst, size_t bytes) {
  int error = cross_.read(peer, address, dst, bytes);
  // A peer that failed returns without waiting for its readers, but marks
  // itself left first: if it has not, its buffer was still there.
  if (error == 0 &&
      std::atomic_ref<uint32_t>(segment_.slot(peer).state).load(std::memory_order_seq_cst) != kSlotLeft) {
    return common::Status::ok();
  }
  return waiter_.peer_failure(peer, "cross-memory read of " + std::to_string(bytes) + " bytes failed (" +
                                        std::strerror(error) + ") from");
}

void reduce_sources(ReduceFunction fn, std::span<const std::byte* const> sources, std::byte* dst,
                    size_t bytes, size_t element, bool logical) {
  if (bytes == 0) return;
  if (sources.size() == 1) {
    if (dst != sources[0]) std::memcpy(dst, sources[0], bytes);
    if (logical) fn(dst, dst, dst, bytes / element);  // 0 or 1, as in larger worlds
    return;
  }
  size_t block = kBlockBytes / element * element;
  for (size_t offset = 0; offset < bytes; offset += block) {
    size_t n = std::min(block, bytes - offset) / element;
    std::byte* out = dst + offset;
    fn(out, sources[0] + offset, sources[1] + offset, n);
    for (size_t j = 2; j < sources.size(); ++j) fn(out, out, sources[j] + offset, n);
  }
}

}  // namespace hvd::transports::shm
