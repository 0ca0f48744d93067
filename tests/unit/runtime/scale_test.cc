#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "runtime/scale.h"

namespace hvd::runtime {

using common::DataType;

TEST_CASE("scale: integers truncate toward zero", "[scale]") {
  std::vector<int32_t> ints{-3, 3, -1, 7, 0};
  REQUIRE(divide(ints.data(), ints.size(), DataType::kInt32, 2).is_ok());
  CHECK(ints == std::vector<int32_t>{-1, 1, 0, 3, 0});

  std::vector<int8_t> small{-128, 127, -5};
  REQUIRE(divide(small.data(), small.size(), DataType::kInt8, 4).is_ok());
  CHECK(small == std::vector<int8_t>{-32, 31, -1});

  std::vector<int64_t> big{int64_t{1} << 40, -(int64_t{1} << 40) - 1};
  REQUIRE(divide(big.data(), big.size(), DataType::kInt64, 3).is_ok());
  CHECK(big == std::vector<int64_t>{366503875925, -366503875925});

  std::vector<int16_t> shorts{-32768, 1000};
  REQUIRE(divide(shorts.data(), shorts.size(), DataType::kInt16, 1000).is_ok());
  CHECK(shorts == std::vector<int16_t>{-32, 1});
}

TEST_CASE("scale: a divisor larger than the type's range", "[scale]") {
  std::vector<uint8_t> bytes{255, 200, 44};
  REQUIRE(divide(bytes.data(), bytes.size(), DataType::kUInt8, 100).is_ok());
  CHECK(bytes == std::vector<uint8_t>{2, 2, 0});
  std::vector<uint8_t> more{255, 44};
  REQUIRE(divide(more.data(), more.size(), DataType::kUInt8, 300).is_ok());
  CHECK(more == std::vector<uint8_t>{0, 0});  // not 255/44 (300 wrapped to a byte)
}

TEST_CASE("scale: floating point", "[scale]") {
  std::vector<float> floats{3.0f, -1.0f, 0.5f};
  REQUIRE(divide(floats.data(), floats.size(), DataType::kFloat32, 4).is_ok());
  CHECK(floats == std::vector<float>{0.75f, -0.25f, 0.125f});
  std::vector<double> doubles{1.0, -7.0};
  REQUIRE(divide(doubles.data(), doubles.size(), DataType::kFloat64, 3).is_ok());
  CHECK(doubles[0] == 1.0 / 3);
  CHECK(doubles[1] == -7.0 / 3);
}

TEST_CASE("scale: unsupported types and divisors", "[scale]") {
  uint16_t half = 0x3c00;
  auto s = divide(&half, 1, DataType::kFloat16, 2);
  CHECK(s.code() == common::StatusCode::kInvalidArgument);
  CHECK(s.message() == "average is not supported for float16");
  CHECK(divide(&half, 1, DataType::kBFloat16, 2).message() == "average is not supported for bfloat16");
  uint8_t flag = 1;
  CHECK(divide(&flag, 1, DataType::kBool, 2).message() == "average is not supported for bool");
  int32_t x = 4;
  CHECK(divide(&x, 1, DataType::kInt32, 0).message() == "cannot divide by 0");
  CHECK(x == 4);
  CHECK(can_divide(DataType::kInt8));
  CHECK(can_divide(DataType::kFloat64));
  CHECK_FALSE(can_divide(DataType::kFloat16));
  CHECK_FALSE(can_divide(DataType::kBool));
}

}  // namespace hvd::runtime
