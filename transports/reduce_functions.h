// Element-wise reductions shared by the CPU transports, in the shape gloo's
// AllreduceOptions expects: out[i] = a[i] (op) b[i] for n elements (out may
// alias a or b). Plain loops: at -O3 the compiler vectorises them.
//
// Supported: uint8, int8, int16, int32, int64, float32, float64 with sum,
// min, max and product (integer sum and product wrap around on overflow),
// and bool, where every non-zero byte counts as true and results are 0 or 1:
// min and product are logical AND, max and sum are logical OR (sum is "any",
// as a count would not fit in a bool). float16 and bfloat16 (raw 16-bit
// patterns) are converted to float, reduced and rounded back to nearest even
// element by element; a float result is correctly rounded for these ops, so
// each step matches a native 16-bit operation.
#pragma once

#include <cstddef>
#include <string_view>

#include "common/data_type.h"
#include "common/status.h"

namespace hvd::transports {

using ReduceFunction = void (*)(void* out, const void* a, const void* b, size_t n);

// kInvalidArgument naming `transport`, the type and the op when there is no
// function for them (kAverage never reaches a transport: the runtime turns
// it into a sum).
common::Result<ReduceFunction> reduce_function(std::string_view transport, common::DataType type,
                                               common::ReduceOp op);

}  // namespace hvd::transports
