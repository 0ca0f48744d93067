// HVD_GPU_TRANSPORT=gloo: device (CUDA) tensors over a CPU transport, staged
// through pinned host memory. Each op copies its device input to pinned
// host memory (DeviceWork::copy on the op's stream), waits for that copy,
// runs the CPU collective on the host copy, copies the result back to the
// device and waits again, so an op returns with its result in device memory
// (like every Transport op). The device work comes from a CUDA plugin's
// device functions (the gpu_staging_plugin setting, default nccl's), which
// need no communicator: several ranks may share one GPU, which NCCL refuses.
//
// An allreduce goes in chunks of `chunk_bytes` (gpu_staging_chunk; whole
// elements; the same on every rank): while the CPU reduces one chunk, the
// next one is copied to the host; each reduced chunk is copied back at once.
//
// The pinned buffers (one for inputs, one for outputs) grow to the largest
// op and are freed with the transport. Engine thread only, like every
// Transport; abort() reaches the CPU transport from any thread.
#pragma once

#include <memory>
#include <string>

#include "transports/device_work.h"
#include "transports/transport.h"

namespace hvd::transports::staging {

class StagedTransport final : public Transport, public StreamedTransport {
 public:
  static constexpr size_t kDefaultChunk = size_t{4} << 20;

  StagedTransport(std::unique_ptr<Transport> cpu, std::shared_ptr<DeviceWork> work,
                  size_t chunk_bytes = kDefaultChunk);
  ~StagedTransport() override;
  StagedTransport(const StagedTransport&) = delete;
  StagedTransport& operator=(const StagedTransport&) = delete;

  std::string_view name() const override { return name_; }
  int rank() const override { return cpu_->rank(); }
  int size() const override { return cpu_->size(); }

  Status allreduce(Buffer data, DataType type, ReduceOp op) override;
  Status allgatherv(ConstBuffer in, Buffer out, std::span<const int64_t> counts) override;
  Status broadcast(Buffer data, int root) override;
  Status alltoallv(ConstBuffer in, std::span<const int64_t> send_counts, Buffer out,
                   std::span<const int64_t> recv_counts) override;
  Status reducescatter(ConstBuffer in, Buffer out, std::span<const int64_t> recv_counts,
                       DataType type, ReduceOp op) override;
  Status barrier() override { return cpu_->barrier(); }
  void abort(Status reason) override { cpu_->abort(std::move(reason)); }
  void set_stream(void* stream) override { stream_ = stream; }
  // The CPU transport's, when it has asynchronous errors (a CPU transport
  // fails in its calls: OK).
  Status async_error() override {
    auto* streamed = dynamic_cast<StreamedTransport*>(cpu_.get());
    return streamed != nullptr ? streamed->async_error() : Status::ok();
  }

 private:
  struct Pinned {
    void* data = nullptr;
    size_t capacity = 0;
  };
  // At least `bytes` of pinned host memory in `buffer`.
  common::Result<void*> reserve(Pinned& buffer, size_t bytes);
  // Copies `bytes` (device to pinned host, or back) on the op's stream and
  // waits: the host may read the copy, or the result is on the device.
  Status copy_and_wait(void* dst, const void* src, size_t bytes);
  // Enqueues the copy on the op's stream only.
  Status copy_async(void* dst, const void* src, size_t bytes);

  std::unique_ptr<Transport> cpu_;
  std::shared_ptr<DeviceWork> work_;
  std::string name_;
  size_t chunk_bytes_;
  void* stream_ = nullptr;
  Pinned in_;
  Pinned out_;
};

}  // namespace hvd::transports::staging
