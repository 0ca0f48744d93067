#include "transports/hierarchical/hierarchical_transport.h"

#include <string>

#include "transports/argument_checks.h"

namespace hvd::transports::hierarchical {

HierarchicalTransport::HierarchicalTransport(std::unique_ptr<Transport> local,
                                             std::unique_ptr<Transport> cross,
                                             std::unique_ptr<Transport> flat)
    : local_(std::move(local)), cross_(std::move(cross)), flat_(std::move(flat)) {}

std::string_view HierarchicalTransport::name() const { return "hierarchical"; }

Status HierarchicalTransport::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

Status HierarchicalTransport::checked(const char* op, Status s) {
  // Bad arguments do not fail the transport.
  if (s.is_ok() || s.code() == common::StatusCode::kInvalidArgument) return s;
  std::lock_guard<std::mutex> lock(mutex_);
  if (failure_.is_ok()) {
    failure_ = Status(s.code(), "hierarchical " + std::string(op) + " failed on rank " +
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
  const size_t element = common::data_type_size(type);
  // Slices by whole elements, as even as they come; local rank i owns slice i.
  const int64_t parts = local_->size();
  const int64_t elements = static_cast<int64_t>(data.size / element);
  std::vector<int64_t> counts(static_cast<size_t>(parts));
  for (int64_t i = 0; i < parts; ++i) {
    counts[static_cast<size_t>(i)] =
        (elements / parts + (i < elements % parts ? 1 : 0)) * static_cast<int64_t>(element);
  }
  const size_t mine = static_cast<size_t>(counts[static_cast<size_t>(local_->rank())]);
  slice_.resize(mine);
  HVD_RETURN_IF_ERROR(checked(
      "allreduce (reduce-scatter on the host)",
      local_->reducescatter({data.data, data.size}, {slice_.data(), mine}, counts, type, op)));
  if (cross_->size() > 1 && mine > 0) {
    HVD_RETURN_IF_ERROR(checked("allreduce (across the hosts)",
                                cross_->allreduce({slice_.data(), mine}, type, op)));
  }
  return checked("allreduce (allgather on the host)",
                 local_->allgatherv({slice_.data(), mine}, data, counts));
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
    std::string message = "the hierarchical transport on rank " + std::to_string(flat_->rank()) +
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
