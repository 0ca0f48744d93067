#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <vector>

#include "common/half.h"
#include "runtime/engine/scale.h"

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
  CHECK(can_scale(DataType::kInt64));
  CHECK(can_scale(DataType::kUInt8));
  CHECK_FALSE(can_scale(DataType::kBool));
  uint8_t flags[] = {1, 0};
  auto s = scale(flags, flags, 2, DataType::kBool, 2.0);
  CHECK(s.code() == common::StatusCode::kInvalidArgument);
  CHECK(s.message() == "scaling by 2.000000 is not supported for bool");
  CHECK(scale(flags, flags, 2, DataType::kBool, 1.0).is_ok());  // 1: a copy
  CHECK_FALSE(finish_reduction(flags, flags, 2, DataType::kBool, 1, 0.5).is_ok());
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
  REQUIRE(scale(copy.data(), ints.data(), 2, DataType::kInt16, 2.0).is_ok());
  CHECK(copy == std::vector<int16_t>{14, -14});
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
  // A factor: one multiplication by factor / divisor in float64, truncated.
  REQUIRE(finish_reduction(isum.data(), isum.data(), 2, DataType::kInt64, 2, 0.5).is_ok());
  CHECK(isum == std::vector<int64_t>{-0, 0});  // -3 * 0.25, 3 * 0.25
  CHECK_FALSE(finish_reduction(isum.data(), isum.data(), 2, DataType::kInt64, 0, 1.0).is_ok());
}

// Horovod's CPU scaling of one element: float64 product, C++ conversion.
template <typename T>
void check_scaled(std::vector<T> in, double factor, std::vector<T> want, DataType type) {
  INFO(common::data_type_name(type) << " x " << factor);
  std::vector<T> out(in.size());
  REQUIRE(scale(out.data(), in.data(), in.size(), type, factor).is_ok());
  CHECK(out == want);
  // The end of a reduction (postscale) scales the same way, in place.
  REQUIRE(finish_reduction(in.data(), in.data(), in.size(), type, 1, factor).is_ok());
  CHECK(in == want);
}

TEST_CASE("scale: every integer type, truncating toward zero", "[scale]") {
  check_scaled<uint8_t>({0, 7, 9, 255}, 0.5, {0, 3, 4, 127}, DataType::kUInt8);
  check_scaled<uint8_t>({3, 100}, 1.5, {4, 150}, DataType::kUInt8);
  check_scaled<int8_t>({-7, 7, -1, 127, -128}, 0.5, {-3, 3, 0, 63, -64}, DataType::kInt8);
  check_scaled<int8_t>({-5, 5}, -0.3, {1, -1}, DataType::kInt8);  // -1.5 and 1.5
  check_scaled<int16_t>({-1001, 1001, 32767}, 0.1, {-100, 100, 3276}, DataType::kInt16);
  check_scaled<int32_t>({-7, 7, -2147483647, 3}, 0.5, {-3, 3, -1073741823, 1},
                        DataType::kInt32);
  check_scaled<int32_t>({10, -10}, 2.75, {27, -27}, DataType::kInt32);
  check_scaled<int64_t>({-7, 7, int64_t{1} << 52}, 0.5, {-3, 3, int64_t{1} << 51},
                        DataType::kInt64);
  check_scaled<int64_t>({-49, 49, 98}, 1.0 / 49, {0, 0, 1}, DataType::kInt64);  // 49 * (1/49) < 1
}

TEST_CASE("scale: integer results outside the type wrap around through int64", "[scale]") {
  check_scaled<int8_t>({100, -100}, 2.0, {-56, 56}, DataType::kInt8);
  check_scaled<uint8_t>({200, 5}, 2.0, {144, 10}, DataType::kUInt8);
  check_scaled<uint8_t>({5}, -1.0, {251}, DataType::kUInt8);
  check_scaled<int16_t>({30000}, 3.0, {24464}, DataType::kInt16);  // 90000 - 65536
  check_scaled<int32_t>({2147483647}, 2.0, {-2}, DataType::kInt32);
  // Beyond int64 (and NaN): int64's minimum, as x86 converts.
  const int64_t min64 = std::numeric_limits<int64_t>::min();
  check_scaled<int64_t>({int64_t{1} << 62}, 4.0, {min64}, DataType::kInt64);
  check_scaled<int32_t>({1 << 30}, 1e300, {0}, DataType::kInt32);  // min64 mod 2^32
}

