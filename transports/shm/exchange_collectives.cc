// allgatherv, broadcast and alltoallv: data moves through the staging areas
// without arithmetic (see collectives.h for the rounds).
#include <algorithm>
#include <atomic>
#include <cstring>

#include "transports/shm/collectives.h"

namespace hvd::transports::shm {

namespace {

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
