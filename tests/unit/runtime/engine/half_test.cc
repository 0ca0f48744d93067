#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "common/half.h"

namespace hvd::common {
namespace {

bool is_half_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

// Exact value of a float16 bit pattern, computed independently of half.h.
double half_value(uint16_t h) {
  int exponent = (h >> 10) & 0x1f;
  int mantissa = h & 0x3ff;
  double sign = (h & 0x8000u) != 0 ? -1.0 : 1.0;
  if (exponent == 0x1f) {
    return mantissa == 0 ? sign * std::numeric_limits<double>::infinity()
                         : std::numeric_limits<double>::quiet_NaN();
  }
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

// The conversions are constexpr.
static_assert(half_to_float(0x3c00) == 1.0f);
static_assert(float_to_half(-2.0f) == 0xc000);
static_assert(bfloat16_to_float(0x3f80) == 1.0f);
static_assert(float_to_bfloat16(1.0f) == 0x3f80);

}  // namespace

TEST_CASE("half: all 65536 float16 patterns convert exactly and round-trip", "[half]") {
  int nans = 0;
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    auto h = static_cast<uint16_t>(bits);
    float f = half_to_float(h);
    if (is_half_nan(h)) {
      ++nans;
      REQUIRE(std::isnan(f));
      uint16_t back = float_to_half(f);
      REQUIRE(is_half_nan(back));
      REQUIRE((back & 0x8000u) == (h & 0x8000u));  // sign kept
      continue;
    }
    REQUIRE(static_cast<double>(f) == half_value(h));
    REQUIRE(std::signbit(f) == ((h & 0x8000u) != 0));
    REQUIRE(float_to_half(f) == h);
  }
  CHECK(nans == 2 * 1023);  // 2 signs x 1023 non-zero mantissas
}

TEST_CASE("half: float -> float16 rounds to nearest, ties to even", "[half]") {
  // Between every pair of neighbouring finite halves, check the midpoint and
  // the floats just beside it (exact in float: halves have 11 significant bits).
  for (uint32_t bits = 0; bits < 0x7bff; ++bits) {
    auto lo = static_cast<uint16_t>(bits);
    auto hi = static_cast<uint16_t>(bits + 1);
    float a = half_to_float(lo);
    float b = half_to_float(hi);
    float mid = (a + b) / 2;  // exact
    uint16_t even = (lo & 1u) == 0 ? lo : hi;
    REQUIRE(float_to_half(mid) == even);
    REQUIRE(float_to_half(std::nextafter(mid, 0.0f)) == lo);
    REQUIRE(float_to_half(std::nextafter(mid, 1e9f)) == hi);
    REQUIRE(float_to_half(-mid) == (even | 0x8000u));
  }
}

TEST_CASE("half: float16 overflow, underflow and specials", "[half]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(float_to_half(65504.0f) == 0x7bff);
  CHECK(float_to_half(65519.99f) == 0x7bff);
  CHECK(float_to_half(65520.0f) == 0x7c00);  // the tie rounds to even: infinity
  CHECK(float_to_half(1e10f) == 0x7c00);
  CHECK(float_to_half(std::numeric_limits<float>::max()) == 0x7c00);
  CHECK(float_to_half(-1e10f) == 0xfc00);
  CHECK(float_to_half(inf) == 0x7c00);
  CHECK(float_to_half(-inf) == 0xfc00);
  CHECK(half_to_float(0x7c00) == inf);
  CHECK(half_to_float(0xfc00) == -inf);
  CHECK(is_half_nan(float_to_half(std::numeric_limits<float>::quiet_NaN())));
  CHECK(is_half_nan(float_to_half(std::numeric_limits<float>::signaling_NaN())));
  // A float NaN whose payload lies below float16's mantissa stays NaN.
  CHECK(is_half_nan(float_to_half(std::bit_cast<float>(0x7f800001u))));
  CHECK(float_to_half(0.0f) == 0x0000);
  CHECK(float_to_half(-0.0f) == 0x8000);
  const float tiny = std::ldexp(1.0f, -24);  // the smallest subnormal half
  CHECK(float_to_half(tiny) == 0x0001);
  CHECK(float_to_half(tiny / 2) == 0x0000);  // tie with zero: even
  CHECK(float_to_half(std::nextafter(tiny / 2, 1.0f)) == 0x0001);
  CHECK(float_to_half(tiny * 1.5f) == 0x0002);  // tie between 1 and 2: even
  CHECK(float_to_half(-tiny / 4) == 0x8000);
  CHECK(float_to_half(std::numeric_limits<float>::denorm_min()) == 0x0000);
  CHECK(float_to_half(std::ldexp(1.0f, -14)) == 0x0400);  // smallest normal
  CHECK(float_to_half(std::ldexp(1023.5f, -24)) == 0x0400);  // rounds up into the normals
  CHECK(float_to_half(0.1f) == 0x2e66);
  CHECK(float_to_half(3.14159265f) == 0x4248);
}

TEST_CASE("half: bfloat16 conversions", "[half]") {
  const float inf = std::numeric_limits<float>::infinity();
  // Every bfloat16 pattern: exact to float, and back unchanged (NaN stays NaN).
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    auto b = static_cast<uint16_t>(bits);
    float f = bfloat16_to_float(b);
    REQUIRE(std::bit_cast<uint32_t>(f) == bits << 16);
    if (std::isnan(f)) {
      REQUIRE(std::isnan(bfloat16_to_float(float_to_bfloat16(f))));
    } else {
      REQUIRE(float_to_bfloat16(f) == b);
    }
  }
  CHECK(float_to_bfloat16(1.0f) == 0x3f80);
  CHECK(float_to_bfloat16(-2.0f) == 0xc000);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1).
  CHECK(float_to_bfloat16(std::bit_cast<float>(0x3f808000u)) == 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to even (up).
  CHECK(float_to_bfloat16(std::bit_cast<float>(0x3f818000u)) == 0x3f82);
  CHECK(float_to_bfloat16(std::bit_cast<float>(0x3f808001u)) == 0x3f81);
  CHECK(float_to_bfloat16(std::bit_cast<float>(0x3f807fffu)) == 0x3f80);
  CHECK(float_to_bfloat16(std::numeric_limits<float>::max()) == 0x7f80);  // rounds to infinity
  CHECK(float_to_bfloat16(inf) == 0x7f80);
  CHECK(float_to_bfloat16(-inf) == 0xff80);
  CHECK(float_to_bfloat16(-0.0f) == 0x8000);
  CHECK(float_to_bfloat16(std::numeric_limits<float>::denorm_min()) == 0x0000);
  // NaNs whose payload would be truncated away, or would round to infinity, stay NaN.
  for (uint32_t nan : {0x7f800001u, 0x7fffffffu, 0xff800001u, 0x7fc00000u}) {
    CAPTURE(nan);
    uint16_t b = float_to_bfloat16(std::bit_cast<float>(nan));
    CHECK(std::isnan(bfloat16_to_float(b)));
    CHECK((b & 0x8000u) == ((nan >> 16) & 0x8000u));
  }
}

}  // namespace hvd::common
