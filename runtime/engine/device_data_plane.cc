#include "runtime/engine/device_data_plane.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include "runtime/engine/scale.h"

namespace hvd::runtime::engine {

namespace {

using common::Status;
using transports::DeviceCopy;
using transports::DeviceWork;

// The host's refusal of this arithmetic (bool has none), checked on no data.
Status check_arithmetic(DataType type, int divisor, double factor) {
  return finish_reduction(nullptr, nullptr, 0, type, divisor, factor);
}

size_t padded(size_t bytes) {
  return (bytes + DeviceDataPlane::kFusionAlign - 1) / DeviceDataPlane::kFusionAlign *
         DeviceDataPlane::kFusionAlign;
}

// An engine-allocated output in device memory, from the pool and back to
// it when it goes (after the last copy out of it, when that copy was only
// enqueued).
class PooledDeviceOutput final : public DeviceOutput {
 public:
  PooledDeviceOutput(std::shared_ptr<DeviceOutputPool> pool, DeviceOutputPool::Block block,
                     void* stream)
      : pool_(std::move(pool)), block_(block), stream_(stream) {}
  ~PooledDeviceOutput() override { pool_->give_back(block_, std::move(last_use_)); }
  uint8_t* data() const override { return static_cast<uint8_t*>(block_.data); }
  void launched(std::shared_ptr<DeviceEvent> done) override { done_ = std::move(done); }

  Status copy_to(void* dst, size_t bytes, void* stream, bool wait) const override {
    if (bytes == 0) return Status::ok();
    DeviceWork& work = pool_->work();
    const DeviceCopy c{dst, block_.data, bytes};
    std::lock_guard lock(mu_);
    if (done_) {
      // On the caller's stream, after it waited for the op on the device;
      // the block is read there until the event recorded after the copy.
      HVD_RETURN_IF_ERROR(done_->order(stream));
      HVD_RETURN_IF_ERROR(work.copy_on_device({&c, 1}, stream));
      auto used = DeviceEvent::record(pool_->shared_work(), stream);
      if (!used.is_ok()) return used.status();
      last_use_ = used.value();
      return wait ? work.synchronize(stream) : Status::ok();
    }
    // The op was waited for (no events): on its stream, after the caller's
    // stream's work so far (dst may be memory the caller's allocator has
    // just handed back while its earlier kernels still read it), waited for.
    if (stream != stream_) HVD_RETURN_IF_ERROR(work.stream_wait(stream_, stream, nullptr));
    HVD_RETURN_IF_ERROR(work.copy_on_device({&c, 1}, stream_));
    return work.synchronize(stream_);
  }

