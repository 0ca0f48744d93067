#include "runtime/engine/executor.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/engine/host_data_plane.h"
#include "runtime/engine/scale.h"

namespace hvd::runtime::engine {

namespace {

using common::Status;

const char* phase_name(OpType type) {
  switch (type) {
    case OpType::kAllreduce: return "ALLREDUCE";
    case OpType::kAllgather: return "ALLGATHER";
    case OpType::kBroadcast: return "BROADCAST";
    case OpType::kAlltoall: return "ALLTOALL";
    case OpType::kReducescatter: return "REDUCESCATTER";
    case OpType::kBarrier: return "BARRIER";
    case OpType::kJoin: return "JOIN";
  }
  return "OP";
}

// Elements in one row (the product of every dimension but the first).
size_t row_elements(const Request& q) {
  size_t n = 1;
  for (size_t i = 1; i < q.shape.size(); ++i) n *= static_cast<size_t>(q.shape[i]);
  return n;
}

std::vector<int64_t> with_rows(const Request& q, int64_t rows) {
  std::vector<int64_t> shape = q.shape;
  if (shape.empty()) shape.push_back(rows);
  else shape[0] = rows;
  return shape;
}

// Memory for one op could not be had (device memory is short): that op
// fails, on this rank; the transport is untouched.
Status fail_op(Response& r, Status why) {
  r.error = std::move(why);
  return Status::ok();
}

}  // namespace

Executor::Executor(transports::Transport& transport, int rank, int size, EngineCounters& counters,
                   std::unique_ptr<DataPlane> plane, transports::StreamedTransport* streamed)
    : transport_(transport), rank_(rank), size_(size), counters_(counters),
      plane_(plane ? std::move(plane) : std::make_unique<HostDataPlane>()), streamed_(streamed) {}

Status Executor::begin_device(std::span<Response* const> batch) {
  streams_.clear();
  for (Response* r : batch) {
    const OpStream op = r->has_entry ? OpStream{r->entry.stream, r->entry.ready_event}
                                     : OpStream{};
    if (std::find(streams_.begin(), streams_.end(), op) == streams_.end()) {
      streams_.push_back(op);
    }
  }
  return plane_->begin(streams_);
}

Status Executor::op_result(Status status, std::span<Response* const> batch) {
  if (status.is_ok()) return status;
  if (status.code() != common::StatusCode::kInvalidArgument) return status;  // fatal
  for (Response* r : batch) r->error = status;
  return Status::ok();
}

Status Executor::run(std::span<Response* const> batch, Timeline* timeline,
                     const std::string& row_prefix) {
  launched_.reset();
  if (batch.empty()) return Status::ok();
  timeline_ = timeline;
  prefix_ = &row_prefix;
  const OpType type = batch.front()->op().op_type;
  if (!plane_->on_device()) return dispatch(batch, type);
  // Device ops: ordered on the device's stream, complete only once done
  // there (launched_: the batch's completion event; without events, end()
  // waited). A device that cannot even start the batch (waiting for another
  // stream failed) is fatal like a transport failure: the peers would wait
  // for this rank's collective. So is a failure midway, after which part of
  // the batch may still run on the device: its ops then complete only once
  // the stream drained, so launched_ is recorded all the same (best effort).
  // A failed (bounded) wait at the end fails the batch.
  Status s = begin_device(batch);
  if (s.is_ok()) s = dispatch(batch, type);
  auto ended = plane_->end();
  if (ended.is_ok()) launched_ = std::move(ended).value();
  if (!s.is_ok()) return s;
  if (!ended.is_ok()) {
    for (Response* r : batch) {
      if (r->error.is_ok()) r->error = ended.status();
    }
    return Status::ok();
  }
  for (Response* r : batch) {
    if (r->output.device) r->output.device->launched(launched_);
  }
  return Status::ok();
}

Status Executor::dispatch(std::span<Response* const> batch, OpType type) {
  const char* phase = phase_name(type);
  auto record = [&](const char* what, bool begin) {
    if (timeline_ == nullptr) return;
    for (Response* r : batch) {
      const std::string& name = r->op().name;
      std::string row = prefix_->empty() ? std::string() : *prefix_ + name;
      std::string_view tensor = prefix_->empty() ? std::string_view(name) : std::string_view(row);
      if (begin) timeline_->begin(tensor, what);
      else timeline_->end(tensor, what);
    }
  };
  if (type == OpType::kAllreduce) return allreduce(batch);
  record(phase, true);
  Status s;
  switch (type) {
    case OpType::kAllgather: s = allgather(*batch.front()); break;
    case OpType::kBroadcast: s = broadcast(*batch.front()); break;
    case OpType::kAlltoall: s = alltoall(*batch.front()); break;
    case OpType::kReducescatter: s = reducescatter(*batch.front()); break;
    case OpType::kBarrier:  // the negotiation was the barrier: every rank had entered it
    case OpType::kJoin:
    case OpType::kAllreduce: break;
  }
  record(phase, false);
  return s;
}

Status Executor::allreduce(std::span<Response* const> batch) {
  const Request& first = batch.front()->op();
  const DataType type = first.dtype;
  const ReduceOp op = first.reduce_op;
  const ReduceOp wire = op == ReduceOp::kAverage ? ReduceOp::kSum : op;
  const ReductionEnd end = reduction_end(type, op == ReduceOp::kAverage, size_,
                                         first.prescale_factor, first.postscale_factor);
  const size_t element = common::data_type_size(type);
  auto phase = [&](const char* what, bool begin) {
    if (timeline_ == nullptr) return;
    for (Response* r : batch) {
      std::string row = *prefix_ + r->op().name;
      if (begin) timeline_->begin(row, what);
      else timeline_->end(row, what);
    }
  };
  counters_.bump(counters_.data_calls);

  if (batch.size() == 1 && batch.front()->has_entry) {
    // In place in the op's output: no fusion buffer, no extra copy.
    Response& r = *batch.front();
    Entry& e = r.entry;
    auto count = static_cast<size_t>(e.request.num_elements());
    if (Status s = plane_->scale(e.output, e.input, count, type, first.prescale_factor);
        !s.is_ok()) {
      r.error = s;
      return Status::ok();
    }
    phase("ALLREDUCE", true);
    Status s = transport_.allreduce({e.output, count * element}, type, wire);
    phase("ALLREDUCE", false);
    HVD_RETURN_IF_ERROR(op_result(s, batch));
    if (!r.error.is_ok()) return Status::ok();
    r.error = plane_->finish(e.output, count, type, end.divisor, end.factor);
    return Status::ok();
  }

  parts_.clear();
  for (Response* r : batch) {
    FusionPart part;
    part.count = static_cast<size_t>(r->op().num_elements());
    if (r->has_entry) {
      part.input = r->entry.input;
      part.output = r->entry.output;
    }
    parts_.push_back(part);
  }
  phase("MEMCPY_IN_FUSION_BUFFER", true);
  auto packed = plane_->pack(parts_, type, op, first.prescale_factor);
  phase("MEMCPY_IN_FUSION_BUFFER", false);
  if (!packed.is_ok()) {
    for (Response* r : batch) r->error = packed.status();
    return Status::ok();
  }
  if (batch.size() > 1) {
    counters_.bump(counters_.fused_batches);
    counters_.bump(counters_.fused_tensors, static_cast<int64_t>(batch.size()));
  }
  phase("ALLREDUCE", true);
  Status s = transport_.allreduce({plane_->fusion(), packed.value()}, type, wire);
  phase("ALLREDUCE", false);
  HVD_RETURN_IF_ERROR(op_result(s, batch));
  if (!batch.front()->error.is_ok()) return Status::ok();
  phase("MEMCPY_OUT_FUSION_BUFFER", true);
  Status out = plane_->unpack(parts_, type, end.divisor, end.factor);
  phase("MEMCPY_OUT_FUSION_BUFFER", false);
  if (!out.is_ok()) {
    for (Response* r : batch) r->error = out;
  }
  return Status::ok();
}

Status Executor::allgather(Response& r) {
  const Request& q = r.op();
  const size_t row_bytes = row_elements(q) * common::data_type_size(q.dtype);
  std::vector<int64_t> counts(static_cast<size_t>(size_));
  int64_t total_rows = 0;
  for (int k = 0; k < size_; ++k) {
    counts[static_cast<size_t>(k)] = r.rows[static_cast<size_t>(k)] * static_cast<int64_t>(row_bytes);
    total_rows += r.rows[static_cast<size_t>(k)];
  }
  const size_t out_bytes = static_cast<size_t>(total_rows) * row_bytes;
  uint8_t* out = nullptr;
  Response* batch[] = {&r};
  if (r.has_entry) {
    auto made = plane_->allocate(out_bytes, with_rows(q, total_rows));
    if (!made.is_ok()) return fail_op(r, made.status());
    r.output = std::move(made).value();
    out = r.output.memory();
  } else {
    auto reserved = plane_->reserve(out_bytes);
    if (!reserved.is_ok()) return fail_op(r, reserved.status());
    out = reserved.value();
  }
  const size_t in_bytes = static_cast<size_t>(r.rows[static_cast<size_t>(rank_)]) * row_bytes;
  counters_.bump(counters_.data_calls);
  return op_result(
      transport_.allgatherv({r.has_entry ? r.entry.input : nullptr, in_bytes}, {out, out_bytes}, counts),
      batch);
}

Status Executor::broadcast(Response& r) {
  const Request& q = r.op();
  const auto bytes = static_cast<size_t>(q.byte_size());
  void* data = nullptr;
  Response* batch[] = {&r};
  if (r.has_entry) {
    data = r.entry.output;
    if (q.root_rank == rank_) {
      HVD_RETURN_IF_ERROR(op_result(plane_->copy(data, r.entry.input, bytes), batch));
    }
  } else {
    auto reserved = plane_->reserve(bytes);
    if (!reserved.is_ok()) return fail_op(r, reserved.status());
    data = reserved.value();
  }
  counters_.bump(counters_.data_calls);
  return op_result(transport_.broadcast({data, bytes}, q.root_rank), batch);
}

Status Executor::alltoall(Response& r) {
  const Request& q = r.op();  // has_entry: joined ranks fail alltoall at negotiation
  const size_t row_bytes = row_elements(q) * common::data_type_size(q.dtype);
  const auto n = static_cast<size_t>(size_);
  std::vector<int64_t> send(n);
  std::vector<int64_t> recv(n);
  int64_t recv_rows = 0;
  for (size_t k = 0; k < n; ++k) {
    int64_t rows = q.splits.empty() ? q.shape[0] / size_ : q.splits[k];
    send[k] = rows * static_cast<int64_t>(row_bytes);
    recv[k] = r.rows[k] * static_cast<int64_t>(row_bytes);
    recv_rows += r.rows[k];
  }
  const size_t out_bytes = static_cast<size_t>(recv_rows) * row_bytes;
  Response* batch[] = {&r};
  auto made = plane_->allocate(out_bytes, with_rows(q, recv_rows));
  if (!made.is_ok()) return fail_op(r, made.status());
  r.output = std::move(made).value();
  r.output.received_splits = r.rows;
  counters_.bump(counters_.data_calls);
  return op_result(transport_.alltoallv({r.entry.input, static_cast<size_t>(q.shape[0]) * row_bytes},
                                        send, {r.output.memory(), out_bytes}, recv),
                   batch);
}

Status Executor::reducescatter(Response& r) {
  const Request& q = r.op();
  const DataType type = q.dtype;
  const size_t element = common::data_type_size(type);
  const size_t row_elems = row_elements(q);
  const int64_t rows = q.shape.empty() ? 0 : q.shape[0];
  std::vector<int64_t> recv(static_cast<size_t>(size_));
  for (int k = 0; k < size_; ++k) {
    int64_t mine = rows / size_ + (k < rows % size_ ? 1 : 0);
    recv[static_cast<size_t>(k)] = mine * static_cast<int64_t>(row_elems * element);
  }
  const auto in_count = static_cast<size_t>(q.num_elements());
  const int64_t my_rows = rows / size_ + (rank_ < rows % size_ ? 1 : 0);
  const size_t out_count = static_cast<size_t>(my_rows) * row_elems;
  Response* batch[] = {&r};

  const void* in = r.has_entry ? r.entry.input : nullptr;
  if (in == nullptr || q.prescale_factor != 1.0) {
    FusionPart part{in, nullptr, in_count};
    auto packed = plane_->pack(std::span<const FusionPart>(&part, 1), type, q.reduce_op,
                               q.prescale_factor);
    if (!packed.is_ok()) {
      r.error = packed.status();
      return Status::ok();
    }
    in = plane_->fusion();
  }
  // A rank that joined gets its part in an output nobody reads.
  auto made = plane_->allocate(out_count * element, with_rows(q, my_rows));
  if (!made.is_ok()) return fail_op(r, made.status());
  OpOutput output = std::move(made).value();
  void* out = output.memory();
  if (r.has_entry) r.output = std::move(output);
  const ReduceOp wire = q.reduce_op == ReduceOp::kAverage ? ReduceOp::kSum : q.reduce_op;
  counters_.bump(counters_.data_calls);
  HVD_RETURN_IF_ERROR(op_result(
      transport_.reducescatter({in, in_count * element}, {out, out_count * element}, recv, type, wire),
      batch));
  if (!r.error.is_ok()) return Status::ok();
  const ReductionEnd end = reduction_end(type, q.reduce_op == ReduceOp::kAverage, size_,
                                         q.prescale_factor, q.postscale_factor);
  r.error = plane_->finish(out, out_count, type, end.divisor, end.factor);
  return Status::ok();
}

}  // namespace hvd::runtime::engine
