// Checks of the raw arguments that arrive through the C ABI (type and op
// codes, counts, pointers), each failure a kInvalidArgument that
// names the call and the bad value.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/data_type.h"
#include "common/status.h"

namespace hvd::runtime {

using common::Result;

Result<common::DataType> to_data_type(int32_t code, const char* call);
Result<common::ReduceOp> to_reduce_op(int32_t code, const char* call);

// count elements of `type` at data as a byte count: count must be >= 0 and
// data non-null when count > 0.
Result<size_t> byte_size(const void* data, int64_t count, common::DataType type, const char* call,
                         const char* what);

}  // namespace hvd::runtime
