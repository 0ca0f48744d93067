#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/half.h"

#include "transports/reduce_functions.h"

namespace hvd::transports {

using common::DataType;
using common::ReduceOp;

TEST_CASE("reduce functions: integer overflow wraps", "[reduce]") {
  auto sum = reduce_function("gloo", DataType::kInt32, ReduceOp::kSum);
  REQUIRE(sum.is_ok());
  int32_t a[] = {std::numeric_limits<int32_t>::max(), -5};
  int32_t b[] = {1, 3};
  sum.value()(a, a, b, 2);
  CHECK(a[0] == std::numeric_limits<int32_t>::min());
  CHECK(a[1] == -2);

  auto product = reduce_function("gloo", DataType::kInt16, ReduceOp::kProduct);
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
    reduce_function("gloo", DataType::kBool, op).value()(out, a, b, 4);
    CHECK(std::vector<uint8_t>(out, out + 4) == std::vector<uint8_t>{0, 0, 0, 1});
  }
  for (ReduceOp op : {ReduceOp::kMax, ReduceOp::kSum}) {
    reduce_function("gloo", DataType::kBool, op).value()(out, a, b, 4);
    CHECK(std::vector<uint8_t>(out, out + 4) == std::vector<uint8_t>{0, 1, 1, 1});
  }
}

TEST_CASE("reduce functions: float min and max", "[reduce]") {
  double a[] = {1.5, -2.0};
  double b[] = {-1.0, 3.25};
  double out[2] = {};
  reduce_function("gloo", DataType::kFloat64, ReduceOp::kMin).value()(out, a, b, 2);
  CHECK(out[0] == -1.0);
  CHECK(out[1] == -2.0);
  reduce_function("gloo", DataType::kFloat64, ReduceOp::kMax).value()(out, a, b, 2);
  CHECK(out[0] == 1.5);
  CHECK(out[1] == 3.25);
}

TEST_CASE("reduce functions: float16 and bfloat16 reduce through float", "[reduce]") {
  using common::bfloat16_to_float;
  using common::float_to_bfloat16;
  using common::float_to_half;
  using common::half_to_float;
  struct Codec {
    DataType type;
    uint16_t (*from)(float);
    float (*to)(uint16_t);
  };
  for (Codec c : {Codec{DataType::kFloat16, float_to_half, half_to_float},
                  Codec{DataType::kBFloat16, float_to_bfloat16, bfloat16_to_float}}) {
    CAPTURE(common::data_type_name(c.type));
    const std::vector<float> xs = {1.5f, -2.0f, 0.25f, 3.0f, -0.0f};
    const std::vector<float> ys = {2.0f, 0.5f, -4.0f, 3.0f, 0.0f};
    std::vector<uint16_t> a, b;
    for (float v : xs) a.push_back(c.from(v));
    for (float v : ys) b.push_back(c.from(v));
    auto run = [&](ReduceOp op) {
      auto fn = reduce_function("gloo", c.type, op);
      REQUIRE(fn.is_ok());
      std::vector<uint16_t> out(a.size());
      fn.value()(out.data(), a.data(), b.data(), a.size());
      std::vector<float> result;
      for (uint16_t h : out) result.push_back(c.to(h));
      return result;
    };
    CHECK(run(ReduceOp::kSum) == std::vector<float>{3.5f, -1.5f, -3.75f, 6.0f, 0.0f});
    CHECK(run(ReduceOp::kProduct) == std::vector<float>{3.0f, -1.0f, -1.0f, 9.0f, -0.0f});
    CHECK(run(ReduceOp::kMin) == std::vector<float>{1.5f, -2.0f, -4.0f, 3.0f, -0.0f});
    CHECK(run(ReduceOp::kMax) == std::vector<float>{2.0f, 0.5f, 0.25f, 3.0f, -0.0f});

    // In place (out aliases a), as gloo calls it.
    std::vector<uint16_t> acc = a;
    reduce_function("gloo", c.type, ReduceOp::kSum).value()(acc.data(), acc.data(), b.data(), acc.size());
    CHECK(c.to(acc[0]) == 3.5f);
    CHECK(c.to(acc[3]) == 6.0f);
  }
}

TEST_CASE("reduce functions: float16 rounds to nearest even, overflows to infinity", "[reduce]") {
  auto sum = reduce_function("gloo", DataType::kFloat16, ReduceOp::kSum).value();
  // 2048 + 1 is halfway between 2048 and 2050: ties to even (2048); 2050 + 1 -> 2052.
  uint16_t a[] = {0x6800 /* 2048 */, 0x6801 /* 2050 */, 0x7bff /* 65504 */, 0x0001 /* 2^-24 */};
  uint16_t b[] = {0x3c00 /* 1 */, 0x3c00, 0x7bff, 0x0001};
  uint16_t out[4] = {};
  sum(out, a, b, 4);
  CHECK(out[0] == 0x6800);
  CHECK(out[1] == 0x6802);
  CHECK(out[2] == 0x7c00);  // +inf
  CHECK(out[3] == 0x0002);  // subnormals add exactly

  auto bsum = reduce_function("gloo", DataType::kBFloat16, ReduceOp::kSum).value();
  // bfloat16 has 8 significant bits: 256 + 1 ties to 256, 258 + 1 to 260.
  uint16_t c[] = {common::float_to_bfloat16(256.0f), common::float_to_bfloat16(258.0f)};
  uint16_t d[] = {common::float_to_bfloat16(1.0f), common::float_to_bfloat16(1.0f)};
  uint16_t bout[2] = {};
  bsum(bout, c, d, 2);
  CHECK(common::bfloat16_to_float(bout[0]) == 256.0f);
  CHECK(common::bfloat16_to_float(bout[1]) == 260.0f);

  // NaN stays NaN.
  uint16_t nan[] = {0x7e00};
  uint16_t one[] = {0x3c00};
  uint16_t r[1] = {};
  sum(r, nan, one, 1);
  CHECK(std::isnan(common::half_to_float(r[0])));
}

TEST_CASE("reduce functions: what gloo cannot reduce", "[reduce]") {
  for (DataType type : {DataType::kInt8, DataType::kFloat16, DataType::kBFloat16, DataType::kBool}) {
    auto average = reduce_function("gloo", type, ReduceOp::kAverage);
    REQUIRE_FALSE(average.is_ok());
    CHECK(average.status().to_string() == "InvalidArgument: the gloo transport has no average reduction for " +
                                              std::string(common::data_type_name(type)));
  }
}

}  // namespace hvd::transports
