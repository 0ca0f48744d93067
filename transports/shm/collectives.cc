// The shm transport's collectives (collectives.h for the rounds and the
// algorithms): the round bookkeeping they share and the blocked reduction,
// then allreduce and reducescatter, then allgatherv, broadcast and
// alltoallv, whose data moves through the staging areas without arithmetic.
#include "transports/shm/collectives.h"

#include <algorithm>
#include <atomic>
#include <cstring>

namespace hvd::transports::shm {

namespace {

constexpr size_t kBlockBytes = 16 << 10;  // a partial result that stays in L1

// Elements [first, first + count) of a chunk of `elements` split in `parts`
// nearly equal slices, slice `index`.
struct Slice {
  size_t first;
  size_t count;
};

Slice slice_of(size_t elements, int parts, int index) {
  size_t per = (elements + static_cast<size_t>(parts) - 1) / static_cast<size_t>(parts);
  size_t first = std::min(elements, per * static_cast<size_t>(index));
  return Slice{first, std::min(per, elements - first)};
}

// Offsets of each rank's bytes in a buffer laid out in rank order.
std::vector<size_t> offsets_of(std::span<const int64_t> counts) {
  std::vector<size_t> offsets;
  size_t offset = 0;
  for (int64_t count : counts) {
    offsets.push_back(offset);
    offset += static_cast<size_t>(count);
  }
  return offsets;
}

// In an alltoallv's meta word: this rank offered its buffer for CMA.
constexpr uint64_t kLentFlag = uint64_t{1} << 63;

// Bytes [start, start + limit) of `count`, clipped.
size_t piece(int64_t count, size_t start, size_t limit) {
  auto bytes = static_cast<size_t>(count);
  return start >= bytes ? 0 : std::min(limit, bytes - start);
}

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

// allreduce and reducescatter.

common::Status Collectives::allreduce(std::byte* data, size_t bytes, size_t element,
                                      ReduceFunction fn, bool logical) {
  if (bytes <= kOneShotBytes) return allreduce_one_shot(data, bytes, element, fn, logical);
  size_t chunk_bytes = chunk_bytes_;
  for (size_t offset = 0; offset < bytes; offset += chunk_bytes) {
    size_t chunk = std::min(chunk_bytes, bytes - offset);
    Round round = next_round();
    HVD_RETURN_IF_ERROR(await_free(round));
    copy_bytes(segment_.staging(rank_, round.half), data + offset, chunk);
    waiter_.publish(Counter::kPosted, round.done());
    HVD_RETURN_IF_ERROR(waiter_.await_all(Counter::kPosted, round.done()));

    size_t elements = chunk / element;
    Slice mine = slice_of(elements, size_, rank_);
    for (int j = 0; j < size_; ++j) {
      sources_[static_cast<size_t>(j)] = segment_.staging(j, round.half) + mine.first * element;
    }
    reduce_sources(fn, sources_, segment_.result(rank_, round.half), mine.count * element, element,
                   logical);
    waiter_.publish(Counter::kReduced, round.done());
    if (waiter_.crowded()) {  // one wake-up for the round, not one per late owner
      HVD_RETURN_IF_ERROR(waiter_.await_all(Counter::kReduced, round.done()));
    }

    for (int k = 0; k < size_; ++k) {  // starting with our own, the others in turn
      int owner = (rank_ + k) % size_;
      HVD_RETURN_IF_ERROR(waiter_.await(Counter::kReduced, owner, round.done()));
      Slice theirs = slice_of(elements, size_, owner);
      copy_bytes(data + offset + theirs.first * element, segment_.result(owner, round.half),
                  theirs.count * element);
    }
    waiter_.publish(Counter::kConsumed, round.done());
  }
  return common::Status::ok();
}

common::Status Collectives::allreduce_one_shot(std::byte* data, size_t bytes, size_t element,
                                               ReduceFunction fn, bool logical) {
  if (bytes == 0) return common::Status::ok();
  Round round = next_round();
  HVD_RETURN_IF_ERROR(await_free(round));
  copy_bytes(segment_.staging(rank_, round.half), data, bytes);
  waiter_.publish(Counter::kPosted, round.done());
  HVD_RETURN_IF_ERROR(waiter_.await_all(Counter::kPosted, round.done()));
  for (int j = 0; j < size_; ++j) sources_[static_cast<size_t>(j)] = segment_.staging(j, round.half);
  reduce_sources(fn, sources_, data, bytes, element, logical);
  waiter_.publish(Counter::kConsumed, round.done());
  return common::Status::ok();
}

common::Status Collectives::reducescatter(const std::byte* in, std::byte* out,
                                          std::span<const int64_t> recv_counts, size_t element,
                                          ReduceFunction fn, bool logical) {
  size_t quota = share();
  std::vector<size_t> offsets;  // of each rank's region in `in`
  size_t largest = 0;
  size_t offset = 0;
  for (int64_t count : recv_counts) {
    offsets.push_back(offset);
    offset += static_cast<size_t>(count);
    largest = std::max(largest, static_cast<size_t>(count));
  }
  auto piece = [&](int region, size_t start) {
    size_t count = static_cast<size_t>(recv_counts[static_cast<size_t>(region)]);
    return start >= count ? size_t{0} : std::min(quota, count - start);
  };
  for (size_t start = 0; start < largest; start += quota) {
    Round round = next_round();
    HVD_RETURN_IF_ERROR(await_free(round));
    std::byte* staging = segment_.staging(rank_, round.half);
    for (int region = 0; region < size_; ++region) {
      copy_bytes(staging + static_cast<size_t>(region) * quota,
                  in + offsets[static_cast<size_t>(region)] + start, piece(region, start));
    }
    waiter_.publish(Counter::kPosted, round.done());
    HVD_RETURN_IF_ERROR(waiter_.await_all(Counter::kPosted, round.done()));
    for (int j = 0; j < size_; ++j) {
      sources_[static_cast<size_t>(j)] =
          segment_.staging(j, round.half) + static_cast<size_t>(rank_) * quota;
    }
    reduce_sources(fn, sources_, out + start, piece(rank_, start), element, logical);
    waiter_.publish(Counter::kConsumed, round.done());
  }
  return common::Status::ok();
}

// allgatherv, broadcast and alltoallv: no arithmetic.

common::Status Collectives::allgatherv(const std::byte* in, std::byte* out,
                                       std::span<const int64_t> counts) {
  std::vector<size_t> offsets = offsets_of(counts);
  size_t largest = static_cast<size_t>(*std::max_element(counts.begin(), counts.end()));
  size_t chunk = chunk_bytes_;
  auto me = static_cast<size_t>(rank_);
  for (size_t start = 0; start < largest; start += chunk) {
    Round round = next_round();
    size_t mine = piece(counts[me], start, chunk);
    if (mine > 0) {
      HVD_RETURN_IF_ERROR(await_free(round));
      copy_bytes(segment_.staging(rank_, round.half), in + start, mine);
    }
    waiter_.publish(Counter::kPosted, round.done());
    copy_bytes(out + offsets[me] + start, in + start, mine);
    if (waiter_.crowded()) {  // one wake-up for the round, not one per late peer
      HVD_RETURN_IF_ERROR(waiter_.await_all(Counter::kPosted, round.done()));
    }
    for (int k = 1; k < size_; ++k) {
      int peer = (rank_ + k) % size_;
      size_t theirs = piece(counts[static_cast<size_t>(peer)], start, chunk);
      if (theirs == 0) continue;
      HVD_RETURN_IF_ERROR(waiter_.await(Counter::kPosted, peer, round.done()));
      copy_bytes(out + offsets[static_cast<size_t>(peer)] + start, segment_.staging(peer, round.half),
                 theirs);
    }
    waiter_.publish(Counter::kConsumed, round.done());
  }
  return common::Status::ok();
}

common::Status Collectives::broadcast(std::byte* data, size_t bytes, int root) {
  size_t chunk = chunk_bytes_;
  for (size_t start = 0; start < bytes; start += chunk) {
    Round round = next_round();
    size_t length = std::min(chunk, bytes - start);
    if (rank_ == root) {
      HVD_RETURN_IF_ERROR(await_free(round));
      copy_bytes(segment_.staging(rank_, round.half), data + start, length);
      waiter_.publish(Counter::kPosted, round.done());
    } else {
      HVD_RETURN_IF_ERROR(waiter_.await(Counter::kPosted, root, round.done()));
      copy_bytes(data + start, segment_.staging(root, round.half), length);
    }
    waiter_.publish(Counter::kConsumed, round.done());
  }
  return common::Status::ok();
}

// A rank knows only its own counts, so the number of rounds travels with
// the data: every rank offers, in its slot's meta word, how many rounds its
// largest staged send needs; all run until the largest of those (at least
// one). Sends of at least kCrossMemoryMinBytes cross by CMA when the ranks
// agreed on it (sender and receiver both know the count): in the first
// round the sender offers its buffer's address and its send offsets (in its
// result area), the receiver reads its part from there. Whether any rank
// offered its buffer travels in the meta word too (kLentFlag); then every
// rank waits until every rank consumed the first round before returning
// (nobody reads an offered buffer any more; and none closes while another
// still waits for that).
common::Status Collectives::alltoallv(const std::byte* in, std::span<const int64_t> send_counts,
                                      std::byte* out, std::span<const int64_t> recv_counts) {
  size_t quota = share();
  std::vector<size_t> send_offsets = offsets_of(send_counts);
  std::vector<size_t> recv_offsets = offsets_of(recv_counts);
  auto me = static_cast<size_t>(rank_);
  size_t largest = 0;
  bool lent = false;
  for (size_t p = 0; p < send_counts.size(); ++p) {
    if (p == me) continue;
    lent = lent || crosses(send_counts[p]);
    if (!crosses(send_counts[p])) largest = std::max(largest, static_cast<size_t>(send_counts[p]));
  }
  uint64_t mine = std::max<uint64_t>(1, (largest + quota - 1) / quota);
  uint64_t rounds = mine;
  bool any_lent = lent;
  Round first{};
  for (uint64_t r = 0; r < rounds; ++r) {
    size_t start = r * quota;
    Round round = next_round();
    if (r == 0) first = round;
    HVD_RETURN_IF_ERROR(await_free(round));
    std::atomic_ref<uint64_t>(segment_.slot(rank_).meta[round.half])
        .store(mine | (lent ? kLentFlag : 0), std::memory_order_relaxed);
    std::byte* staging = segment_.staging(rank_, round.half);
    for (size_t p = 0; p < send_counts.size(); ++p) {
      if (p == me || crosses(send_counts[p])) continue;
      copy_bytes(staging + p * quota, in + send_offsets[p] + start, piece(send_counts[p], start, quota));
    }
    if (lent && r == 0) {
      offer_source(round, in);
      std::memcpy(segment_.result(rank_, round.half), send_offsets.data(), send_offsets.size() * sizeof(size_t));
    }
    waiter_.publish(Counter::kPosted, round.done());
    if (r == 0) copy_bytes(out + recv_offsets[me], in + send_offsets[me], static_cast<size_t>(send_counts[me]));
    if (waiter_.crowded()) {  // one wake-up for the round, not one per late peer
      HVD_RETURN_IF_ERROR(waiter_.await_all(Counter::kPosted, round.done()));
    }
    for (int k = 1; k < size_; ++k) {
      int peer = (rank_ + k) % size_;
      auto p = static_cast<size_t>(peer);
      bool direct = crosses(recv_counts[p]);
      // Awaited in every round all the same: a rank that returns has seen
      // every peer post the last round, so none waits for what a closed
      // rank would never post.
      HVD_RETURN_IF_ERROR(waiter_.await(Counter::kPosted, peer, round.done()));
      uint64_t theirs =
          std::atomic_ref<uint64_t>(segment_.slot(peer).meta[round.half]).load(std::memory_order_relaxed);
      any_lent = any_lent || (theirs & kLentFlag) != 0;
      rounds = std::max(rounds, theirs & ~kLentFlag);
      if (direct && r > 0) continue;
      if (direct) {
        size_t offset = 0;
        std::memcpy(&offset, segment_.result(peer, round.half) + me * sizeof(size_t), sizeof offset);
        HVD_RETURN_IF_ERROR(read_across(peer, source_of(peer, round) + offset, out + recv_offsets[p],
                                        static_cast<size_t>(recv_counts[p])));
      } else {
        copy_bytes(out + recv_offsets[p] + start, segment_.staging(peer, round.half) + me * quota,
                   piece(recv_counts[p], start, quota));
      }
    }
    waiter_.publish(Counter::kConsumed, round.done());
  }
  if (any_lent) return waiter_.await_all(Counter::kConsumed, first.done());
  return common::Status::ok();
}

}  // namespace hvd::transports::shm
