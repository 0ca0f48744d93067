#include "transports/nccl/nccl_types.h"

#include "hvd/codes.h"

namespace hvd::transports::nccl {

namespace {

bool set_type(int32_t dtype, NcclReduction& r) {
  switch (dtype) {
    case HVD_UINT8: r.type = ncclUint8; r.element_size = 1; return true;
    case HVD_INT8: r.type = ncclInt8; r.element_size = 1; return true;
    case HVD_INT32: r.type = ncclInt32; r.element_size = 4; return true;
    case HVD_INT64: r.type = ncclInt64; r.element_size = 8; return true;
    case HVD_FLOAT16: r.type = ncclFloat16; r.element_size = 2; return true;
    case HVD_BFLOAT16: r.type = ncclBfloat16; r.element_size = 2; return true;
    case HVD_FLOAT32: r.type = ncclFloat32; r.element_size = 4; return true;
    case HVD_FLOAT64: r.type = ncclFloat64; r.element_size = 8; return true;
    case HVD_BOOL: r.type = ncclUint8; r.element_size = 1; return true;
    default: return false;
  }
}

}  // namespace

NcclReduction nccl_reduction(int32_t dtype, int32_t op) {
  NcclReduction r;
  if (dtype == HVD_INT16) {
    r.error = "NCCL cannot reduce int16 tensors (convert them to int32)";
    return r;
  }
  if (!set_type(dtype, r)) {
    r.error = "unknown element type " + std::to_string(dtype);
    return r;
  }
  switch (op) {
    case HVD_OP_SUM: r.op = ncclSum; break;
    case HVD_OP_PRODUCT: r.op = ncclProd; break;
    case HVD_OP_MIN: r.op = ncclMin; break;
    case HVD_OP_MAX: r.op = ncclMax; break;
    default: r.error = "reduce op " + std::to_string(op) + " is not one NCCL runs"; return r;
  }
  if (dtype == HVD_BOOL && op != HVD_OP_MIN && op != HVD_OP_MAX) {
    r.error = "NCCL reduces bool tensors with min (and) and max (or) only";
  }
  return r;
}

}  // namespace hvd::transports::nccl
