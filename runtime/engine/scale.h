// Element-wise arithmetic the engine does around a reduction: the division
// of an Average (the transport sums, the runtime divides by the number of
// ranks of the process set) and the prescale / postscale factors.
//
// As Horovod does on CPU: integers are multiplied by a factor in float64 and
// converted back as C++ converts (truncation toward zero: 7 * 0.5 is 3, -7 *
// 0.5 is -3); a result outside the type wraps around like an overflowing sum
// (through int64: int8 100 * 2.0 is -56; NaN or beyond int64 counts as
// int64's minimum). An Average of integers without factors is an exact
// integer division (truncating: an int32 average of -3 over 2 ranks is -1);
// with a factor Horovod folds it into the postscale factor (reduction_end).
// float32 is multiplied by the factor as a float, float64 as a double;
// float16 and bfloat16 are computed in float and rounded back to nearest even
// (common/half.h). bool has no arithmetic: no average, no scaling.
#pragma once

#include <cstddef>

#include "common/data_type.h"
#include "common/status.h"

namespace hvd::runtime {

// Whether divide() handles `type`: every integer and floating type, not bool.
bool can_divide(common::DataType type);
// Whether scale factors other than 1 apply to `type`: every type but bool.
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
// src). With factor 1 it divides (exact for integers, truncating); otherwise
// it multiplies by factor / divisor (computed in float64). divisor 1 and
// factor 1: a copy.
common::Status finish_reduction(void* dst, const void* src, size_t count, common::DataType type,
                                int divisor, double factor);

// finish_reduction's divisor and factor for a reduction over `size` ranks
// with these scale factors: an Average divides by `size`, then `postscale`
// applies. Integers with any factor other than 1 follow Horovod, which folds
// the Average into the postscale factor: divisor 1, factor postscale / size.
struct ReductionEnd {
  int divisor = 1;
  double factor = 1.0;
};
ReductionEnd reduction_end(common::DataType type, bool average, int size, double prescale,
                           double postscale);

}  // namespace hvd::runtime
