// IEEE 754 binary16 ("float16", "half") and bfloat16 <-> float conversions,
// bit-exact and independent of the FPU's rounding mode and flush-to-zero
// flags (integer arithmetic only).
//
// float -> float16 and float -> bfloat16 round to nearest, ties to even;
// values too large become infinity, too small become (signed) zero or a
// float16 subnormal. NaN stays NaN (quiet, sign and high payload bits kept).
// float16 -> float and bfloat16 -> float are exact.
#pragma once

#include <bit>
#include <cstdint>

namespace hvd::common {

constexpr float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits = 0;
  if (exponent == 0x1f) {  // infinity, NaN (payload kept)
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {  // normal: rebias 15 -> 127
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {  // signed zero
    bits = sign;
  } else {  // subnormal mantissa * 2^-24: normalize
    uint32_t e = 113;  // the exponent field of 2^-14
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

constexpr uint16_t float_to_half(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) {  // NaN: quiet, keep the top payload bits
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  }
  if (abs >= 0x477ff000u) {  // >= 65520 (halfway past 65504, ties to even): infinity
    return static_cast<uint16_t>(sign | 0x7c00u);
  }
  if (abs >= 0x38800000u) {  // >= 2^-14: a normal half
    uint32_t odd = (abs >> 13) & 1u;
    abs += 0xfffu + odd;           // round to nearest even; a carry bumps the exponent
    abs -= uint32_t{112} << 23;    // rebias 127 -> 15
    return static_cast<uint16_t>(sign | (abs >> 13));
  }
  uint32_t exponent = abs >> 23;
  if (exponent < 102) return sign;  // < 2^-25: rounds to zero
  // A subnormal half (or the smallest normal, after rounding up): the value
  // is significand * 2^(exponent - 150), in units of 2^-24.
  uint32_t significand = (abs & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126 - exponent;  // 14..24
  uint32_t q = significand >> shift;
  uint32_t rest = significand & ((1u << shift) - 1);
  uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (q & 1u) != 0)) ++q;
  return static_cast<uint16_t>(sign | q);
}

constexpr float bfloat16_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

constexpr uint16_t float_to_bfloat16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {  // NaN: truncate and set the quiet bit
    return static_cast<uint16_t>((x >> 16) | 0x0040u);
  }
  x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even; overflow reaches infinity
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace hvd::common
