#include "runtime/scale.h"

#include <cstdint>
#include <string>

namespace hvd::runtime {

namespace {

using common::DataType;

template <typename T>
void divide_as(void* data, size_t count, int divisor) {
  auto* values = static_cast<T*>(data);
  // The divisor stays an int (a world of 300 does not fit in an int8); the
  // usual conversions do the arithmetic in int, int64_t, float or double.
  for (size_t i = 0; i < count; ++i) values[i] = static_cast<T>(values[i] / divisor);
}

}  // namespace

bool can_divide(DataType type) {
  switch (type) {
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kFloat32:
    case DataType::kFloat64: return true;
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kBool: return false;
  }
  return false;
}

common::Status divide(void* data, size_t count, DataType type, int divisor) {
  if (divisor <= 0) {
    return common::invalid_argument("cannot divide by " + std::to_string(divisor));
  }
  switch (type) {
    case DataType::kUInt8: divide_as<uint8_t>(data, count, divisor); break;
    case DataType::kInt8: divide_as<int8_t>(data, count, divisor); break;
    case DataType::kInt16: divide_as<int16_t>(data, count, divisor); break;
    case DataType::kInt32: divide_as<int32_t>(data, count, divisor); break;
    case DataType::kInt64: divide_as<int64_t>(data, count, divisor); break;
    case DataType::kFloat32: divide_as<float>(data, count, divisor); break;
    case DataType::kFloat64: divide_as<double>(data, count, divisor); break;
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kBool:
      return common::invalid_argument("average is not supported for " +
                                      std::string(common::data_type_name(type)));
  }
  return common::Status::ok();
}

}  // namespace hvd::runtime
