#include "runtime/c_api_constants.h"

#include <cstddef>

#include "common/data_type.h"
#include "common/status.h"
#include "hvd/c_api.h"
#include "runtime/engine/request.h"
#include "daemon/rendezvous/membership_watch.h"
#include "transports/plugin/transport_plugin.h"
#include "transports/registry.h"

namespace hvd::runtime {

namespace {

using common::DataType;
using common::ReduceOp;
using common::StatusCode;
using engine::OpType;

template <typename Enum>
constexpr int64_t v(Enum e) {
  return static_cast<int64_t>(e);
}

// ---- Every constant shared by C and C++ ----

static_assert(HVD_UINT8 == v(DataType::kUInt8));
static_assert(HVD_INT8 == v(DataType::kInt8));
static_assert(HVD_INT16 == v(DataType::kInt16));
static_assert(HVD_INT32 == v(DataType::kInt32));
static_assert(HVD_INT64 == v(DataType::kInt64));
static_assert(HVD_FLOAT16 == v(DataType::kFloat16));
static_assert(HVD_BFLOAT16 == v(DataType::kBFloat16));
static_assert(HVD_FLOAT32 == v(DataType::kFloat32));
static_assert(HVD_FLOAT64 == v(DataType::kFloat64));
static_assert(HVD_BOOL == v(DataType::kBool));
static_assert(HVD_BOOL + 1 == common::kDataTypeCount, "a DataType without an HVD_* constant");

static_assert(HVD_OP_SUM == v(ReduceOp::kSum));
static_assert(HVD_OP_AVERAGE == v(ReduceOp::kAverage));
static_assert(HVD_OP_MIN == v(ReduceOp::kMin));
static_assert(HVD_OP_MAX == v(ReduceOp::kMax));
static_assert(HVD_OP_PRODUCT == v(ReduceOp::kProduct));
static_assert(HVD_OP_PRODUCT + 1 == common::kReduceOpCount, "a ReduceOp without a constant");

static_assert(HVD_OK == v(StatusCode::kOk));
static_assert(HVD_ERR_INVALID_ARGUMENT == v(StatusCode::kInvalidArgument));
static_assert(HVD_ERR_NOT_FOUND == v(StatusCode::kNotFound));
static_assert(HVD_ERR_ALREADY_EXISTS == v(StatusCode::kAlreadyExists));
static_assert(HVD_ERR_TIMEOUT == v(StatusCode::kTimeout));
static_assert(HVD_ERR_UNAVAILABLE == v(StatusCode::kUnavailable));
static_assert(HVD_ERR_ABORTED == v(StatusCode::kAborted));
static_assert(HVD_ERR_UNAUTHENTICATED == v(StatusCode::kUnauthenticated));
static_assert(HVD_ERR_FAILED_PRECONDITION == v(StatusCode::kFailedPrecondition));
static_assert(HVD_ERR_CANCELLED == v(StatusCode::kCancelled));
static_assert(HVD_ERR_UNIMPLEMENTED == v(StatusCode::kUnimplemented));
static_assert(HVD_ERR_INTERNAL == v(StatusCode::kInternal));

static_assert(HVD_OPTYPE_ALLREDUCE == v(OpType::kAllreduce));
static_assert(HVD_OPTYPE_ALLGATHER == v(OpType::kAllgather));
static_assert(HVD_OPTYPE_BROADCAST == v(OpType::kBroadcast));
static_assert(HVD_OPTYPE_ALLTOALL == v(OpType::kAlltoall));
static_assert(HVD_OPTYPE_REDUCESCATTER == v(OpType::kReducescatter));
static_assert(HVD_OPTYPE_BARRIER == v(OpType::kBarrier));
static_assert(HVD_OPTYPE_JOIN == v(OpType::kJoin));

static_assert(HVD_DEVICE_CPU == engine::kCpuDevice);
static_assert(HVD_HOSTS_ADDED == MembershipWatch::kAdded);
static_assert(HVD_HOSTS_REMOVED == MembershipWatch::kRemoved);
static_assert(HVD_PLUGIN_DEVICE_CPU == v(transports::DeviceKind::kCpu));
static_assert(HVD_PLUGIN_DEVICE_CUDA == v(transports::DeviceKind::kCuda));

// ---- hvd_op's layout: struct_size first, fields only appended ----

static_assert(offsetof(hvd_op, struct_size) == 0);
static_assert(sizeof(hvd_op::struct_size) == sizeof(uint32_t));
static_assert(offsetof(hvd_op, op_type) == 4);
static_assert(offsetof(hvd_op, name) == 8);
static_assert(offsetof(hvd_op, input) == 16);
static_assert(offsetof(hvd_op, output) == 24);
static_assert(offsetof(hvd_op, shape) == 32);
static_assert(offsetof(hvd_op, ndim) == 40);
static_assert(offsetof(hvd_op, dtype) == 44);
static_assert(offsetof(hvd_op, device) == 48);
static_assert(offsetof(hvd_op, reduce_op) == 52);
static_assert(offsetof(hvd_op, prescale_factor) == 56);
static_assert(offsetof(hvd_op, postscale_factor) == 64);
static_assert(offsetof(hvd_op, root_rank) == 72);
static_assert(offsetof(hvd_op, splits) == 80);
static_assert(offsetof(hvd_op, process_set_id) == 88);
static_assert(HVD_OP_MIN_SIZE == 96, "the oldest layout ends with process_set_id");
static_assert(offsetof(hvd_op, stream) == 96);
static_assert(offsetof(hvd_op, ready_event) == 104);
static_assert(sizeof(hvd_op) == 112, "HVD_ABI_VERSION 3 to 5's hvd_op (1 and 2's ended at 104)");
static_assert(HVD_ABI_VERSION == 5, "a new ABI version: update the layout asserts above");

struct Constant {
  std::string_view name;
  int64_t value;
};

#define HVD_CONSTANT(name) Constant{#name, name}
#define HVD_OFFSET(field) Constant{"hvd_op.offset." #field, offsetof(hvd_op, field)}
constexpr Constant kConstants[] = {
    HVD_CONSTANT(HVD_UINT8), HVD_CONSTANT(HVD_INT8), HVD_CONSTANT(HVD_INT16),
    HVD_CONSTANT(HVD_INT32), HVD_CONSTANT(HVD_INT64), HVD_CONSTANT(HVD_FLOAT16),
    HVD_CONSTANT(HVD_BFLOAT16), HVD_CONSTANT(HVD_FLOAT32), HVD_CONSTANT(HVD_FLOAT64),
    HVD_CONSTANT(HVD_BOOL), HVD_CONSTANT(HVD_OP_SUM), HVD_CONSTANT(HVD_OP_AVERAGE),
    HVD_CONSTANT(HVD_OP_MIN), HVD_CONSTANT(HVD_OP_MAX), HVD_CONSTANT(HVD_OP_PRODUCT),
    HVD_CONSTANT(HVD_OK), HVD_CONSTANT(HVD_ERR_INVALID_ARGUMENT), HVD_CONSTANT(HVD_ERR_NOT_FOUND),
    HVD_CONSTANT(HVD_ERR_ALREADY_EXISTS), HVD_CONSTANT(HVD_ERR_TIMEOUT),
    HVD_CONSTANT(HVD_ERR_UNAVAILABLE), HVD_CONSTANT(HVD_ERR_ABORTED),
    HVD_CONSTANT(HVD_ERR_UNAUTHENTICATED), HVD_CONSTANT(HVD_ERR_FAILED_PRECONDITION),
    HVD_CONSTANT(HVD_ERR_CANCELLED), HVD_CONSTANT(HVD_ERR_UNIMPLEMENTED),
    HVD_CONSTANT(HVD_ERR_INTERNAL), HVD_CONSTANT(HVD_OPTYPE_ALLREDUCE),
    HVD_CONSTANT(HVD_OPTYPE_ALLGATHER), HVD_CONSTANT(HVD_OPTYPE_BROADCAST),
    HVD_CONSTANT(HVD_OPTYPE_ALLTOALL), HVD_CONSTANT(HVD_OPTYPE_REDUCESCATTER),
    HVD_CONSTANT(HVD_OPTYPE_BARRIER), HVD_CONSTANT(HVD_OPTYPE_JOIN),
    HVD_CONSTANT(HVD_DEVICE_CPU), HVD_CONSTANT(HVD_GLOBAL_PROCESS_SET),
    HVD_CONSTANT(HVD_HOSTS_ADDED), HVD_CONSTANT(HVD_HOSTS_REMOVED),
    HVD_CONSTANT(HVD_ABI_VERSION),
    Constant{"hvd_op.size", sizeof(hvd_op)}, Constant{"hvd_op.min_size", HVD_OP_MIN_SIZE},
    HVD_OFFSET(struct_size), HVD_OFFSET(op_type), HVD_OFFSET(name), HVD_OFFSET(input),
    HVD_OFFSET(output), HVD_OFFSET(shape), HVD_OFFSET(ndim), HVD_OFFSET(dtype),
    HVD_OFFSET(device), HVD_OFFSET(reduce_op), HVD_OFFSET(prescale_factor),
    HVD_OFFSET(postscale_factor), HVD_OFFSET(root_rank), HVD_OFFSET(splits),
    HVD_OFFSET(process_set_id), HVD_OFFSET(stream), HVD_OFFSET(ready_event),
};
#undef HVD_OFFSET
#undef HVD_CONSTANT

}  // namespace

std::optional<int64_t> find_constant(std::string_view name) {
  for (const auto& c : kConstants) {
    if (c.name == name) return c.value;
  }
  return std::nullopt;
}

}  // namespace hvd::runtime
