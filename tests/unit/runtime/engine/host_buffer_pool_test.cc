// runtime/engine/host_buffer_pool: large outputs come back to the pool and
// are reused for requests they fit (up to twice the size); small ones and
// those beyond the pool's limits are freed.
#include <catch2/catch.hpp>

#include <vector>

#include "runtime/engine/host_buffer_pool.h"

namespace hvd::runtime::engine {

TEST_CASE("host buffer pool: a released large buffer is reused for a size it fits",
          "[host_buffer_pool]") {
  const size_t before = pooled_host_buffers();
  uint8_t* first = nullptr;
  {
    HostBuffer a = take_host_buffer(8 << 20);
    first = a.get();
    a[0] = 1;
    a[(8 << 20) - 1] = 2;
  }
  CHECK(pooled_host_buffers() == before + 1);
  HostBuffer again = take_host_buffer(5 << 20);  // fits: 8 MiB <= 2 x 5 MiB
  CHECK(again.get() == first);
  CHECK(pooled_host_buffers() == before);
  HostBuffer bigger = take_host_buffer(9 << 20);  // does not fit: a new one
  CHECK(bigger.get() != first);
}

TEST_CASE("host buffer pool: too small a request does not take a much larger buffer",
          "[host_buffer_pool]") {
  { HostBuffer big = take_host_buffer(32 << 20); }
  const size_t pooled = pooled_host_buffers();
  HostBuffer small = take_host_buffer(2 << 20);  // 32 MiB > 2 x 2 MiB: not reused
  CHECK(pooled_host_buffers() == pooled);
}

TEST_CASE("host buffer pool: small buffers are not pooled; the pool is bounded",
          "[host_buffer_pool]") {
  const size_t before = pooled_host_buffers();
  { HostBuffer small = take_host_buffer(4096); }
  CHECK(pooled_host_buffers() == before);
  {
    std::vector<HostBuffer> many;
    for (size_t i = 0; i < kPoolEntries + 3; ++i) many.push_back(take_host_buffer(1 << 20));
  }
  CHECK(pooled_host_buffers() == kPoolEntries);
  HostBuffer zero = take_host_buffer(0);
  CHECK(zero != nullptr);
}

}  // namespace hvd::runtime::engine
