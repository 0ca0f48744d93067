#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>

#include "runtime/arguments.h"

namespace hvd::runtime {

using common::DataType;

TEST_CASE("arguments: type and op codes", "[arguments]") {
  CHECK(to_data_type(7, "allreduce").value() == DataType::kFloat32);
  CHECK(to_data_type(42, "allreduce").status().message() ==
        "allreduce: 42 is not a data type code (0..9)");
  CHECK(to_data_type(-1, "broadcast").status().code() == common::StatusCode::kInvalidArgument);
  CHECK(to_reduce_op(1, "allreduce").value() == common::ReduceOp::kAverage);
  CHECK(to_reduce_op(5, "allreduce").status().message() ==
        "allreduce: 5 is not a reduce op code (0..4)");
}

TEST_CASE("arguments: counts and pointers", "[arguments]") {
  int32_t x[3] = {};
  CHECK(byte_size(x, 3, DataType::kInt32, "allreduce", "data").value() == 12);
  CHECK(byte_size(nullptr, 0, DataType::kInt32, "allreduce", "data").value() == 0);
  CHECK(byte_size(x, -2, DataType::kInt32, "allreduce", "data").status().message() ==
        "allreduce: data count -2 is negative");
  CHECK(byte_size(nullptr, 3, DataType::kInt32, "allgather", "output").status().message() ==
        "allgather: output is null but count is 3");
  CHECK(byte_size(x, std::numeric_limits<int64_t>::max(), DataType::kFloat64, "allreduce", "data")
            .status()
            .message() == "allreduce: data count 9223372036854775807 is too large");
}

}  // namespace hvd::runtime
