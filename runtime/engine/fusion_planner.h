// Fusion planning: which ready tensors travel together in one transport call.
// Pure logic, deterministic: every rank plans the same batches from the same
// ordered list of ready tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/engine/request.h"

namespace hvd::runtime::engine {

// One ready tensor as the planner sees it.
struct FusionItem {
  OpType op_type = OpType::kAllreduce;
  DataType dtype = DataType::kFloat32;
  ReduceOp reduce_op = ReduceOp::kSum;
  int32_t device = -1;
  int32_t process_set_id = 0;
  double prescale_factor = 1.0;
  double postscale_factor = 1.0;
  int64_t bytes = 0;
};

// Only allreduce is fused (other ops run one tensor per call). Items fuse when
// op type, dtype, reduce op, device, process set and both scale factors are
// equal. Greedy in order with look-ahead: each batch starts at the first
// unplanned item and takes every later compatible unplanned item while the
// batch stays within `threshold_bytes`. An item larger than the threshold is
// a batch of its own; threshold 0 disables fusion (each item alone). So is a
// CPU item of at least `alone_bytes` (> 0; 0: no such rule): on a transport
// whose per-call cost is below copying it into and out of the fusion buffer,
// it runs in place (Transport::unfused_from_bytes). (Grouped ops need
// nothing here: a group becomes ready as a whole, in one cycle.)
// Returns batches of indices into `items`, in execution order; every index
// appears exactly once, and indices inside a batch ascend.
std::vector<std::vector<size_t>> plan_fusion(std::span<const FusionItem> items,
                                             int64_t threshold_bytes, int64_t alone_bytes = 0);

}  // namespace hvd::runtime::engine
