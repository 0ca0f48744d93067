#include "runtime/op_request.h"

#include <cmath>
#include <limits>
#include <string>

#include "runtime/arguments.h"
#include "runtime/engine/scale.h"

namespace hvd::runtime {

namespace {

using common::DataType;
using common::ReduceOp;
using common::invalid_argument;
using common::Status;
using engine::OpType;

// Keeps every byte count and their sums far from int64 overflow.
constexpr int64_t kMaxElements = std::numeric_limits<int64_t>::max() / 64;
constexpr int32_t kMaxDims = 64;

std::string set_description(const engine::ProcessSet& set) {
  return set.id == 0 ? "a world of size " + std::to_string(set.size())
                     : "process set " + std::to_string(set.id) + " of size " +
                           std::to_string(set.size());
}

// 0 means 1; NaN and infinities are refused.
common::Result<double> factor(double value, const char* what, const std::string& call) {
  if (value == 0.0) return 1.0;
  if (!std::isfinite(value)) {
    return invalid_argument(call + ": " + what + " " + std::to_string(value) + " is not finite");
  }
  return value;
}

Status check_shape(const hvd_op& op, engine::Request& q, const std::string& call) {
  if (op.ndim < 0 || op.ndim > kMaxDims) {
    return invalid_argument(call + ": ndim " + std::to_string(op.ndim) + " is not in [0, " +
                            std::to_string(kMaxDims) + "]");
  }
  if (op.ndim > 0 && op.shape == nullptr) {
    return invalid_argument(call + ": shape is null but ndim is " + std::to_string(op.ndim));
  }
  q.shape.assign(op.shape, op.shape + op.ndim);
  int64_t elements = 1;
  for (size_t i = 0; i < q.shape.size(); ++i) {
    int64_t d = q.shape[i];
    if (d < 0) {
      return invalid_argument(call + ": dimension " + std::to_string(i) + " of the shape is " +
                              std::to_string(d) + " (negative)");
    }
    if (d > 0 && elements > kMaxElements / d) {
      return invalid_argument(call + ": the shape holds too many elements");
    }
    elements *= d;
  }
  bool gathers = q.op_type == OpType::kAllgather || q.op_type == OpType::kAlltoall ||
                 q.op_type == OpType::kReducescatter;
  if (gathers && q.shape.empty()) {
    return invalid_argument(call + ": needs a tensor of at least one dimension (rows)");
  }
  return Status::ok();
}

Status check_buffers(const hvd_op& op, engine::Entry& e, const std::string& call) {
  const engine::Request& q = e.request;
  const int64_t bytes = q.byte_size();
  e.input = op.input;
  e.output = op.output;
  if (q.op_type == OpType::kAllreduce || q.op_type == OpType::kBroadcast) {
    if (e.output == nullptr && bytes > 0) {
      return invalid_argument(call + ": output is null but the tensor has " +
                              std::to_string(q.num_elements()) + " elements");
    }
    if (e.input == nullptr) e.input = e.output;  // in place
    return Status::ok();
  }
  if (e.input == nullptr && bytes > 0) {
    return invalid_argument(call + ": input is null but the tensor has " +
                            std::to_string(q.num_elements()) + " elements");
  }
  if (e.output != nullptr) {
    return invalid_argument(call + ": output must be null (the engine allocates the result; "
                                   "read it with hvd_handle_copy_output)");
  }
  return Status::ok();
}

Status check_reduction(const hvd_op& op, engine::Request& q, const std::string& call) {
  auto pre = factor(op.prescale_factor, "prescale_factor", call);
  if (!pre.is_ok()) return pre.status();
  auto post = factor(op.postscale_factor, "postscale_factor", call);
  if (!post.is_ok()) return post.status();
  bool reduces = q.op_type == OpType::kAllreduce || q.op_type == OpType::kReducescatter;
  if (!reduces) {
    if (pre.value() != 1.0 || post.value() != 1.0) {
      return invalid_argument(call + ": scale factors apply to allreduce and reducescatter only");
    }
    return Status::ok();
  }
  auto reduce = to_reduce_op(op.reduce_op, call.c_str());
  if (!reduce.is_ok()) return reduce.status();
  q.reduce_op = reduce.value();
  q.prescale_factor = pre.value();
  q.postscale_factor = post.value();
  if (q.dtype == DataType::kBool && q.reduce_op == ReduceOp::kAverage) {
    return invalid_argument(call + ": average is not defined for bool");
  }
  // Every other type scales as Horovod does (runtime/engine/scale.h: integers in
  // float64, truncated); bool has no arithmetic.
  if (!can_scale(q.dtype) && (q.prescale_factor != 1.0 || q.postscale_factor != 1.0)) {
    return invalid_argument(call + ": scale factors other than 1 do not apply to " +
                            std::string(common::data_type_name(q.dtype)));
  }
  return Status::ok();
}

Status check_splits(const hvd_op& op, engine::Request& q, const engine::ProcessSet& set,
                    const std::string& call) {
  const int n = set.size();
  const int64_t rows = q.shape[0];
  if (op.splits == nullptr) {
    if (rows % n != 0) {
      return invalid_argument(call + ": " + std::to_string(rows) +
                              " rows cannot be split evenly among " + std::to_string(n) +
                              " ranks; pass splits");
    }
    return Status::ok();
  }
  q.splits.assign(op.splits, op.splits + n);
  int64_t total = 0;
  for (int r = 0; r < n; ++r) {
    int64_t s = q.splits[static_cast<size_t>(r)];
    if (s < 0) {
      return invalid_argument(call + ": splits[" + std::to_string(r) + "] is " +
                              std::to_string(s) + " (negative)");
    }
    total += s;
    if (total > rows) break;
  }
  if (total != rows) {
    return invalid_argument(call + ": splits add up to " + std::to_string(total) +
                            " rows but the tensor has " + std::to_string(rows));
  }
  return Status::ok();
}

}  // namespace

hvd_op blank_op(int32_t type) {
  return hvd_op_defaults(type);
}

common::Result<engine::Entry> make_entry(const hvd_op& op, const engine::ProcessSet& set) {
  if (op.op_type < 0 || op.op_type > static_cast<int32_t>(OpType::kJoin)) {
    return invalid_argument("hvd_enqueue: " + std::to_string(op.op_type) +
                            " is not an op type (0.." +
                            std::to_string(static_cast<int32_t>(OpType::kJoin)) + ")");
  }
  engine::Entry e;
  engine::Request& q = e.request;
  q.op_type = static_cast<OpType>(op.op_type);
  q.process_set_id = set.id;
  q.rank = set.rank;
  const std::string call(engine::op_type_name(q.op_type));
  if (op.name != nullptr) q.name = op.name;
  if (q.op_type == OpType::kJoin || q.op_type == OpType::kBarrier) {
    if (q.op_type == OpType::kJoin) q.name.clear();
    return e;  // nothing else to agree on
  }

  auto type = to_data_type(op.dtype, call.c_str());
  if (!type.is_ok()) return type.status();
  q.dtype = type.value();
  if (op.device != HVD_DEVICE_CPU && op.device < 0) {
    return invalid_argument(call + ": device " + std::to_string(op.device) +
                            " is neither HVD_DEVICE_CPU nor a CUDA device ordinal");
  }
  if (op.device == HVD_DEVICE_CPU && op.stream != nullptr) {
    return invalid_argument(call + ": a stream is given but the op is on the CPU "
                                   "(device HVD_DEVICE_CPU); streams are for CUDA tensors");
  }
  if (op.device == HVD_DEVICE_CPU && op.ready_event != nullptr) {
    return invalid_argument(call + ": a ready_event is given but the op is on the CPU "
                                   "(device HVD_DEVICE_CPU); events are for CUDA tensors");
  }
  // A device op runs on the set's GPU transport (created at the first one;
  // its errors, e.g. no such transport here, complete the op).
  q.device = op.device;
  e.stream = op.stream;
  e.ready_event = op.ready_event;
  HVD_RETURN_IF_ERROR(check_shape(op, q, call));
  HVD_RETURN_IF_ERROR(check_reduction(op, q, call));
  HVD_RETURN_IF_ERROR(check_buffers(op, e, call));
  if (q.op_type == OpType::kBroadcast) {
    if (op.root_rank < 0 || op.root_rank >= set.size()) {
      return invalid_argument(call + ": root " + std::to_string(op.root_rank) +
                              " is out of range for " + set_description(set));
    }
    q.root_rank = op.root_rank;
  }
  if (q.op_type == OpType::kAlltoall) HVD_RETURN_IF_ERROR(check_splits(op, q, set, call));
  return e;
}

}  // namespace hvd::runtime
