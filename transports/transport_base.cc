#include "transports/transport_base.h"

#include <utility>

#include "transports/argument_checks.h"

namespace hvd::transports {

using common::StatusCode;

std::string where(int rank, int size) {
  return "rank " + std::to_string(rank) + " of " + std::to_string(size);
}

template <typename Body>
Status TransportBase::run(Body&& body) {
  HVD_RETURN_IF_ERROR(failure());
  Status outcome = body();
  if (outcome.is_ok() || outcome.code() == StatusCode::kInvalidArgument) return outcome;
  return fail(std::move(outcome));
}

Status TransportBase::allreduce(Buffer data, DataType type, ReduceOp op) {
  HVD_RETURN_IF_ERROR(check_allreduce(data, type));
  HVD_RETURN_IF_ERROR(check_reduction(Reduction::kAllreduce, type, op));
  return run([&] { return do_allreduce(data, type, op); });
}

Status TransportBase::allgatherv(ConstBuffer in, Buffer out, std::span<const int64_t> counts) {
  HVD_RETURN_IF_ERROR(check_allgatherv(in, out, counts, rank(), size()));
  return run([&] { return do_allgatherv(in, out, counts); });
}

Status TransportBase::broadcast(Buffer data, int root) {
  HVD_RETURN_IF_ERROR(check_broadcast(data, root, size()));
  return run([&] { return do_broadcast(data, root); });
}

Status TransportBase::alltoallv(ConstBuffer in, std::span<const int64_t> send_counts, Buffer out,
                                std::span<const int64_t> recv_counts) {
  HVD_RETURN_IF_ERROR(check_alltoallv(in, send_counts, out, recv_counts, rank(), size()));
  return run([&] { return do_alltoallv(in, send_counts, out, recv_counts); });
}

Status TransportBase::reducescatter(ConstBuffer in, Buffer out,
                                    std::span<const int64_t> recv_counts, DataType type,
                                    ReduceOp op) {
  HVD_RETURN_IF_ERROR(check_reducescatter(in, out, recv_counts, type, rank(), size()));
  HVD_RETURN_IF_ERROR(check_reduction(Reduction::kReducescatter, type, op));
  return run([&] { return do_reducescatter(in, out, recv_counts, type, op); });
}

Status TransportBase::barrier() {
  return run([&] { return do_barrier(); });
}

void TransportBase::abort(Status reason) {
  Status aborted;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_) return;  // the first reason wins
    aborted_ = true;
    failure_ = aborted_status(reason, failure_);
    aborted = failure_;
  }
  on_abort(reason, aborted);
}

Status TransportBase::check_reduction(Reduction /*collective*/, DataType /*type*/,
                                      ReduceOp /*op*/) const {
  return Status::ok();
}

Status TransportBase::aborted_status(const Status& reason, const Status& earlier) const {
  std::string message = "the " + std::string(name()) + " transport on " + where(rank(), size()) +
                        " was aborted: " +
                        (reason.is_ok() ? std::string("no reason given") : reason.message());
  if (!earlier.is_ok()) message += " (it had already failed: " + earlier.message() + ")";
  return Status(reason.is_ok() ? StatusCode::kAborted : reason.code(), message);
}

void TransportBase::on_failure(const Status& /*error*/) {}

Status TransportBase::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

Status TransportBase::fail(Status error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // After an abort, whatever it made the call fail with is the abort.
    if (!failure_.is_ok()) return failure_;
    failure_ = error;
  }
  on_failure(error);
  return error;
}

Status TransportBase::failed(std::string_view op, const Status& error) const {
  if (error.is_ok() || error.code() == StatusCode::kInvalidArgument) return error;
  return Status(error.code(), std::string(name()) + " " + std::string(op) + " failed on " +
                                  where(rank(), size()) + ": " + error.message());
}

}  // namespace hvd::transports