TEST_CASE("scale: float16 and bfloat16 scale through float", "[scale]") {
  using common::bfloat16_to_float;
  using common::float_to_bfloat16;
  std::vector<uint16_t> half{common::float_to_half(3.0f), common::float_to_half(-0.5f)};
  REQUIRE(scale(half.data(), half.data(), 2, DataType::kFloat16, 0.25).is_ok());
  CHECK(common::half_to_float(half[0]) == 0.75f);
  CHECK(common::half_to_float(half[1]) == -0.125f);
  std::vector<uint16_t> bf{float_to_bfloat16(3.0f), float_to_bfloat16(-1.0f)};
  REQUIRE(finish_reduction(bf.data(), bf.data(), 2, DataType::kBFloat16, 2, 3.0).is_ok());
  CHECK(bfloat16_to_float(bf[0]) == 4.5f);
  CHECK(bfloat16_to_float(bf[1]) == -1.5f);
}

TEST_CASE("scale: where an Average ends (reduction_end)", "[scale]") {
  // Floating types: divide by the size, then the postscale factor.
  ReductionEnd f = reduction_end(DataType::kFloat32, true, 4, 2.0, 3.0);
  CHECK((f.divisor == 4 && f.factor == 3.0));
  f = reduction_end(DataType::kFloat64, false, 4, 2.0, 3.0);
  CHECK((f.divisor == 1 && f.factor == 3.0));
  // Integers without factors: an exact integer division.
  ReductionEnd i = reduction_end(DataType::kInt32, true, 3, 1.0, 1.0);
  CHECK((i.divisor == 3 && i.factor == 1.0));
  // Integers with a factor, pre or post: Horovod's postscale / size.
  i = reduction_end(DataType::kInt32, true, 3, 1.0, 2.0);
  CHECK((i.divisor == 1 && i.factor == 2.0 / 3));
  i = reduction_end(DataType::kUInt8, true, 4, 2.0, 1.0);
  CHECK((i.divisor == 1 && i.factor == 0.25));
  i = reduction_end(DataType::kInt64, false, 4, 2.0, 0.5);  // Sum: no division
  CHECK((i.divisor == 1 && i.factor == 0.5));

  // 49 ranks, each with 1 (a sum of 49): the exact Average is 1. With a
  // prescale of 2 Horovod's fold gives 98 * (1/49) = 1.9999999999999998: 1.
  std::vector<int32_t> sum{49, -49};
  ReductionEnd plain = reduction_end(DataType::kInt32, true, 49, 1.0, 1.0);
  std::vector<int32_t> out(2);
  REQUIRE(finish_reduction(out.data(), sum.data(), 2, DataType::kInt32, plain.divisor,
                           plain.factor).is_ok());
  CHECK(out == std::vector<int32_t>{1, -1});
  std::vector<int32_t> prescaled{98, -98};
  ReductionEnd folded = reduction_end(DataType::kInt32, true, 49, 2.0, 1.0);
  REQUIRE(finish_reduction(out.data(), prescaled.data(), 2, DataType::kInt32, folded.divisor,
                           folded.factor).is_ok());
  CHECK(out == std::vector<int32_t>{1, -1});
  std::vector<int32_t> scaled{-21, 21};  // times 2 (pre), summed over 3 ranks: Average x 1.5
  ReductionEnd avg = reduction_end(DataType::kInt32, true, 3, 2.0, 1.5);
  REQUIRE(finish_reduction(scaled.data(), scaled.data(), 2, DataType::kInt32, avg.divisor,
                           avg.factor).is_ok());
  CHECK(scaled == std::vector<int32_t>{-10, 10});  // -21 * 0.5 = -10.5 -> -10
}

}  // namespace hvd::runtime
