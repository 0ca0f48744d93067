// In-place division of a buffer by the world size: the second half of an
// Average allreduce (the transport sums, the runtime divides).
#pragma once

#include <cstddef>

#include "common/data_type.h"
#include "common/status.h"

namespace hvd::runtime {

// Whether divide() handles `type` (every integer and float type except
// float16 and bfloat16; not bool, whose average means nothing).
bool can_divide(common::DataType type);

// Divides each of the `count` elements of `type` at `data` by `divisor` (> 0).
// Integers use C++ division, which truncates toward zero: an int32 average of
// -3 over 2 ranks is -1, of 3 is 1 (Horovod's and torch's integer averages
// truncate the same way). kInvalidArgument when !can_divide(type).
common::Status divide(void* data, size_t count, common::DataType type, int divisor);

}  // namespace hvd::runtime
