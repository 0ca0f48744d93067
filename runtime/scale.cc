#include "runtime/scale.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "common/half.h"

namespace hvd::runtime {

namespace {

using common::DataType;

// float16 and bfloat16 as float, element by element.
struct Half {
  static float load(uint16_t v) { return common::half_to_float(v); }
  static uint16_t store(float f) { return common::float_to_half(f); }
};
struct BFloat {
  static float load(uint16_t v) { return common::bfloat16_to_float(v); }
  static uint16_t store(float f) { return common::float_to_bfloat16(f); }
};

template <typename T>
void divide_as(T* dst, const T* src, size_t count, int divisor) {
  // The divisor stays an int (a world of 300 does not fit in an int8); the
  // usual conversions do the arithmetic in int, int64_t, float or double.
  for (size_t i = 0; i < count; ++i) dst[i] = static_cast<T>(src[i] / divisor);
}

template <typename T, typename F>
void multiply_as(T* dst, const T* src, size_t count, F factor) {
  for (size_t i = 0; i < count; ++i) dst[i] = static_cast<T>(src[i] * factor);
}

template <typename Codec>
void divide_16(uint16_t* dst, const uint16_t* src, size_t count, int divisor) {
  auto d = static_cast<float>(divisor);
  for (size_t i = 0; i < count; ++i) dst[i] = Codec::store(Codec::load(src[i]) / d);
}

template <typename Codec>
void multiply_16(uint16_t* dst, const uint16_t* src, size_t count, float factor) {
  for (size_t i = 0; i < count; ++i) dst[i] = Codec::store(Codec::load(src[i]) * factor);
}

void copy(void* dst, const void* src, size_t count, DataType type) {
  if (dst != src && count > 0) std::memmove(dst, src, count * common::data_type_size(type));
}

common::Status divide_into(void* dst, const void* src, size_t count, DataType type, int divisor) {
  switch (type) {
    case DataType::kUInt8:
      divide_as(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), count, divisor);
      break;
    case DataType::kInt8:
      divide_as(static_cast<int8_t*>(dst), static_cast<const int8_t*>(src), count, divisor);
      break;
    case DataType::kInt16:
      divide_as(static_cast<int16_t*>(dst), static_cast<const int16_t*>(src), count, divisor);
      break;
    case DataType::kInt32:
      divide_as(static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), count, divisor);
      break;
    case DataType::kInt64:
      divide_as(static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), count, divisor);
      break;
    case DataType::kFloat32:
      divide_as(static_cast<float*>(dst), static_cast<const float*>(src), count, divisor);
      break;
    case DataType::kFloat64:
      divide_as(static_cast<double*>(dst), static_cast<const double*>(src), count, divisor);
      break;
    case DataType::kFloat16:
      divide_16<Half>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count,
                      divisor);
      break;
    case DataType::kBFloat16:
      divide_16<BFloat>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count,
                        divisor);
      break;
    case DataType::kBool:
      return common::invalid_argument("average is not supported for bool");
  }
  return common::Status::ok();
}

common::Status multiply_into(void* dst, const void* src, size_t count, DataType type,
                             double factor) {
  switch (type) {
    case DataType::kFloat32:
      multiply_as(static_cast<float*>(dst), static_cast<const float*>(src), count,
                  static_cast<float>(factor));
      break;
    case DataType::kFloat64:
      multiply_as(static_cast<double*>(dst), static_cast<const double*>(src), count, factor);
      break;
    case DataType::kFloat16:
      multiply_16<Half>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count,
                        static_cast<float>(factor));
      break;
    case DataType::kBFloat16:
      multiply_16<BFloat>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count,
                          static_cast<float>(factor));
      break;
    default:
      return common::invalid_argument("scaling by " + std::to_string(factor) +
                                      " is not supported for " +
                                      std::string(common::data_type_name(type)) +
                                      " (only floating types can be scaled)");
  }
  return common::Status::ok();
}

}  // namespace

bool can_divide(DataType type) { return type != DataType::kBool; }

bool can_scale(DataType type) {
  switch (type) {
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kFloat32:
    case DataType::kFloat64: return true;
    default: return false;
  }
}

common::Status divide(void* data, size_t count, DataType type, int divisor) {
  if (divisor <= 0) {
    return common::invalid_argument("cannot divide by " + std::to_string(divisor));
  }
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
  if (divisor <= 0) {
    return common::invalid_argument("cannot divide by " + std::to_string(divisor));
  }
  if (factor == 1.0) {
    if (divisor == 1) {
      copy(dst, src, count, type);
      return common::Status::ok();
    }
    return divide_into(dst, src, count, type, divisor);
  }
  if (!can_scale(type)) return multiply_into(dst, src, count, type, factor);  // the error
  return multiply_into(dst, src, count, type, factor / divisor);
}

}  // namespace hvd::runtime
