// Device memory for engine-allocated outputs (allgather, alltoall,
// reducescatter of device ops), reused rather than allocated and freed per
// op: cudaFree waits for the whole device. A block comes back when its
// output goes. A block that a stream may still read (its copy to the
// caller's tensor was enqueued on the caller's stream, no host wait) comes
// back with the event recorded after that copy and is handed out again
// only once the event completed (torch's record_stream). Blocks are sized
// in powers of two from 256 bytes; at most keep_bytes of free blocks are
// kept, the rest is freed. Thread-safe: outputs go on user threads; held
// by every output it lent, so it outlives the engine as they do.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "common/status.h"
#include "runtime/engine/device_event.h"
#include "transports/device_work.h"

namespace hvd::runtime::engine {

class DeviceOutputPool {
 public:
  struct Block {
    void* data = nullptr;
    size_t capacity = 0;
  };

  explicit DeviceOutputPool(std::shared_ptr<transports::DeviceWork> work,
                            size_t keep_bytes = size_t{256} << 20);
  ~DeviceOutputPool();  // frees the free blocks
  DeviceOutputPool(const DeviceOutputPool&) = delete;
  DeviceOutputPool& operator=(const DeviceOutputPool&) = delete;

  // A block of at least `bytes` (a free one no stream still reads, else a
  // new allocation); the device's failure to allocate otherwise.
  common::Result<Block> take(size_t bytes);
  // Returns a block; `last_use` (may be null): the event after which no
  // stream reads it any more.
  void give_back(Block block, std::shared_ptr<DeviceEvent> last_use);

  transports::DeviceWork& work() const { return *work_; }
  const std::shared_ptr<transports::DeviceWork>& shared_work() const { return work_; }
  // Blocks allocated from the device so far (a test's and a reader's figure).
  size_t allocations() const;

 private:
  struct FreeBlock {
    Block block;
    std::shared_ptr<DeviceEvent> last_use;
  };
  static size_t size_class(size_t bytes);

  std::shared_ptr<transports::DeviceWork> work_;
  const size_t keep_bytes_;
  mutable std::mutex mu_;
  std::vector<FreeBlock> free_;
  size_t free_bytes_ = 0;
  size_t allocations_ = 0;
};

}  // namespace hvd::runtime::engine
