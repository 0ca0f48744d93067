#include "runtime/arguments.h"

#include <limits>
#include <string>

namespace hvd::runtime {

using common::invalid_argument;

Result<common::DataType> to_data_type(int32_t code, const char* call) {
  if (!common::is_valid_data_type(code)) {
    return invalid_argument(std::string(call) + ": " + std::to_string(code) +
                            " is not a data type code (0.." +
                            std::to_string(common::kDataTypeCount - 1) + ")");
  }
  return static_cast<common::DataType>(code);
}

Result<common::ReduceOp> to_reduce_op(int32_t code, const char* call) {
  if (!common::is_valid_reduce_op(code)) {
    return invalid_argument(std::string(call) + ": " + std::to_string(code) +
                            " is not a reduce op code (0.." +
                            std::to_string(common::kReduceOpCount - 1) + ")");
  }
  return static_cast<common::ReduceOp>(code);
}

Result<size_t> byte_size(const void* data, int64_t count, common::DataType type, const char* call,
                         const char* what) {
  if (count < 0) {
    return invalid_argument(std::string(call) + ": " + what + " count " + std::to_string(count) +
                            " is negative");
  }
  size_t element = common::data_type_size(type);
  if (static_cast<uint64_t>(count) > std::numeric_limits<size_t>::max() / element) {
    return invalid_argument(std::string(call) + ": " + what + " count " + std::to_string(count) +
                            " is too large");
  }
  if (data == nullptr && count > 0) {
    return invalid_argument(std::string(call) + ": " + what + " is null but count is " +
                            std::to_string(count));
  }
  return static_cast<size_t>(count) * element;
}

}  // namespace hvd::runtime
