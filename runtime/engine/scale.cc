#include "runtime/engine/scale.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "common/half.h"

namespace hvd::runtime {

namespace {

using common::DataType;

// C++'s conversion of a double to an integer (truncation toward zero), made
// total: through int64 (NaN and values beyond it give int64's minimum, as
// x86 does), then modulo 2^bits into T (C++20 defines that conversion).
template <typename T>
T truncate_to(double x) {
  constexpr double kTwo63 = 9223372036854775808.0;
  const int64_t wide = x >= -kTwo63 && x < kTwo63 ? static_cast<int64_t>(x)
                                                  : std::numeric_limits<int64_t>::min();
  return static_cast<T>(wide);
}

// How one element type divides and multiplies; Storage is its C++ type.
template <typename T>
struct Integer {
  using Storage = T;
  // The divisor stays an int (a world of 300 does not fit in an int8); the
  // usual conversions do the arithmetic in int or int64_t.
  static T divide(T v, int divisor) { return static_cast<T>(v / divisor); }
  static T multiply(T v, double factor) {
    return truncate_to<T>(static_cast<double>(v) * factor);
  }
};

template <typename T>
struct Floating {
  using Storage = T;
  static T divide(T v, int divisor) { return static_cast<T>(v / divisor); }
  static T multiply(T v, double factor) { return v * static_cast<T>(factor); }  // float: float
};

// float16 and bfloat16: computed as float, element by element.
template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
struct Narrow {
  using Storage = uint16_t;
  static uint16_t divide(uint16_t v, int divisor) {
    return Store(Load(v) / static_cast<float>(divisor));
  }
  static uint16_t multiply(uint16_t v, double factor) {
    return Store(Load(v) * static_cast<float>(factor));
  }
};
using Half = Narrow<common::half_to_float, common::float_to_half>;
using BFloat = Narrow<common::bfloat16_to_float, common::float_to_bfloat16>;

// What run() does to every element: Kind::multiply(v, factor) when
// `multiplies`, else Kind::divide(v, divisor), Kind being the type's.
struct Operation {
  int divisor = 1;
  double factor = 1.0;
  bool multiplies = false;
};

template <typename Kind>
void apply(void* dst, const void* src, size_t count, const Operation& op) {
  using S = typename Kind::Storage;
  auto* out = static_cast<S*>(dst);
  const auto* in = static_cast<const S*>(src);
  if (op.multiplies) {
    for (size_t i = 0; i < count; ++i) out[i] = Kind::multiply(in[i], op.factor);
  } else {
    for (size_t i = 0; i < count; ++i) out[i] = Kind::divide(in[i], op.divisor);
  }
}

common::Status run(void* dst, const void* src, size_t count, DataType type,
                   const Operation& op) {
  switch (type) {
    case DataType::kUInt8: apply<Integer<uint8_t>>(dst, src, count, op); break;
    case DataType::kInt8: apply<Integer<int8_t>>(dst, src, count, op); break;
    case DataType::kInt16: apply<Integer<int16_t>>(dst, src, count, op); break;
    case DataType::kInt32: apply<Integer<int32_t>>(dst, src, count, op); break;
    case DataType::kInt64: apply<Integer<int64_t>>(dst, src, count, op); break;
    case DataType::kFloat32: apply<Floating<float>>(dst, src, count, op); break;
    case DataType::kFloat64: apply<Floating<double>>(dst, src, count, op); break;
    case DataType::kFloat16: apply<Half>(dst, src, count, op); break;
    case DataType::kBFloat16: apply<BFloat>(dst, src, count, op); break;
    case DataType::kBool:
      if (!op.multiplies) return common::invalid_argument("average is not supported for bool");
      return common::invalid_argument("scaling by " + std::to_string(op.factor) +
                                      " is not supported for bool");
  }
  return common::Status::ok();
}

common::Status divide_into(void* dst, const void* src, size_t count, DataType type, int divisor) {
  return run(dst, src, count, type, Operation{divisor, 1.0, false});
}

common::Status multiply_into(void* dst, const void* src, size_t count, DataType type,
                             double factor) {
  return run(dst, src, count, type, Operation{1, factor, true});
}

bool is_integer(DataType type) {
  switch (type) {
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64: return true;
    default: return false;
  }
}

void copy(void* dst, const void* src, size_t count, DataType type) {
  if (dst != src && count > 0) std::memmove(dst, src, count * common::data_type_size(type));
}

common::Status check_divisor(int divisor) {
  if (divisor > 0) return common::Status::ok();
  return common::invalid_argument("cannot divide by " + std::to_string(divisor));
}

}  // namespace

bool can_divide(DataType type) { return type != DataType::kBool; }

bool can_scale(DataType type) { return type != DataType::kBool; }

common::Status divide(void* data, size_t count, DataType type, int divisor) {
  HVD_RETURN_IF_ERROR(check_divisor(divisor));
  return divide_into(data, data, count, type, divisor);
}

common::Status scale(void* dst, const void* src, size_t count, DataType type, double factor) {
  if (factor == 1.0) {
    copy(dst, src, count, type);
    return common::Status::ok();
  }
  return multiply_into(dst, src, count, type, factor);
}

common::Status finish_reduction(void* dst, const void* src, size_t count, DataType type,
                                int divisor, double factor) {
  HVD_RETURN_IF_ERROR(check_divisor(divisor));
  if (factor != 1.0) return multiply_into(dst, src, count, type, factor / divisor);
  if (divisor == 1) {
    copy(dst, src, count, type);
    return common::Status::ok();
  }
  return divide_into(dst, src, count, type, divisor);
}

ReductionEnd reduction_end(DataType type, bool average, int size, double prescale,
                           double postscale) {
  if (average && is_integer(type) && (prescale != 1.0 || postscale != 1.0)) {
    return {1, postscale / size};
  }
  return {average ? size : 1, postscale};
}

}  // namespace hvd::runtime
