#include "transports/hierarchical/hierarchical_transport.h"

#include <algorithm>
#include <string>

#include "transports/argument_checks.h"
#include "transports/hierarchical/slices.h"

namespace hvd::transports::hierarchical {

HierarchicalTransport::HierarchicalTransport(std::unique_ptr<Transport> local,
                                             std::unique_ptr<Transport> cross,
                                             std::unique_ptr<Transport> flat,
                                             std::shared_ptr<DeviceWork> device, std::string name)
    : local_(std::move(local)), cross_(std::move(cross)), flat_(std::move(flat)),
      device_(std::move(device)), name_(std::move(name)) {}

HierarchicalTransport::~HierarchicalTransport() {
  if (device_) device_->free(device_slice_, false);
}

std::string_view HierarchicalTransport::name() const { return name_; }

void HierarchicalTransport::set_stream(void* stream) {
  for (Transport* part : {local_.get(), cross_.get(), flat_.get()}) {
    if (auto* streamed = dynamic_cast<StreamedTransport*>(part)) streamed->set_stream(stream);
  }
}

common::Result<void*> HierarchicalTransport::slice(size_t bytes) {
  if (!device_) {
    host_slice_.resize(bytes);
    return static_cast<void*>(host_slice_.data());
  }
  if (device_slice_ != nullptr && bytes <= device_capacity_) return device_slice_;
  // Nothing in flight: every op returns with its result in place.
  device_->free(device_slice_, false);
  device_slice_ = nullptr;
  device_capacity_ = 0;
  auto memory = device_->alloc(std::max<size_t>(bytes, 1), false);
  if (!memory.is_ok()) return memory.status().with_context("the hierarchical allreduce's slice");
  device_slice_ = memory.value();
  device_capacity_ = std::max<size_t>(bytes, 1);
  return device_slice_;
}

Status HierarchicalTransport::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

Status HierarchicalTransport::checked(const char* op, Status s) {
  // Bad arguments do not fail the transport.
  if (s.is_ok() || s.code() == common::StatusCode::kInvalidArgument) return s;
  std::lock_guard<std::mutex> lock(mutex_);
  if (failure_.is_ok()) {
    failure_ = Status(s.code(), name_ + " " + std::string(op) + " failed on rank " +
                                    std::to_string(flat_->rank()) + " of " +
                                    std::to_string(flat_->size()) + ": " + s.message());
  }
  return failure_;
}

Status HierarchicalTransport::allreduce(Buffer data, DataType type, ReduceOp op) {
  HVD_RETURN_IF_ERROR(check_allreduce(data, type));
  if (op == ReduceOp::kAverage) {  // the engine divides (transport.h)
    return common::invalid_argument("the hierarchical transport has no average reduction for " +
                                    std::string(common::data_type_name(type)));
  }
  HVD_RETURN_IF_ERROR(failure());
  const std::vector<int64_t> counts =
      slice_bytes(data.size, common::data_type_size(type), local_->size());
  const size_t mine = static_cast<size_t>(counts[static_cast<size_t>(local_->rank())]);
  auto part = slice(mine);
  if (!part.is_ok()) return checked("allreduce", part.status());
  void* at = part.value();
  HVD_RETURN_IF_ERROR(
      checked("allreduce (reduce-scatter on the host)",
              local_->reducescatter({data.data, data.size}, {at, mine}, counts, type, op)));
  if (cross_->size() > 1 && mine > 0) {
    HVD_RETURN_IF_ERROR(
        checked("allreduce (across the hosts)", cross_->allreduce({at, mine}, type, op)));
  }
  return checked("allreduce (allgather on the host)", local_->allgatherv({at, mine}, data, counts));
}

Status HierarchicalTransport::allgatherv(ConstBuffer in, Buffer out,
                                         std::span<const int64_t> counts) {
  HVD_RETURN_IF_ERROR(check_allgatherv(in, out, counts, rank(), size()));
  HVD_RETURN_IF_ERROR(failure());
  return checked("allgather", flat_->allgatherv(in, out, counts));
}

Status HierarchicalTransport::broadcast(Buffer data, int root) {
  HVD_RETURN_IF_ERROR(check_broadcast(data, root, size()));
  HVD_RETURN_IF_ERROR(failure());
  return checked("broadcast", flat_->broadcast(data, root));
}

Status HierarchicalTransport::alltoallv(ConstBuffer in, std::span<const int64_t> send_counts,
                                        Buffer out, std::span<const int64_t> recv_counts) {
  HVD_RETURN_IF_ERROR(check_alltoallv(in, send_counts, out, recv_counts, rank(), size()));
  HVD_RETURN_IF_ERROR(failure());
  return checked("alltoall", flat_->alltoallv(in, send_counts, out, recv_counts));
}

Status HierarchicalTransport::reducescatter(ConstBuffer in, Buffer out,
                                            std::span<const int64_t> recv_counts, DataType type,
                                            ReduceOp op) {
  HVD_RETURN_IF_ERROR(check_reducescatter(in, out, recv_counts, type, rank(), size()));
  HVD_RETURN_IF_ERROR(failure());
  return checked("reducescatter", flat_->reducescatter(in, out, recv_counts, type, op));
}

Status HierarchicalTransport::barrier() {
  HVD_RETURN_IF_ERROR(failure());
  return checked("barrier", flat_->barrier());
}

void HierarchicalTransport::abort(Status reason) {
  {
    // Recorded first: a call that the parts' aborts unblock returns this.
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_) return;
    aborted_ = true;
    std::string message = "the " + name_ + " transport on rank " + std::to_string(flat_->rank()) +
                          " of " + std::to_string(flat_->size()) +
                          " was aborted: " + reason.message();
    if (!failure_.is_ok()) message += " (it had already failed: " + failure_.message() + ")";
    failure_ = Status(reason.is_ok() ? common::StatusCode::kAborted : reason.code(), message);
  }
  local_->abort(reason);
  cross_->abort(reason);
  flat_->abort(reason);
}

}  // namespace hvd::transports::hierarchical
