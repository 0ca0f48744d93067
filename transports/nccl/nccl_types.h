// hvd's element types and reduce ops (the HVD_* constants of hvd/codes.h)
// as NCCL's. NCCL has no int16 and no bool: int16 is refused for reductions;
// bool reduces as uint8 under min and max (logical and, or) only. Ops that
// only move bytes (allgather, broadcast, alltoall) do not ask.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <string>

namespace hvd::transports::nccl {

struct NcclReduction {
  ncclDataType_t type = ncclUint8;
  ncclRedOp_t op = ncclSum;
  size_t element_size = 1;
  std::string error;  // non-empty: NCCL cannot reduce this (type, op)
};

NcclReduction nccl_reduction(int32_t hvd_dtype, int32_t hvd_op);

}  // namespace hvd::transports::nccl