 private:
  std::shared_ptr<DeviceOutputPool> pool_;
  DeviceOutputPool::Block block_;
  void* stream_;  // the batch's
  std::shared_ptr<DeviceEvent> done_;
  mutable std::mutex mu_;  // copies may come from several threads
  mutable std::shared_ptr<DeviceEvent> last_use_;
};

}  // namespace

DeviceDataPlane::DeviceDataPlane(std::shared_ptr<DeviceWork> work,
                                 transports::StreamedTransport* streamed)
    : work_(std::move(work)), outputs_(std::make_shared<DeviceOutputPool>(work_)),
      streamed_(streamed) {}

DeviceDataPlane::~DeviceDataPlane() {
  work_->free(fusion_.data, false);
  work_->free(identity_.data, true);
}

Status DeviceDataPlane::begin(std::span<const OpStream> ops) {
  if (void* comm = work_->comm_stream(); comm != nullptr) {
    stream_ = comm;
    if (streamed_ != nullptr) streamed_->set_stream(comm);
    for (const OpStream& op : ops) HVD_RETURN_IF_ERROR(work_->stream_wait(comm, op.stream, op.ready));
    return Status::ok();
  }
  stream_ = ops.empty() ? nullptr : ops.front().stream;
  if (streamed_ != nullptr) streamed_->set_stream(stream_);
  for (const OpStream& other : ops) {
    if (other.stream != stream_) HVD_RETURN_IF_ERROR(work_->synchronize(other.stream));
  }
  return Status::ok();
}

common::Result<std::shared_ptr<DeviceEvent>> DeviceDataPlane::end() {
  if (!work_->has_events()) {
    HVD_RETURN_IF_ERROR(work_->synchronize(stream_));
    return std::shared_ptr<DeviceEvent>();
  }
  return DeviceEvent::record(work_, stream_);
}

Status DeviceDataPlane::quiesce() {
  return work_->has_events() ? work_->synchronize(stream_) : Status::ok();
}

common::Result<void*> DeviceDataPlane::grow(Memory& memory, size_t bytes, bool pinned_host) {
  if (memory.data != nullptr && bytes <= memory.capacity) return memory.data;
  const size_t grown = std::max({bytes, memory.capacity + memory.capacity / 2, size_t{1}});
  // Batches in flight may still use the old memory on the device.
  if (memory.data != nullptr) HVD_RETURN_IF_ERROR(quiesce());
  work_->free(memory.data, pinned_host);
  memory = Memory{};
  auto made = work_->alloc(grown, pinned_host);
  if (!made.is_ok()) return made.status();
  memory = Memory{made.value(), grown};
  return memory.data;
}

common::Result<OpOutput> DeviceDataPlane::allocate(size_t bytes, std::vector<int64_t> shape) {
  auto block = outputs_->take(bytes);
  if (!block.is_ok()) return block.status();
  OpOutput out;
  out.device = std::make_unique<PooledDeviceOutput>(outputs_, block.value(), stream_);
  out.bytes = bytes;
  out.shape = std::move(shape);
  return out;
}

common::Result<uint8_t*> DeviceDataPlane::reserve(size_t bytes) {
  auto memory = grow(fusion_, bytes, false);
  if (!memory.is_ok()) return memory.status();
  return static_cast<uint8_t*>(memory.value());
}

Status DeviceDataPlane::copy_all(bool on_device) {
  Status s = on_device ? work_->copy_on_device(copies_, stream_) : work_->copy(copies_, stream_);
  copies_.clear();
  return s;
}

common::Result<size_t> DeviceDataPlane::pack(std::span<const FusionPart> parts, DataType type,
                                             ReduceOp op, double prescale) {
  HVD_RETURN_IF_ERROR(check_arithmetic(type, 1, prescale));
  const size_t element = common::data_type_size(type);
  // One part: its own size; several: each starts at a multiple of 16.
  const bool one = parts.size() == 1;
  size_t total = 0;
  size_t joined = 0;  // elements of the largest part without input
  for (const FusionPart& p : parts) {
    total += one ? p.count * element : padded(p.count * element);
    if (p.input == nullptr) joined = std::max(joined, p.count);
  }
  auto fused = reserve(total);
  if (!fused.is_ok()) return fused.status();
  uint8_t* at = fused.value();
  for (const FusionPart& p : parts) {
    if (p.input != nullptr) copies_.push_back({at, p.input, p.count * element});
    at += padded(p.count * element);
  }
  HVD_RETURN_IF_ERROR(copy_all(true));
  HVD_RETURN_IF_ERROR(work_->scale(fused.value(), total / element, type, 1, prescale, stream_));
  if (joined == 0) return total;
  // A rank that joined: the identity of `op`, unscaled, after the scaling.
  // The pinned identities may still be read by a batch in flight.
  if (identity_.data != nullptr) HVD_RETURN_IF_ERROR(quiesce());
  auto identity = grow(identity_, joined * element, true);
  if (!identity.is_ok()) return identity.status();
  fill_identity(identity.value(), joined, type, op);
  at = fused.value();
  for (const FusionPart& p : parts) {
    if (p.input == nullptr) copies_.push_back({at, identity.value(), p.count * element});
    at += padded(p.count * element);
  }
  HVD_RETURN_IF_ERROR(copy_all(false));
  return total;
}

Status DeviceDataPlane::unpack(std::span<const FusionPart> parts, DataType type, int divisor,
                               double postscale) {
  HVD_RETURN_IF_ERROR(check_arithmetic(type, divisor, postscale));
  const size_t element = common::data_type_size(type);
  const bool one = parts.size() == 1;  // as pack() laid them out
  size_t total = 0;
  for (const FusionPart& p : parts) total += one ? p.count * element : padded(p.count * element);
  HVD_RETURN_IF_ERROR(work_->scale(fusion_.data, total / element, type, divisor, postscale,
                                   stream_));
  const auto* at = static_cast<const uint8_t*>(fusion_.data);
  for (const FusionPart& p : parts) {
    if (p.output != nullptr) copies_.push_back({p.output, at, p.count * element});
    at += padded(p.count * element);
  }
  return copy_all(true);
}

Status DeviceDataPlane::scale(void* dst, const void* src, size_t count, DataType type,
                              double factor) {
  HVD_RETURN_IF_ERROR(check_arithmetic(type, 1, factor));
  HVD_RETURN_IF_ERROR(copy(dst, src, count * common::data_type_size(type)));
  return work_->scale(dst, count, type, 1, factor, stream_);
}

Status DeviceDataPlane::finish(void* data, size_t count, DataType type, int divisor,
                               double factor) {
  HVD_RETURN_IF_ERROR(check_arithmetic(type, divisor, factor));
  return work_->scale(data, count, type, divisor, factor, stream_);
}

Status DeviceDataPlane::copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return Status::ok();
  copies_.push_back({dst, src, bytes});
  return copy_all(true);  // the ops' tensors and the plane's memory
}

}  // namespace hvd::runtime::engine
