// Host memory for engine-allocated outputs (allgather, alltoall,
// reducescatter). Large buffers go back to a small process-wide pool when
// their handle is released, so a training loop's repeated sizes reuse memory
// instead of paying page faults: glibc serves allocations above its mmap
// threshold (32 MiB at most) with fresh mappings whose every page faults on
// first touch (a 64 MiB output: 16k faults, 10-40 ms on the development VM,
// more than the collective). Small buffers are plain new[]/delete[].
//
// A buffer is reused for a request of `bytes` when its capacity is at least
// `bytes` and at most twice it; the pool keeps at most kPoolEntries buffers
// and kPoolBytes in all (the rest are freed). Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace hvd::runtime::engine {

inline constexpr size_t kPooledMinBytes = size_t{1} << 20;
inline constexpr size_t kPoolEntries = 4;
inline constexpr size_t kPoolBytes = size_t{1} << 30;

// Returns the buffer to the pool (or frees it).
struct PooledFree {
  size_t capacity = 0;
  void operator()(uint8_t* p) const;
};

using HostBuffer = std::unique_ptr<uint8_t[], PooledFree>;

// At least `bytes` (at least 1) bytes, uninitialised.
HostBuffer take_host_buffer(size_t bytes);

// Buffers held by the pool now (tests).
size_t pooled_host_buffers();

}  // namespace hvd::runtime::engine
