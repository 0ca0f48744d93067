#include "runtime/engine/host_buffer_pool.h"

#include <mutex>
#include <utility>
#include <vector>

namespace hvd::runtime::engine {

namespace {

struct Pool {
  std::mutex mu;
  std::vector<std::pair<size_t, uint8_t*>> free;  // capacity, memory
  size_t bytes = 0;
};

// Never destroyed: outputs may be released from atexit handlers or threads
// that outlive static destruction.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

}  // namespace

void PooledFree::operator()(uint8_t* p) const {
  if (p == nullptr) return;
  if (capacity >= kPooledMinBytes) {
    Pool& pl = pool();
    std::lock_guard lock(pl.mu);
    if (pl.free.size() < kPoolEntries && pl.bytes + capacity <= kPoolBytes) {
      pl.free.emplace_back(capacity, p);
      pl.bytes += capacity;
      return;
    }
  }
  delete[] p;
}

HostBuffer take_host_buffer(size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes >= kPooledMinBytes) {
    Pool& pl = pool();
    std::lock_guard lock(pl.mu);
    for (auto it = pl.free.begin(); it != pl.free.end(); ++it) {
      if (it->first >= bytes && it->first / 2 <= bytes) {
        HostBuffer reused(it->second, PooledFree{it->first});
        pl.bytes -= it->first;
        pl.free.erase(it);
        return reused;
      }
    }
  }
  return HostBuffer(new uint8_t[bytes], PooledFree{bytes});
}

size_t pooled_host_buffers() {
  Pool& pl = pool();
  std::lock_guard lock(pl.mu);
  return pl.free.size();
}

}  // namespace hvd::runtime::engine
