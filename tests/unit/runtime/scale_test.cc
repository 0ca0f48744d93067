#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "common/half.h"
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

TEST_CASE("scale: float16 and bfloat16 divide through float", "[scale]") {
  std::vector<uint16_t> half{common::float_to_half(3.0f), common::float_to_half(-1.0f)};
  REQUIRE(divide(half.data(), half.size(), DataType::kFloat16, 4).is_ok());
  CHECK(common::half_to_float(half[0]) == 0.75f);
  CHECK(common::half_to_float(half[1]) == -0.25f);
  std::vector<uint16_t> bf{common::float_to_bfloat16(1.0f)};
  REQUIRE(divide(bf.data(), 1, DataType::kBFloat16, 3).is_ok());
  CHECK(bf[0] == common::float_to_bfloat16(1.0f / 3.0f));
}

TEST_CASE("scale: unsupported types and divisors", "[scale]") {
  uint8_t flag = 1;
  CHECK(divide(&flag, 1, DataType::kBool, 2).message() == "average is not supported for bool");
  int32_t x = 4;
  CHECK(divide(&x, 1, DataType::kInt32, 0).message() == "cannot divide by 0");
  CHECK(x == 4);
  CHECK(can_divide(DataType::kInt8));
  CHECK(can_divide(DataType::kFloat64));
  CHECK(can_divide(DataType::kFloat16));
  CHECK_FALSE(can_divide(DataType::kBool));
  CHECK(can_scale(DataType::kBFloat16));
  CHECK_FALSE(can_scale(DataType::kInt64));
  CHECK_FALSE(can_scale(DataType::kBool));
}

TEST_CASE("scale: copy with a factor", "[scale]") {
  std::vector<float> in{1.0f, -2.0f};
  std::vector<float> out(2);
  REQUIRE(scale(out.data(), in.data(), 2, DataType::kFloat32, 0.5).is_ok());
  CHECK(out == std::vector<float>{0.5f, -1.0f});
  REQUIRE(scale(out.data(), out.data(), 2, DataType::kFloat32, 4.0).is_ok());  // in place
  CHECK(out == std::vector<float>{2.0f, -4.0f});
  std::vector<int16_t> ints{7, -7};
  std::vector<int16_t> copy(2);
  REQUIRE(scale(copy.data(), ints.data(), 2, DataType::kInt16, 1.0).is_ok());  // 1: a copy
  CHECK(copy == ints);
  auto s = scale(copy.data(), ints.data(), 2, DataType::kInt16, 2.0);
  CHECK(s.code() == common::StatusCode::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("int16"));
  std::vector<uint16_t> half{common::float_to_half(3.0f)};
  REQUIRE(scale(half.data(), half.data(), 1, DataType::kFloat16, -0.5).is_ok());
  CHECK(common::half_to_float(half[0]) == -1.5f);
}

TEST_CASE("scale: the end of a reduction", "[scale]") {
  std::vector<double> sum{6.0, 3.0};
  std::vector<double> out(2);
  REQUIRE(finish_reduction(out.data(), sum.data(), 2, DataType::kFloat64, 3, 1.0).is_ok());
  CHECK(out == std::vector<double>{2.0, 1.0});
  REQUIRE(finish_reduction(out.data(), sum.data(), 2, DataType::kFloat64, 3, 2.0).is_ok());
  CHECK(out == std::vector<double>{4.0, 2.0});
  REQUIRE(finish_reduction(out.data(), sum.data(), 2, DataType::kFloat64, 1, 1.0).is_ok());
  CHECK(out == sum);
  std::vector<int64_t> isum{-7, 7};
  REQUIRE(finish_reduction(isum.data(), isum.data(), 2, DataType::kInt64, 2, 1.0).is_ok());
  CHECK(isum == std::vector<int64_t>{-3, 3});
  CHECK_FALSE(finish_reduction(isum.data(), isum.data(), 2, DataType::kInt64, 2, 0.5).is_ok());
  CHECK_FALSE(finish_reduction(isum.data(), isum.data(), 2, DataType::kInt64, 0, 1.0).is_ok());
}

}  // namespace hvd::runtime
