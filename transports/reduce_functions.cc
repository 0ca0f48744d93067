#include "transports/reduce_functions.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "common/half.h"

namespace hvd::transports {

namespace {

using common::DataType;
using common::ReduceOp;

// Integer sums and products are computed in an unsigned type at least as wide
// as unsigned int (narrower ones would be promoted to int), so that an
// overflow wraps instead of being undefined behaviour.
template <typename T, bool = std::is_integral_v<T>>
struct ArithmeticOf {
  using type = T;
};
template <typename T>
struct ArithmeticOf<T, true> {
  using type = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
};
template <typename T>
using Arithmetic = typename ArithmeticOf<T>::type;

template <typename T>
void sum(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) {
    o[i] = static_cast<T>(static_cast<Arithmetic<T>>(x[i]) + static_cast<Arithmetic<T>>(y[i]));
  }
}

template <typename T>
void product(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) {
    o[i] = static_cast<T>(static_cast<Arithmetic<T>>(x[i]) * static_cast<Arithmetic<T>>(y[i]));
  }
}

template <typename T>
void minimum(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = std::min(x[i], y[i]);
}

template <typename T>
void maximum(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = std::max(x[i], y[i]);
}

void logical_and(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<uint8_t*>(out);
  const auto* x = static_cast<const uint8_t*>(a);
  const auto* y = static_cast<const uint8_t*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = (x[i] != 0 && y[i] != 0) ? 1 : 0;
}

void logical_or(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<uint8_t*>(out);
  const auto* x = static_cast<const uint8_t*>(a);
  const auto* y = static_cast<const uint8_t*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = (x[i] != 0 || y[i] != 0) ? 1 : 0;
}

// float16 and bfloat16: widen to float, reduce, round back (to nearest even).
template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float), typename Op>
void reduce16(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<uint16_t*>(out);
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = FromFloat(Op{}(ToFloat(x[i]), ToFloat(y[i])));
}

struct Plus {
  float operator()(float a, float b) const { return a + b; }
};
struct Times {
  float operator()(float a, float b) const { return a * b; }
};
struct Least {  // as std::min, like the float32 path
  float operator()(float a, float b) const { return std::min(a, b); }
};
struct Greatest {  // as std::max, like the float32 path
  float operator()(float a, float b) const { return std::max(a, b); }
};

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
ReduceFunction sixteen_bit(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return &reduce16<ToFloat, FromFloat, Plus>;
    case ReduceOp::kMin: return &reduce16<ToFloat, FromFloat, Least>;
    case ReduceOp::kMax: return &reduce16<ToFloat, FromFloat, Greatest>;
    case ReduceOp::kProduct: return &reduce16<ToFloat, FromFloat, Times>;
    case ReduceOp::kAverage: return nullptr;
  }
  return nullptr;
}

template <typename T>
ReduceFunction numeric(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return &sum<T>;
    case ReduceOp::kMin: return &minimum<T>;
    case ReduceOp::kMax: return &maximum<T>;
    case ReduceOp::kProduct: return &product<T>;
    case ReduceOp::kAverage: return nullptr;
  }
  return nullptr;
}

ReduceFunction boolean(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMin:
    case ReduceOp::kProduct: return &logical_and;
    case ReduceOp::kMax:
    case ReduceOp::kSum: return &logical_or;
    case ReduceOp::kAverage: return nullptr;
  }
  return nullptr;
}

}  // namespace

common::Result<ReduceFunction> reduce_function(std::string_view transport, DataType type,
                                               ReduceOp op) {
  ReduceFunction fn = nullptr;
  switch (type) {
    case DataType::kUInt8: fn = numeric<uint8_t>(op); break;
    case DataType::kInt8: fn = numeric<int8_t>(op); break;
    case DataType::kInt16: fn = numeric<int16_t>(op); break;
    case DataType::kInt32: fn = numeric<int32_t>(op); break;
    case DataType::kInt64: fn = numeric<int64_t>(op); break;
    case DataType::kFloat32: fn = numeric<float>(op); break;
    case DataType::kFloat64: fn = numeric<double>(op); break;
    case DataType::kBool: fn = boolean(op); break;
    case DataType::kFloat16:
      fn = sixteen_bit<common::half_to_float, common::float_to_half>(op);
      break;
    case DataType::kBFloat16:
      fn = sixteen_bit<common::bfloat16_to_float, common::float_to_bfloat16>(op);
      break;
  }
  if (fn == nullptr) {
    return common::invalid_argument("the " + std::string(transport) + " transport has no " +
                                    std::string(common::reduce_op_name(op)) + " reduction for " +
                                    std::string(common::data_type_name(type)));
  }
  return fn;
}

}  // namespace hvd::transports
