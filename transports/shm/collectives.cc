// Round bookkeeping shared by the collectives, and the blocked reduction.
// The collectives themselves: reduce_collectives.cc, exchange_collectives.cc.
#include <algorithm>
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
      sources_(static_cast<size_t>(segment.size())) {}

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
