// Counters of one process set's engine, for tests and diagnostics. The engine
// thread increments them (relaxed atomics); any thread may read a snapshot.
#pragma once

#include <atomic>
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

  static void bump(std::atomic<int64_t>& counter, int64_t by = 1) {
    counter.fetch_add(by, std::memory_order_relaxed);
  }

  EngineStats snapshot() const {
    auto get = [](const std::atomic<int64_t>& c) { return c.load(std::memory_order_relaxed); };
    return {get(cycles),        get(payload_exchanges), get(large_payloads), get(cache_hits),
            get(responses),     get(data_calls),        get(fused_batches),  get(fused_tensors)};
  }
};

}  // namespace hvd::runtime::engine
