// What a rank asks the engine to do with one named tensor, as negotiated
// across ranks. Requests travel between ranks in the negotiation payload
// (see message_codec.h); every field except `rank` must agree across the
// ranks of the process set, or the op fails on every rank with a message
// naming the ranks and the field that differs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/data_type.h"

namespace hvd::runtime::engine {

using common::DataType;
using common::ReduceOp;

// Numeric values are part of the C ABI (HVD_OPTYPE_*).
enum class OpType : int32_t {
  kAllreduce = 0,
  kAllgather = 1,
  kBroadcast = 2,
  kAlltoall = 3,
  kReducescatter = 4,
  kBarrier = 5,
  kJoin = 6,
};

std::string_view op_type_name(OpType type);

// A Request's device when the tensor is in host memory (HVD_DEVICE_CPU).
inline constexpr int32_t kCpuDevice = -1;

struct Request {
  int32_t rank = 0;  // the rank that submitted it (not compared)
  std::string name;
  OpType op_type = OpType::kAllreduce;
  DataType dtype = DataType::kFloat32;
  ReduceOp reduce_op = ReduceOp::kSum;  // allreduce, reducescatter
  std::vector<int64_t> shape;
  int32_t root_rank = -1;     // broadcast
  int32_t device = kCpuDevice;  // kCpuDevice, or >= 0: a CUDA device ordinal
  double prescale_factor = 1.0;
  double postscale_factor = 1.0;
  int32_t process_set_id = 0;
  int32_t group_id = -1;      // grouped ops: same id on every member; -1 none
  int32_t group_size = 0;     // members of the group
  std::vector<int64_t> splits;  // alltoall: rows sent to each rank (empty: even)

  int64_t num_elements() const;  // product of shape (1 for a scalar)
  int64_t byte_size() const;     // num_elements * element size
};

// True when every negotiated field (all but `rank`) is equal: the response
// cache reuses a negotiation only for an identical request.
bool same_signature(const Request& a, const Request& b);

}  // namespace hvd::runtime::engine
