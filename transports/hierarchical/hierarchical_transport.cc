#include "transports/hierarchical/hierarchical_transport.h"

#include <algorithm>
#include <string>

#include "transports/hierarchical/slices.h"

namespace hvd::transports::hierarchical {

HierarchicalTransport::HierarchicalTransport(std::unique_ptr<Transport> local,
                                             std::unique_ptr<Transport> cross,
                                             std::unique_ptr<Transport> flat,
                                             std::shared_ptr<DeviceWork> device, std::string name)
    : local_(std::move(local)), cross_(std::move(cross)), flat_(std::move(flat)),
      device_(std::move(device)), name_(std::move(name)) {}

HierarchicalTransport::~HierarchicalTransport() {
  if (!device_ || device_slice_ == nullptr) return;
  // Work enqueued on the stream may still use the slice (ABI version 4);
  // after a failure the engine drained the stream already.
  if (failure().is_ok()) (void)device_->synchronize(stream_);
  device_->free(device_slice_, false);
}

std::string_view HierarchicalTransport::name() const { return name_; }

void HierarchicalTransport::set_stream(void* stream) {
  stream_ = stream;
  for (Transport* part : {local_.get(), cross_.get(), flat_.get()}) {
    if (auto* streamed = dynamic_cast<StreamedTransport*>(part)) streamed->set_stream(stream);
  }
}

Status HierarchicalTransport::async_error() {
  for (Transport* part : {local_.get(), cross_.get(), flat_.get()}) {
    auto* streamed = dynamic_cast<StreamedTransport*>(part);
    if (streamed == nullptr) continue;
    if (Status error = streamed->async_error(); !error.is_ok()) return fail(std::move(error));
  }
  return failure();
}

common::Result<void*> HierarchicalTransport::slice(size_t bytes) {
  if (!device_) {
    host_slice_.resize(bytes);
    return static_cast<void*>(host_slice_.data());
  }
  if (device_slice_ != nullptr && bytes <= device_capacity_) return device_slice_;
  // A plugin of ABI version 4 returns from the last allreduce's allgather
  // once enqueued: it may still read the slice. Wait for the stream first.
  if (device_slice_ != nullptr) HVD_RETURN_IF_ERROR(device_->synchronize(stream_));
  device_->free(device_slice_, false);
  device_slice_ = nullptr;
  device_capacity_ = 0;
  auto memory = device_->alloc(std::max<size_t>(bytes, 1), false);
  if (!memory.is_ok()) return memory.status().with_context("the hierarchical allreduce's slice");
  device_slice_ = memory.value();
  device_capacity_ = std::max<size_t>(bytes, 1);
  return device_slice_;
}

Status HierarchicalTransport::check_reduction(Reduction collective, DataType type,
                                              ReduceOp op) const {
  // reducescatter leaves it to the flat world's transport.
  if (collective == Reduction::kAllreduce && op == ReduceOp::kAverage) {
    return common::invalid_argument("the hierarchical transport has no average reduction for " +
                                    std::string(common::data_type_name(type)));
  }
  return Status::ok();
}

// Every step's error as "<name> <step> failed on rank R of S: ..." (failed():
// a refusal, kInvalidArgument, as it is).
Status HierarchicalTransport::do_allreduce(Buffer data, DataType type, ReduceOp op) {
  const std::vector<int64_t> counts =
      slice_bytes(data.size, common::data_type_size(type), local_->size());
  const size_t mine = static_cast<size_t>(counts[static_cast<size_t>(local_->rank())]);
  auto part = slice(mine);
  if (!part.is_ok()) return failed("allreduce", part.status());
  void* at = part.value();
  HVD_RETURN_IF_ERROR(
      failed("allreduce (reduce-scatter on the host)",
             local_->reducescatter({data.data, data.size}, {at, mine}, counts, type, op)));
  if (cross_->size() > 1 && mine > 0) {
    HVD_RETURN_IF_ERROR(
        failed("allreduce (across the hosts)", cross_->allreduce({at, mine}, type, op)));
  }
  return failed("allreduce (allgather on the host)", local_->allgatherv({at, mine}, data, counts));
}

Status HierarchicalTransport::do_allgatherv(ConstBuffer in, Buffer out,
                                            std::span<const int64_t> counts) {
  return failed("allgather", flat_->allgatherv(in, out, counts));
}

Status HierarchicalTransport::do_broadcast(Buffer data, int root) {
  return failed("broadcast", flat_->broadcast(data, root));
}

Status HierarchicalTransport::do_alltoallv(ConstBuffer in, std::span<const int64_t> send_counts,
                                           Buffer out, std::span<const int64_t> recv_counts) {
  return failed("alltoall", flat_->alltoallv(in, send_counts, out, recv_counts));
}

Status HierarchicalTransport::do_reducescatter(ConstBuffer in, Buffer out,
                                               std::span<const int64_t> recv_counts,
                                               DataType type, ReduceOp op) {
  return failed("reducescatter", flat_->reducescatter(in, out, recv_counts, type, op));
}

Status HierarchicalTransport::do_barrier() { return failed("barrier", flat_->barrier()); }

Status HierarchicalTransport::aborted_status(const Status& reason, const Status& earlier) const {
  // "... was aborted: " and nothing for an OK reason (the base: "no reason given").
  return TransportBase::aborted_status(reason.is_ok() ? common::aborted("") : reason, earlier);
}

void HierarchicalTransport::on_abort(const Status& reason, const Status& /*aborted*/) {
  // TransportBase recorded the abort first: a call that the parts' aborts
  // unblock returns it.
  local_->abort(reason);
  cross_->abort(reason);
  flat_->abort(reason);
}

}  // namespace hvd::transports::hierarchical
