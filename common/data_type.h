// Element types and reduction operations shared by the C ABI, the runtime and
// every transport. The numeric values are part of the C ABI (common/include/
// hvd/codes.h repeats them as HVD_* constants) and must never change.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hvd::common {

enum class DataType : int32_t {
  kUInt8 = 0,
  kInt8 = 1,
  kInt16 = 2,
  kInt32 = 3,
  kInt64 = 4,
  kFloat16 = 5,
  kBFloat16 = 6,
  kFloat32 = 7,
  kFloat64 = 8,
  kBool = 9,
};
inline constexpr int32_t kDataTypeCount = 10;

enum class ReduceOp : int32_t {
  kSum = 0,
  kAverage = 1,  // the runtime turns it into kSum and a division; transports never see it
  kMin = 2,
  kMax = 3,
  kProduct = 4,
};
inline constexpr int32_t kReduceOpCount = 5;

size_t data_type_size(DataType type);
std::string_view data_type_name(DataType type);
std::string_view reduce_op_name(ReduceOp op);
bool is_valid_data_type(int32_t code);
bool is_valid_reduce_op(int32_t code);

}  // namespace hvd::common
