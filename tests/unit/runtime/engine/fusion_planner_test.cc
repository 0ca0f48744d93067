#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "runtime/engine/fusion_planner.h"

namespace hvd::runtime::engine {
namespace {

using Batches = std::vector<std::vector<size_t>>;

FusionItem item(int64_t bytes) {
  FusionItem i;
  i.bytes = bytes;
  return i;
}

bool compatible(const FusionItem& a, const FusionItem& b) {
  return a.op_type == b.op_type && a.dtype == b.dtype && a.reduce_op == b.reduce_op &&
         a.device == b.device && a.process_set_id == b.process_set_id &&
         a.prescale_factor == b.prescale_factor && a.postscale_factor == b.postscale_factor;
}

// The documented algorithm, written as plainly as possible.
Batches reference_plan(const std::vector<FusionItem>& items, int64_t threshold) {
  Batches batches;
  std::vector<bool> planned(items.size(), false);
  for (size_t i = 0; i < items.size(); ++i) {
    if (planned[i]) continue;
    planned[i] = true;
    std::vector<size_t> batch{i};
    const FusionItem& first = items[i];
    if (first.op_type == OpType::kAllreduce && threshold > 0 && first.bytes <= threshold) {
      int64_t total = first.bytes;
      for (size_t j = i + 1; j < items.size(); ++j) {
        if (planned[j] || !compatible(first, items[j])) continue;
        if (total + items[j].bytes > threshold) continue;
        planned[j] = true;
        batch.push_back(j);
        total += items[j].bytes;
      }
    }
    batches.push_back(batch);
  }
  return batches;
}

}  // namespace

TEST_CASE("fusion planner: compatible small items fuse", "[fusion]") {
  std::vector<FusionItem> items = {item(10), item(20), item(30)};
  CHECK(plan_fusion(items, 100) == Batches{{0, 1, 2}});
  CHECK(plan_fusion(items, 60) == Batches{{0, 1, 2}});  // exactly at the threshold
  CHECK(plan_fusion({}, 100).empty());
}

TEST_CASE("fusion planner: the threshold is respected", "[fusion]") {
  std::vector<FusionItem> items = {item(40), item(40), item(40), item(40), item(40)};
  CHECK(plan_fusion(items, 100) == Batches{{0, 1}, {2, 3}, {4}});
  CHECK(plan_fusion(items, 120) == Batches{{0, 1, 2}, {3, 4}});
  CHECK(plan_fusion(items, 39) == Batches{{0}, {1}, {2}, {3}, {4}});
}

TEST_CASE("fusion planner: CPU items from alone_bytes on run alone; device items still fuse",
          "[fusion]") {
  std::vector<FusionItem> items = {item(10), item(50), item(20), item(49), item(50)};
  CHECK(plan_fusion(items, 1000, 50) == Batches{{0, 2, 3}, {1}, {4}});
  CHECK(plan_fusion(items, 1000, 0) == Batches{{0, 1, 2, 3, 4}});  // 0: no such rule
  for (FusionItem& i : items) i.device = 0;
  CHECK(plan_fusion(items, 1000, 50) == Batches{{0, 1, 2, 3, 4}});
}

TEST_CASE("fusion planner: look-ahead skips what does not fit or is incompatible", "[fusion]") {
  // Item 1 does not fit beside item 0, item 2 does; item 1 then starts the next batch.
  std::vector<FusionItem> sizes = {item(60), item(50), item(40), item(50)};
  CHECK(plan_fusion(sizes, 100) == Batches{{0, 2}, {1, 3}});

  FusionItem f64 = item(10);
  f64.dtype = DataType::kFloat64;
  std::vector<FusionItem> mixed = {item(10), f64, item(10), f64, item(10)};
  CHECK(plan_fusion(mixed, 100) == Batches{{0, 2, 4}, {1, 3}});
}

TEST_CASE("fusion planner: an item larger than the threshold travels alone", "[fusion]") {
  std::vector<FusionItem> items = {item(10), item(500), item(10), item(501)};
  CHECK(plan_fusion(items, 100) == Batches{{0, 2}, {1}, {3}});
  std::vector<FusionItem> first_big = {item(500), item(10), item(10)};
  CHECK(plan_fusion(first_big, 100) == Batches{{0}, {1, 2}});
}

TEST_CASE("fusion planner: threshold 0 disables fusion", "[fusion]") {
  std::vector<FusionItem> items = {item(0), item(1), item(0)};
  CHECK(plan_fusion(items, 0) == Batches{{0}, {1}, {2}});
  CHECK(plan_fusion(items, -5) == Batches{{0}, {1}, {2}});
  // Empty tensors fuse when fusion is on.
  CHECK(plan_fusion(items, 1) == Batches{{0, 1, 2}});
}

TEST_CASE("fusion planner: only allreduce fuses", "[fusion]") {
  std::vector<FusionItem> items;
  for (OpType op : {OpType::kAllreduce, OpType::kAllgather, OpType::kBroadcast, OpType::kAllreduce,
                    OpType::kAlltoall, OpType::kReducescatter, OpType::kAllgather, OpType::kBarrier,
                    OpType::kJoin, OpType::kAllreduce}) {
    FusionItem i = item(8);
    i.op_type = op;
    items.push_back(i);
  }
  CHECK(plan_fusion(items, 1 << 20) == Batches{{0, 3, 9}, {1}, {2}, {4}, {5}, {6}, {7}, {8}});
}

TEST_CASE("fusion planner: every part of the key separates", "[fusion]") {
  auto differ = [](auto change) {
    FusionItem other = item(8);
    change(other);
    std::vector<FusionItem> items = {item(8), other, item(8)};
    return plan_fusion(items, 1000);
  };
  const Batches apart{{0, 2}, {1}};
  CHECK(differ([](FusionItem& i) { i.dtype = DataType::kFloat16; }) == apart);
  CHECK(differ([](FusionItem& i) { i.reduce_op = ReduceOp::kMax; }) == apart);
  CHECK(differ([](FusionItem& i) { i.device = 0; }) == apart);
  CHECK(differ([](FusionItem& i) { i.process_set_id = 1; }) == apart);
  CHECK(differ([](FusionItem& i) { i.prescale_factor = 0.5; }) == apart);
  CHECK(differ([](FusionItem& i) { i.postscale_factor = 2.0; }) == apart);
  CHECK(differ([](FusionItem&) {}) == Batches{{0, 1, 2}});
}

TEST_CASE("fusion planner: randomized plans are complete, ordered, within the threshold",
          "[fusion]") {
  std::mt19937 rng(20240611);  // fixed seed: the same cases on every run
  auto pick = [&rng](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  for (int round = 0; round < 500; ++round) {
    std::vector<FusionItem> items(static_cast<size_t>(pick(40)));
    for (FusionItem& i : items) {
      i.op_type = pick(6) == 0 ? OpType::kAllgather : OpType::kAllreduce;
      i.dtype = pick(3) == 0 ? DataType::kFloat16 : DataType::kFloat32;
      i.reduce_op = pick(4) == 0 ? ReduceOp::kMin : ReduceOp::kSum;
      i.process_set_id = pick(5) == 0 ? 1 : 0;
      i.prescale_factor = pick(5) == 0 ? 0.5 : 1.0;
      i.bytes = pick(4) == 0 ? pick(400) : pick(60);
    }
    int64_t threshold = pick(8) == 0 ? 0 : pick(300);
    CAPTURE(round, items.size(), threshold);
    Batches plan = plan_fusion(items, threshold);
    REQUIRE(plan == reference_plan(items, threshold));

    std::vector<int> seen(items.size(), 0);
    for (size_t b = 0; b < plan.size(); ++b) {
      const auto& batch = plan[b];
      REQUIRE_FALSE(batch.empty());
      REQUIRE(std::is_sorted(batch.begin(), batch.end()));
      if (b > 0) REQUIRE(plan[b - 1].front() < batch.front());
      int64_t total = 0;
      for (size_t index : batch) {
        REQUIRE(index < items.size());
        ++seen[index];
        total += items[index].bytes;
        REQUIRE(compatible(items[batch.front()], items[index]));
      }
      if (batch.size() > 1) {
        REQUIRE(total <= threshold);
        REQUIRE(items[batch.front()].op_type == OpType::kAllreduce);
      }
    }
    REQUIRE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
    // Deterministic: the same input gives the same plan.
    REQUIRE(plan_fusion(items, threshold) == plan);
  }
}

}  // namespace hvd::runtime::engine
