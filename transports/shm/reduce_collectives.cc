// allreduce and reducescatter (see collectives.h for the algorithms).
#include <algorithm>

#include "transports/shm/collectives.h"

namespace hvd::transports::shm {

namespace {

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

}  // namespace

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

}  // namespace hvd::transports::shm
