#include "runtime/engine/device_output_pool.h"

#include <algorithm>
#include <bit>
#include <utility>

namespace hvd::runtime::engine {

DeviceOutputPool::DeviceOutputPool(std::shared_ptr<transports::DeviceWork> work,
                                   size_t keep_bytes)
    : work_(std::move(work)), keep_bytes_(keep_bytes) {}

DeviceOutputPool::~DeviceOutputPool() {
  for (FreeBlock& f : free_) work_->free(f.block.data, false);
}

size_t DeviceOutputPool::size_class(size_t bytes) {
  return std::bit_ceil(std::max<size_t>(bytes, 256));
}

size_t DeviceOutputPool::allocations() const {
  std::lock_guard lock(mu_);
  return allocations_;
}

common::Result<DeviceOutputPool::Block> DeviceOutputPool::take(size_t bytes) {
  const size_t wanted = size_class(bytes);
  {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < free_.size(); ++i) {
      FreeBlock& f = free_[i];
      if (f.block.capacity != wanted) continue;
      if (f.last_use) {
        auto done = f.last_use->done();
        if (!done.is_ok() || !done.value()) continue;  // a stream may still read it
      }
      Block block = f.block;
      free_bytes_ -= block.capacity;
      free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
      return block;
    }
    ++allocations_;
  }
  auto memory = work_->alloc(wanted, false);
  if (!memory.is_ok()) return memory.status();
  return Block{memory.value(), wanted};
}

void DeviceOutputPool::give_back(Block block, std::shared_ptr<DeviceEvent> last_use) {
  if (block.data == nullptr) return;
  std::vector<FreeBlock> dropped;  // freed outside the lock
  {
    std::lock_guard lock(mu_);
    free_.push_back({block, std::move(last_use)});
    free_bytes_ += block.capacity;
    // Over the bound: the oldest free blocks go (cudaFree orders itself
    // after the device's work, so one still read is safe to free).
    size_t drop = 0;
    while (free_bytes_ > keep_bytes_ && drop < free_.size()) {
      free_bytes_ -= free_[drop].block.capacity;
      ++drop;
    }
    dropped.assign(std::make_move_iterator(free_.begin()),
                   std::make_move_iterator(free_.begin() + static_cast<std::ptrdiff_t>(drop)));
    free_.erase(free_.begin(), free_.begin() + static_cast<std::ptrdiff_t>(drop));
  }
  for (FreeBlock& f : dropped) work_->free(f.block.data, false);
}

}  // namespace hvd::runtime::engine
