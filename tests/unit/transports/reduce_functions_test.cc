#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>

#include "transports/gloo/reduce_functions.h"

namespace hvd::transports::gloo {

using common::DataType;
using common::ReduceOp;

TEST_CASE("reduce functions: integer overflow wraps", "[reduce]") {
  auto sum = reduce_function(DataType::kInt32, ReduceOp::kSum);
  REQUIRE(sum.is_ok());
  int32_t a[] = {std::numeric_limits<int32_t>::max(), -5};
  int32_t b[] = {1, 3};
  sum.value()(a, a, b, 2);
  CHECK(a[0] == std::numeric_limits<int32_t>::min());
  CHECK(a[1] == -2);

  auto product = reduce_function(DataType::kInt16, ReduceOp::kProduct);
  REQUIRE(product.is_ok());
  int16_t x[] = {-300, 7};
  int16_t y[] = {300, -3};
  int16_t out[2] = {};
  product.value()(out, x, y, 2);
  CHECK(out[0] == static_cast<int16_t>(-90000));
  CHECK(out[1] == -21);
}

TEST_CASE("reduce functions: bool min/product are AND, max/sum are OR", "[reduce]") {
  uint8_t a[] = {0, 0, 1, 5};
  uint8_t b[] = {0, 3, 0, 1};
  uint8_t out[4] = {};
  for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kProduct}) {
    reduce_function(DataType::kBool, op).value()(out, a, b, 4);
    CHECK(std::vector<uint8_t>(out, out + 4) == std::vector<uint8_t>{0, 0, 0, 1});
  }
  for (ReduceOp op : {ReduceOp::kMax, ReduceOp::kSum}) {
    reduce_function(DataType::kBool, op).value()(out, a, b, 4);
    CHECK(std::vector<uint8_t>(out, out + 4) == std::vector<uint8_t>{0, 1, 1, 1});
  }
}

TEST_CASE("reduce functions: float min and max", "[reduce]") {
  double a[] = {1.5, -2.0};
  double b[] = {-1.0, 3.25};
  double out[2] = {};
  reduce_function(DataType::kFloat64, ReduceOp::kMin).value()(out, a, b, 2);
  CHECK(out[0] == -1.0);
  CHECK(out[1] == -2.0);
  reduce_function(DataType::kFloat64, ReduceOp::kMax).value()(out, a, b, 2);
  CHECK(out[0] == 1.5);
  CHECK(out[1] == 3.25);
}

TEST_CASE("reduce functions: what gloo cannot reduce", "[reduce]") {
  auto half = reduce_function(DataType::kFloat16, ReduceOp::kSum);
  REQUIRE_FALSE(half.is_ok());
  CHECK(half.status().to_string() ==
        "InvalidArgument: float16 reduction is not supported by the gloo transport yet");
  CHECK(reduce_function(DataType::kBFloat16, ReduceOp::kMax).status().message() ==
        "bfloat16 reduction is not supported by the gloo transport yet");
  CHECK(reduce_function(DataType::kInt8, ReduceOp::kAverage).status().message() ==
        "the gloo transport has no average reduction for int8");
}

}  // namespace hvd::transports::gloo
