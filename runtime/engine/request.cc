#include "runtime/engine/request.h"

namespace hvd::runtime::engine {

std::string_view op_type_name(OpType type) {
  switch (type) {
    case OpType::kAllreduce: return "allreduce";
    case OpType::kAllgather: return "allgather";
    case OpType::kBroadcast: return "broadcast";
    case OpType::kAlltoall: return "alltoall";
    case OpType::kReducescatter: return "reducescatter";
    case OpType::kBarrier: return "barrier";
    case OpType::kJoin: return "join";
  }
  return "unknown";
}

int64_t Request::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t Request::byte_size() const {
  return num_elements() * static_cast<int64_t>(common::data_type_size(dtype));
}

bool same_signature(const Request& a, const Request& b) {
  return a.name == b.name && a.op_type == b.op_type && a.dtype == b.dtype &&
         a.reduce_op == b.reduce_op && a.shape == b.shape && a.root_rank == b.root_rank &&
         a.device == b.device && a.prescale_factor == b.prescale_factor &&
         a.postscale_factor == b.postscale_factor && a.process_set_id == b.process_set_id &&
         a.group_id == b.group_id && a.group_size == b.group_size && a.splits == b.splits;
}

}  // namespace hvd::runtime::engine
