#include "transports/staging/staged_transport.h"

#include <algorithm>
#include <utility>

namespace hvd::transports::staging {

StagedTransport::StagedTransport(std::unique_ptr<Transport> cpu, std::shared_ptr<DeviceWork> work,
                                 size_t chunk_bytes)
    : cpu_(std::move(cpu)), work_(std::move(work)),
      name_(std::string(cpu_->name()) + " (staged through " + work_->name() + ")"),
      chunk_bytes_(chunk_bytes > 0 ? chunk_bytes : kDefaultChunk) {}

StagedTransport::~StagedTransport() {
  work_->free(in_.data, true);
  work_->free(out_.data, true);
}

common::Result<void*> StagedTransport::reserve(Pinned& buffer, size_t bytes) {
  if (bytes <= buffer.capacity && buffer.data != nullptr) return buffer.data;
  work_->free(buffer.data, true);
  buffer = Pinned{};
  const size_t grown = std::max<size_t>(bytes, 1);
  auto memory = work_->alloc(grown, true);
  if (!memory.is_ok()) return memory.status().with_context("staging through pinned host memory");
  buffer = Pinned{memory.value(), grown};
  return buffer.data;
}

Status StagedTransport::copy_async(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return Status::ok();
  const DeviceCopy copy{dst, src, bytes};
  return work_->copy({&copy, 1}, stream_);
}

Status StagedTransport::copy_and_wait(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return Status::ok();
  HVD_RETURN_IF_ERROR(copy_async(dst, src, bytes));
  return work_->synchronize(stream_);
}

Status StagedTransport::allreduce(Buffer data, DataType type, ReduceOp op) {
  auto host = reserve(in_, data.size);
  if (!host.is_ok()) return host.status();
  auto* pinned = static_cast<uint8_t*>(host.value());
  auto* device = static_cast<uint8_t*>(data.data);
  const size_t element = std::max<size_t>(1, common::data_type_size(type));
  const size_t chunk = std::max(element, chunk_bytes_ / element * element);
  const auto part = [&](size_t at) { return std::min(chunk, data.size - at); };
  // Chunk i: wait (its copy to the host, and chunk i-1's copy back, are
  // done), start chunk i+1's copy to the host, reduce chunk i on the CPU
  // meanwhile, start its copy back. The chunks' host regions are disjoint.
  if (data.size > 0) HVD_RETURN_IF_ERROR(copy_async(pinned, device, part(0)));
  for (size_t at = 0; at < data.size; at += chunk) {
    const size_t n = part(at);
    HVD_RETURN_IF_ERROR(work_->synchronize(stream_));
    if (at + n < data.size) {
      HVD_RETURN_IF_ERROR(copy_async(pinned + at + n, device + at + n, part(at + n)));
    }
    HVD_RETURN_IF_ERROR(cpu_->allreduce({pinned + at, n}, type, op));
    HVD_RETURN_IF_ERROR(copy_async(device + at, pinned + at, n));
  }
  return work_->synchronize(stream_);
}

Status StagedTransport::broadcast(Buffer data, int root) {
  auto host = reserve(in_, data.size);
  if (!host.is_ok()) return host.status();
  if (cpu_->rank() == root) HVD_RETURN_IF_ERROR(copy_and_wait(host.value(), data.data, data.size));
  HVD_RETURN_IF_ERROR(cpu_->broadcast({host.value(), data.size}, root));
  if (cpu_->rank() == root) return Status::ok();  // its device data is the result already
  return copy_and_wait(data.data, host.value(), data.size);
}

Status StagedTransport::allgatherv(ConstBuffer in, Buffer out, std::span<const int64_t> counts) {
  auto host_in = reserve(in_, in.size);
  if (!host_in.is_ok()) return host_in.status();
  auto host_out = reserve(out_, out.size);
  if (!host_out.is_ok()) return host_out.status();
  if (in.data != nullptr) HVD_RETURN_IF_ERROR(copy_and_wait(host_in.value(), in.data, in.size));
  HVD_RETURN_IF_ERROR(
      cpu_->allgatherv({in.data != nullptr ? host_in.value() : nullptr, in.size},
                       {host_out.value(), out.size}, counts));
  return copy_and_wait(out.data, host_out.value(), out.size);
}

Status StagedTransport::alltoallv(ConstBuffer in, std::span<const int64_t> send_counts,
                                  Buffer out, std::span<const int64_t> recv_counts) {
  auto host_in = reserve(in_, in.size);
  if (!host_in.is_ok()) return host_in.status();
  auto host_out = reserve(out_, out.size);
  if (!host_out.is_ok()) return host_out.status();
  HVD_RETURN_IF_ERROR(copy_and_wait(host_in.value(), in.data, in.size));
  HVD_RETURN_IF_ERROR(cpu_->alltoallv({host_in.value(), in.size}, send_counts,
                                      {host_out.value(), out.size}, recv_counts));
  return copy_and_wait(out.data, host_out.value(), out.size);
}

Status StagedTransport::reducescatter(ConstBuffer in, Buffer out,
                                      std::span<const int64_t> recv_counts, DataType type,
                                      ReduceOp op) {
  auto host_in = reserve(in_, in.size);
  if (!host_in.is_ok()) return host_in.status();
  auto host_out = reserve(out_, out.size);
  if (!host_out.is_ok()) return host_out.status();
  HVD_RETURN_IF_ERROR(copy_and_wait(host_in.value(), in.data, in.size));
  HVD_RETURN_IF_ERROR(cpu_->reducescatter({host_in.value(), in.size}, {host_out.value(), out.size},
                                          recv_counts, type, op));
  return copy_and_wait(out.data, host_out.value(), out.size);
}

}  // namespace hvd::transports::staging
