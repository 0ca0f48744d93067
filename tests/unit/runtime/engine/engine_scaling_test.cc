// Scale factors and Average on integer tensors through whole engines (ranks
// as threads, engine_world.h), on every executor path: a lone allreduce (in
// place), a fused batch, reducescatter and grouped reducescatter. Horovod's
// rule (runtime/engine/scale.h): float64 products truncated toward zero; an Average
// with a factor is folded into postscale / size; without factors an exact
// integer division. Three ranks; the expected values are worked out by hand.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "engine_world.h"

namespace hvd::runtime::engine {

namespace {

using testing::EngineWorld;
using testing::on_ranks;
using testing::request;
using testing::WorldOptions;

constexpr int kRanks = 3;

Request scaled(Request q, double prescale, double postscale) {
  q.prescale_factor = prescale;
  q.postscale_factor = postscale;
  return q;
}

template <typename T>
std::string compare(const std::string& what, const std::vector<T>& got,
                    const std::vector<T>& want) {
  if (got == want) return "";
  std::string text = what + ": got";
  for (T v : got) text += " " + std::to_string(v);
  text += ", expected";
  for (T v : want) text += " " + std::to_string(v);
  return text;
}

// The engine-allocated output of a finished op, as T.
template <typename T>
std::vector<T> output_of(EngineWorld& w, int r, int64_t handle) {
  std::vector<T> out;
  (void)w.handles(r).inspect(handle, [&](const FinishedOp& op) {
    const auto* p = reinterpret_cast<const T*>(op.output.data.get());
    out.assign(p, p + op.output.bytes / sizeof(T));
    return common::Status::ok();
  });
  return out;
}

}  // namespace

TEST_CASE("engine: integer allreduce with factors, alone and fused", "[engine][scale]") {
  WorldOptions o;
  o.size = kRanks;
  EngineWorld w(o);
  const EngineStats before = w.engine(0).stats();
  auto problems = on_ranks(kRanks, [&](int r) -> std::string {
    // Alone, in place: int32 Average, prescale 0.5, postscale 2. Rank r has
    // {-7-r, 7+r, 2r+1}; prescaled {-3,3,0}, {-4,4,1}, {-4,4,2} sum to
    // {-11, 11, 3}, times 2/3: {-7.3, 7.3, 2.0} -> {-7, 7, 2}.
    std::vector<int32_t> a{-7 - r, 7 + r, 2 * r + 1};
    auto h = testing::submit(
        w, r, scaled(request("a", OpType::kAllreduce, DataType::kInt32, {3}, ReduceOp::kAverage),
                     0.5, 2.0),
        a.data(), a.data());
    if (!h.is_ok()) return h.status().to_string();
    if (auto s = testing::wait(w, r, h.value()); !s.is_ok()) return "a: " + s.to_string();
    if (auto p = compare("a", a, {-7, 7, 2}); !p.empty()) return p;

    // Fused: two int16 tensors, Sum, prescale 1.5, postscale -0.5.
    // b1: {r+1, -(r+1)} -> {1,-1}, {3,-3}, {4,-4} (4.5 -> 4): {8, -8} -> {-4, 4}.
    // b2: {10r-5} -> -7 (-7.5), 7, 22: 22 -> -11.
    std::vector<int16_t> b1{static_cast<int16_t>(r + 1), static_cast<int16_t>(-(r + 1))};
    std::vector<int16_t> b2{static_cast<int16_t>(10 * r - 5)};
    auto hs = testing::submit_group(
        w, r,
        {scaled(request("b1", OpType::kAllreduce, DataType::kInt16, {2}), 1.5, -0.5),
         scaled(request("b2", OpType::kAllreduce, DataType::kInt16, {1}), 1.5, -0.5)},
        {b1.data(), b2.data()}, {b1.data(), b2.data()});
    if (!hs.is_ok()) return hs.status().to_string();
    for (int64_t handle : hs.value()) {
      if (auto s = testing::wait(w, r, handle); !s.is_ok()) return "b: " + s.to_string();
    }
    if (auto p = compare<int16_t>("b1", b1, {-4, 4}); !p.empty()) return p;
    if (auto p = compare<int16_t>("b2", b2, {-11}); !p.empty()) return p;

    // Fused int8 Average without factors: exact integer division.
    // c1: {5r-7, 20} sums {-6, 60} -> {-2, 20}; c2: {r} sums 3 -> 1.
    std::vector<int8_t> c1{static_cast<int8_t>(5 * r - 7), 20};
    std::vector<int8_t> c2{static_cast<int8_t>(r)};
    hs = testing::submit_group(
        w, r,
        {request("c1", OpType::kAllreduce, DataType::kInt8, {2}, ReduceOp::kAverage),
         request("c2", OpType::kAllreduce, DataType::kInt8, {1}, ReduceOp::kAverage)},
        {c1.data(), c2.data()}, {c1.data(), c2.data()});
    if (!hs.is_ok()) return hs.status().to_string();
    for (int64_t handle : hs.value()) {
      if (auto s = testing::wait(w, r, handle); !s.is_ok()) return "c: " + s.to_string();
    }
    if (auto p = compare<int8_t>("c1", c1, {-2, 20}); !p.empty()) return p;
    return compare<int8_t>("c2", c2, {1});
  });
  INFO(testing::problem_lines(problems));
  CHECK(problems.empty());
  CHECK(w.engine(0).stats().fused_batches - before.fused_batches >= 2);  // b and c fused
}

TEST_CASE("engine: integer reducescatter with factors, alone and grouped", "[engine][scale]") {
  WorldOptions o;
  o.size = kRanks;
  EngineWorld w(o);
  auto problems = on_ranks(kRanks, [&](int r) -> std::string {
    // int64 Average, postscale 1.5 (folded: 0.5). Rank r has
    // {-10(r+1)-1, 4r, 7(r+1)}: sums {-63, 12, 42} -> {-31, 6, 21}, a row each.
    std::vector<int64_t> d{-10 * (r + 1) - 1, 4 * r, 7 * (r + 1)};
    auto h = testing::submit(
        w, r,
        scaled(request("d", OpType::kReducescatter, DataType::kInt64, {3}, ReduceOp::kAverage),
               1.0, 1.5),
        d.data(), nullptr);
    if (!h.is_ok()) return h.status().to_string();
    if (auto s = testing::wait(w, r, h.value()); !s.is_ok()) return "d: " + s.to_string();
    const int64_t d_want[] = {-31, 6, 21};
    if (auto p = compare<int64_t>("d", output_of<int64_t>(w, r, h.value()), {d_want[r]});
        !p.empty()) {
      return p;
    }

    // Grouped: uint8 Sum, prescale 0.5, postscale 3: {2r+3, 9, 40} ->
    // {1|2|3, 4, 20}: sums {6, 12, 60} -> {18, 36, 180}. int32 Average with
    // prescale 2 (folded: 1/3): {-5r-1, 7, 3r} -> sums {-36, 42, 18} -> {-12, 14, 6}.
    std::vector<uint8_t> e1{static_cast<uint8_t>(2 * r + 3), 9, 40};
    std::vector<int32_t> e2{-5 * r - 1, 7, 3 * r};
    auto hs = testing::submit_group(
        w, r,
        {scaled(request("e1", OpType::kReducescatter, DataType::kUInt8, {3}), 0.5, 3.0),
         scaled(request("e2", OpType::kReducescatter, DataType::kInt32, {3}, ReduceOp::kAverage),
                2.0, 1.0)},
        {e1.data(), e2.data()}, {nullptr, nullptr});
    if (!hs.is_ok()) return hs.status().to_string();
    for (int64_t handle : hs.value()) {
      if (auto s = testing::wait(w, r, handle); !s.is_ok()) return "e: " + s.to_string();
    }
    const uint8_t e1_want[] = {18, 36, 180};
    const int32_t e2_want[] = {-12, 14, 6};
    if (auto p = compare<uint8_t>("e1", output_of<uint8_t>(w, r, hs.value()[0]), {e1_want[r]});
        !p.empty()) {
      return p;
    }
    return compare<int32_t>("e2", output_of<int32_t>(w, r, hs.value()[1]), {e2_want[r]});
  });
  INFO(testing::problem_lines(problems));
  CHECK(problems.empty());
}

}  // namespace hvd::runtime::engine
