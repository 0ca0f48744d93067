#include "runtime/engine/device_data_plane.h"

#include <algorithm>
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

// An engine-allocated output in device memory, freed through the work.
class DeviceMemoryOutput final : public DeviceOutput {
 public:
  DeviceMemoryOutput(std::shared_ptr<DeviceWork> work, void* data, void* stream)
      : work_(std::move(work)), data_(static_cast<uint8_t*>(data)), stream_(stream) {}
  ~DeviceMemoryOutput() override { work_->free(data_, false); }
  uint8_t* data() const override { return data_; }
  Status copy_to(void* dst, size_t bytes) const override {
    if (bytes == 0) return Status::ok();
    const DeviceCopy c{dst, data_, bytes};
    HVD_RETURN_IF_ERROR(work_->copy({&c, 1}, stream_));
    return work_->synchronize(stream_);
  }

 private:
  std::shared_ptr<DeviceWork> work_;
  uint8_t* data_;
  void* stream_;  // the op's
};

}  // namespace

DeviceDataPlane::DeviceDataPlane(std::shared_ptr<DeviceWork> work,
                                 transports::StreamedTransport* streamed)
    : work_(std::move(work)), streamed_(streamed) {}

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

Status DeviceDataPlane::synchronize() { return work_->synchronize(stream_); }

common::Result<void*> DeviceDataPlane::grow(Memory& memory, size_t bytes, bool pinned_host) {
  if (memory.data != nullptr && bytes <= memory.capacity) return memory.data;
  const size_t grown = std::max({bytes, memory.capacity + memory.capacity / 2, size_t{1}});
  work_->free(memory.data, pinned_host);  // nothing in flight: every batch ended synchronized
  memory = Memory{};
  auto made = work_->alloc(grown, pinned_host);
  if (!made.is_ok()) return made.status();
  memory = Memory{made.value(), grown};
  return memory.data;
}

common::Result<OpOutput> DeviceDataPlane::allocate(size_t bytes, std::vector<int64_t> shape) {
  auto memory = work_->alloc(std::max<size_t>(bytes, 1), false);
  if (!memory.is_ok()) return memory.status();
  OpOutput out;
  out.device = std::make_unique<DeviceMemoryOutput>(work_, memory.value(), stream_);
  out.bytes = bytes;
  out.shape = std::move(shape);
  return out;
}

common::Result<uint8_t*> DeviceDataPlane::reserve(size_t bytes) {
  auto memory = grow(fusion_, bytes, false);
  if (!memory.is_ok()) return memory.status();
  return static_cast<uint8_t*>(memory.value());
}

Status DeviceDataPlane::copy_all() {
  Status s = work_->copy(copies_, stream_);
  copies_.clear();
  return s;
}

common::Result<size_t> DeviceDataPlane::pack(std::span<const FusionPart> parts, DataType type,
                                             ReduceOp op, double prescale) {
  HVD_RETURN_IF_ERROR(check_arithmetic(type, 1, prescale));
  const size_t element = common::data_type_size(type);
  size_t total = 0;
  size_t joined = 0;  // elements of the largest part without input
  for (const FusionPart& p : parts) {
    total += p.count * element;
    if (p.input == nullptr) joined = std::max(joined, p.count);
  }
  auto fused = reserve(total);
  if (!fused.is_ok()) return fused.status();
  uint8_t* at = fused.value();
  for (const FusionPart& p : parts) {
    if (p.input != nullptr) copies_.push_back({at, p.input, p.count * element});
    at += p.count * element;
  }
  HVD_RETURN_IF_ERROR(copy_all());
  HVD_RETURN_IF_ERROR(work_->scale(fused.value(), total / element, type, 1, prescale, stream_));
  if (joined == 0) return total;
  // A rank that joined: the identity of `op`, unscaled, after the scaling.
  auto identity = grow(identity_, joined * element, true);
  if (!identity.is_ok()) return identity.status();
  fill_identity(identity.value(), joined, type, op);
  at = fused.value();
  for (const FusionPart& p : parts) {
    if (p.input == nullptr) copies_.push_back({at, identity.value(), p.count * element});
    at += p.count * element;
  }
  HVD_RETURN_IF_ERROR(copy_all());
  return total;
}

Status DeviceDataPlane::unpack(std::span<const FusionPart> parts, DataType type, int divisor,
                               double postscale) {
  HVD_RETURN_IF_ERROR(check_arithmetic(type, divisor, postscale));
  const size_t element = common::data_type_size(type);
  size_t count = 0;
  for (const FusionPart& p : parts) count += p.count;
  HVD_RETURN_IF_ERROR(work_->scale(fusion_.data, count, type, divisor, postscale, stream_));
  const auto* at = static_cast<const uint8_t*>(fusion_.data);
  for (const FusionPart& p : parts) {
    if (p.output != nullptr) copies_.push_back({p.output, at, p.count * element});
    at += p.count * element;
  }
  return copy_all();
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
  return copy_all();
}

}  // namespace hvd::runtime::engine
