// Element-wise arithmetic the engine does around a reduction: the division
// of an Average (the transport sums, the runtime divides by the number of
// ranks of the process set) and the prescale / postscale factors.
//
// Integer types: scaling by a factor other than 1 is an error (the engine
// refuses such ops at enqueue); only an Average's division is done, with C++
// division, which truncates toward zero: an int32 average of -3 over 2 ranks
// is -1, of 3 is 1 (Horovod's and torch's integer averages truncate the same
// way). float16 and bfloat16 are computed in float and rounded back to
// nearest even (common/half.h). bool has no arithmetic: no average, no scaling.
#pragma once

#include <cstddef>

#include "common/data_type.h"
#include "common/status.h"

namespace hvd::runtime {

// Whether divide() handles `type`: every integer and floating type, not bool.
bool can_divide(common::DataType type);
// Whether scale factors other than 1 apply to `type`: the floating types.
bool can_scale(common::DataType type);

// Divides each of the `count` elements of `type` at `data` by `divisor` (> 0).
// kInvalidArgument when !can_divide(type).
common::Status divide(void* data, size_t count, common::DataType type, int divisor);

// dst[i] = src[i] * factor for `count` elements (dst may equal src; other
// overlaps are not allowed). factor 1 is a plain copy for every type;
// kInvalidArgument for other factors when !can_scale(type).
common::Status scale(void* dst, const void* src, size_t count, common::DataType type,
                     double factor);

// The end of a reduction: dst[i] = src[i] / divisor * factor (dst may equal
// src). Floating types multiply by factor / divisor (or divide when factor is
// 1, which keeps an Average exact where it can be); integers divide
// (truncating) and need factor 1. divisor 1 and factor 1: a copy.
common::Status finish_reduction(void* dst, const void* src, size_t count, common::DataType type,
                                int divisor, double factor);

}  // namespace hvd::runtime
