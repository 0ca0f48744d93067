#include "runtime/engine/fusion_planner.h"

#include <algorithm>

// Items that can never share a batch with another (not an allreduce, fusion
// disabled, larger than the threshold, a CPU item of at least alone_bytes)
// become batches of one at once. The
// rest are split into buckets of mutually compatible items (in index order);
// since a batch only ever holds items of one bucket, running the greedy scan
// inside each bucket and ordering all batches by their first index gives the
// same plan as one greedy scan over the whole list, without re-reading the
// incompatible items for every batch.

namespace hvd::runtime::engine {

namespace {

bool compatible(const FusionItem& a, const FusionItem& b) {
  return a.op_type == b.op_type && a.dtype == b.dtype && a.reduce_op == b.reduce_op &&
         a.device == b.device && a.process_set_id == b.process_set_id &&
         a.prescale_factor == b.prescale_factor && a.postscale_factor == b.postscale_factor;
}

// Greedy with look-ahead over one bucket (indices ascending): each batch
// starts at the first unplanned index and takes every later index that still
// fits, skipping (not stopping at) the ones that do not.
void plan_bucket(std::span<const FusionItem> items, std::vector<size_t> remaining,
                 int64_t threshold, std::vector<std::vector<size_t>>& batches) {
  std::vector<size_t> skipped;
  while (!remaining.empty()) {
    std::vector<size_t> batch{remaining.front()};
    int64_t total = items[remaining.front()].bytes;
    skipped.clear();
    for (size_t k = 1; k < remaining.size(); ++k) {
      size_t index = remaining[k];
      int64_t bytes = items[index].bytes;
      if (bytes <= threshold - total) {  // total <= threshold: no overflow
        batch.push_back(index);
        total += bytes;
      } else {
        skipped.push_back(index);
      }
    }
    batches.push_back(std::move(batch));
    remaining.swap(skipped);
  }
}

}  // namespace

std::vector<std::vector<size_t>> plan_fusion(std::span<const FusionItem> items,
                                             int64_t threshold_bytes, int64_t alone_bytes) {
  std::vector<std::vector<size_t>> batches;
  // Each bucket: its items' indices, ascending; buckets in order of first index.
  std::vector<std::vector<size_t>> buckets;
  for (size_t i = 0; i < items.size(); ++i) {
    const FusionItem& item = items[i];
    bool alone = alone_bytes > 0 && item.device == kCpuDevice && item.bytes >= alone_bytes;
    bool fusible = item.op_type == OpType::kAllreduce && threshold_bytes > 0 &&
                   item.bytes >= 0 && item.bytes <= threshold_bytes && !alone;
    if (!fusible) {
      batches.push_back({i});
      continue;
    }
    auto bucket = std::find_if(buckets.begin(), buckets.end(), [&](const std::vector<size_t>& b) {
      return compatible(items[b.front()], item);
    });
    if (bucket == buckets.end()) {
      buckets.push_back({i});
    } else {
      bucket->push_back(i);
    }
  }
  for (auto& bucket : buckets) plan_bucket(items, std::move(bucket), threshold_bytes, batches);
  std::sort(batches.begin(), batches.end(),
            [](const std::vector<size_t>& a, const std::vector<size_t>& b) {
              return a.front() < b.front();
            });
  return batches;
}

}  // namespace hvd::runtime::engine
