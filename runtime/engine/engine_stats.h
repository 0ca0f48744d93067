// Counters of one process set's engine, for tests, diagnostics and hvdrun's
// /metrics (docs/metrics.md). The engine thread increments them (relaxed
// atomics, no lock, no allocation); any thread may read a snapshot.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace hvd::runtime::engine {

struct EngineStats {
  int64_t cycles = 0;             // negotiation exchanges done
  int64_t payload_exchanges = 0;  // cycles in which some rank announced requests in full
  int64_t large_payloads = 0;     // ... and needed a second allgather (too big for the header)
  int64_t cache_hits = 0;         // responses agreed through the cache's bit vector
  int64_t responses = 0;          // ops agreed (including errors)
  int64_t data_calls = 0;         // data-plane transport calls (not negotiation)
  int64_t fused_batches = 0;      // allreduce calls that carried more than one tensor
  int64_t fused_tensors = 0;      // tensors that travelled in those
  int64_t stall_warnings = 0;     // stall inspector warnings logged
};

// Op types counted (OpType's values, request.h: allreduce .. join).
inline constexpr size_t kCountedOpTypes = 7;
// Upper bounds (seconds) of the allreduce latency histogram's buckets; one
// more bucket (+Inf) follows.
inline constexpr std::array<double, 14> kLatencyBounds = {
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
    0.01,    0.025,  0.05,    0.1,    0.25,  1.0,    5.0};

// What OpCounters hold: per op type ops finished (their name freed: done,
// failed, or a device op launched) and their input bytes; allreduce
// latencies from enqueue, per bucket (not cumulative) and summed.
struct OpStats {
  std::array<int64_t, kCountedOpTypes> completed{};
  std::array<int64_t, kCountedOpTypes> bytes{};
  std::array<int64_t, kLatencyBounds.size() + 1> latency_buckets{};
  int64_t latency_sum_ns = 0;
};

struct OpCounters {
  std::array<std::atomic<int64_t>, kCountedOpTypes> completed{};
  std::array<std::atomic<int64_t>, kCountedOpTypes> bytes{};
  std::array<std::atomic<int64_t>, kLatencyBounds.size() + 1> latency_buckets{};
  std::atomic<int64_t> latency_sum_ns{0};

  // One op of `op_type` (OpType's value) finished; `latency` from its
  // enqueue (allreduce only; negative: unknown).
  void record(int32_t op_type, int64_t input_bytes, std::chrono::nanoseconds latency) {
    if (op_type < 0 || static_cast<size_t>(op_type) >= kCountedOpTypes) return;
    const auto type = static_cast<size_t>(op_type);
    completed[type].fetch_add(1, std::memory_order_relaxed);
    bytes[type].fetch_add(input_bytes, std::memory_order_relaxed);
    if (op_type != 0 || latency.count() < 0) return;
    const double seconds = std::chrono::duration<double>(latency).count();
    size_t bucket = 0;
    while (bucket < kLatencyBounds.size() && seconds > kLatencyBounds[bucket]) ++bucket;
    latency_buckets[bucket].fetch_add(1, std::memory_order_relaxed);
    latency_sum_ns.fetch_add(latency.count(), std::memory_order_relaxed);
  }

  OpStats snapshot() const {
    OpStats s;
    for (size_t i = 0; i < kCountedOpTypes; ++i) {
      s.completed[i] = completed[i].load(std::memory_order_relaxed);
      s.bytes[i] = bytes[i].load(std::memory_order_relaxed);
    }
    for (size_t i = 0; i < latency_buckets.size(); ++i) {
      s.latency_buckets[i] = latency_buckets[i].load(std::memory_order_relaxed);
    }
    s.latency_sum_ns = latency_sum_ns.load(std::memory_order_relaxed);
    return s;
  }
};

struct EngineCounters {
  std::atomic<int64_t> cycles{0};
  std::atomic<int64_t> payload_exchanges{0};
  std::atomic<int64_t> large_payloads{0};
  std::atomic<int64_t> cache_hits{0};
  std::atomic<int64_t> responses{0};
  std::atomic<int64_t> data_calls{0};
  std::atomic<int64_t> fused_batches{0};
  std::atomic<int64_t> fused_tensors{0};
  std::atomic<int64_t> stall_warnings{0};
  OpCounters ops;  // ops finished, by type (TensorQueue::finish)

  static void bump(std::atomic<int64_t>& counter, int64_t by = 1) {
    counter.fetch_add(by, std::memory_order_relaxed);
  }

  EngineStats snapshot() const {
    auto get = [](const std::atomic<int64_t>& c) { return c.load(std::memory_order_relaxed); };
    return {get(cycles),        get(payload_exchanges), get(large_payloads), get(cache_hits),
            get(responses),     get(data_calls),        get(fused_batches),  get(fused_tensors),
            get(stall_warnings)};
  }
};

}  // namespace hvd::runtime::engine
