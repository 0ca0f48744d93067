// How a hierarchical allreduce splits its buffer among the ranks of a host:
// by whole elements, as even as they come, the first `elements % parts`
// slices one element longer; local rank i owns slice i. Every rank computes
// the same counts, which the host's reduce-scatter and allgather take.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hvd::transports::hierarchical {

// Bytes of each of `parts` slices of `bytes` (a multiple of `element`).
inline std::vector<int64_t> slice_bytes(size_t bytes, size_t element, int parts) {
  const auto n = static_cast<int64_t>(parts);
  const auto elements = static_cast<int64_t>(bytes / element);
  std::vector<int64_t> counts(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    counts[static_cast<size_t>(i)] =
        (elements / n + (i < elements % n ? 1 : 0)) * static_cast<int64_t>(element);
  }
  return counts;
}

}  // namespace hvd::transports::hierarchical
