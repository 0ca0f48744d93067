#include "runtime/engine/fusion_buffer.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "common/half.h"

namespace hvd::runtime::engine {

TEST_CASE("fusion buffer: pack with prescale, unpack with average and postscale", "[fusion_buffer]") {
  FusionBuffer buffer;
  std::vector<float> a{1, 2, 3};
  std::vector<float> b{10, 20};
  std::vector<float> out_a(3), out_b(2);
  std::vector<FusionPart> parts{{a.data(), out_a.data(), 3}, {b.data(), out_b.data(), 2}};
  auto packed = buffer.pack(parts, DataType::kFloat32, ReduceOp::kSum, 2.0);
  REQUIRE(packed.is_ok());
  CHECK(packed.value() == 20);
  const float* raw = reinterpret_cast<const float*>(buffer.data());
  CHECK(std::vector<float>(raw, raw + 5) == std::vector<float>{2, 4, 6, 20, 40});
  // Pretend two ranks summed: double everything, then average over 2 and x 0.5.
  auto* mut = reinterpret_cast<float*>(buffer.data());
  for (int i = 0; i < 5; ++i) mut[i] *= 2;
  REQUIRE(buffer.unpack(parts, DataType::kFloat32, 2, 0.5).is_ok());
  CHECK(out_a == std::vector<float>{1, 2, 3});
  CHECK(out_b == std::vector<float>{10, 20});
  // Input untouched.
  CHECK(a == std::vector<float>{1, 2, 3});
}

TEST_CASE("fusion buffer: integers divide and scale, truncating", "[fusion_buffer]") {
  FusionBuffer buffer;
  std::vector<int32_t> a{-3, 3, 7};
  std::vector<int32_t> out(3);
  std::vector<FusionPart> parts{{a.data(), out.data(), 3}};
  REQUIRE(buffer.pack(parts, DataType::kInt32, ReduceOp::kAverage, 1.0).is_ok());
  REQUIRE(buffer.unpack(parts, DataType::kInt32, 2, 1.0).is_ok());
  CHECK(out == std::vector<int32_t>{-1, 1, 3});
  REQUIRE(buffer.pack(parts, DataType::kInt32, ReduceOp::kSum, 0.5).is_ok());  // -1, 1, 3
  REQUIRE(buffer.unpack(parts, DataType::kInt32, 1, 2.5).is_ok());
  CHECK(out == std::vector<int32_t>{-2, 2, 7});  // -2.5, 2.5, 7.5
  std::vector<uint8_t> flags{1};
  std::vector<FusionPart> bools{{flags.data(), flags.data(), 1}};
  CHECK_FALSE(buffer.pack(bools, DataType::kBool, ReduceOp::kSum, 0.5).is_ok());
}

TEST_CASE("fusion buffer: joined ranks contribute the identity; outputs may be absent",
          "[fusion_buffer]") {
  FusionBuffer buffer;
  std::vector<FusionPart> parts{{nullptr, nullptr, 2}, {nullptr, nullptr, 1}};
  REQUIRE(buffer.pack(parts, DataType::kFloat64, ReduceOp::kProduct, 5.0).is_ok());
  const double* d = reinterpret_cast<const double*>(buffer.data());
  CHECK(d[0] == 1.0);  // the identity is not scaled
  CHECK(d[2] == 1.0);
  REQUIRE(buffer.unpack(parts, DataType::kFloat64, 1, 1.0).is_ok());

  REQUIRE(buffer.pack(parts, DataType::kInt16, ReduceOp::kMin, 1.0).is_ok());
  CHECK(reinterpret_cast<const int16_t*>(buffer.data())[0] == std::numeric_limits<int16_t>::max());
  REQUIRE(buffer.pack(parts, DataType::kFloat32, ReduceOp::kMax, 1.0).is_ok());
  CHECK(std::isinf(reinterpret_cast<const float*>(buffer.data())[0]));
  REQUIRE(buffer.pack(parts, DataType::kBool, ReduceOp::kMin, 1.0).is_ok());
  CHECK(buffer.data()[0] == 1);
  REQUIRE(buffer.pack(parts, DataType::kBool, ReduceOp::kSum, 1.0).is_ok());
  CHECK(buffer.data()[0] == 0);
  REQUIRE(buffer.pack(parts, DataType::kFloat16, ReduceOp::kProduct, 1.0).is_ok());
  CHECK(reinterpret_cast<const uint16_t*>(buffer.data())[0] == common::float_to_half(1.0f));
  REQUIRE(buffer.pack(parts, DataType::kBFloat16, ReduceOp::kMax, 1.0).is_ok());
  CHECK(std::isinf(common::bfloat16_to_float(reinterpret_cast<const uint16_t*>(buffer.data())[0])));
}

TEST_CASE("fusion buffer: reused, grows only when needed", "[fusion_buffer]") {
  FusionBuffer buffer;
  uint8_t* first = buffer.reserve(1000);
  CHECK(buffer.capacity() >= 1000);
  CHECK(buffer.reserve(500) == first);
  CHECK(buffer.reserve(1000) == first);
  buffer.reserve(5000);
  CHECK(buffer.capacity() >= 5000);
  size_t grown = buffer.capacity();
  buffer.reserve(10);
  CHECK(buffer.capacity() == grown);
}

TEST_CASE("fusion buffer: float16 and bfloat16 scale through float", "[fusion_buffer]") {
  FusionBuffer buffer;
  std::vector<uint16_t> h{common::float_to_half(1.5f), common::float_to_half(-2.0f)};
  std::vector<uint16_t> out(2);
  std::vector<FusionPart> parts{{h.data(), out.data(), 2}};
  REQUIRE(buffer.pack(parts, DataType::kFloat16, ReduceOp::kSum, 2.0).is_ok());
  REQUIRE(buffer.unpack(parts, DataType::kFloat16, 3, 1.0).is_ok());
  CHECK(common::half_to_float(out[0]) == common::half_to_float(common::float_to_half(1.0f)));
  CHECK(common::half_to_float(out[1]) ==
        common::half_to_float(common::float_to_half(-4.0f / 3.0f)));
}

}  // namespace hvd::runtime::engine
