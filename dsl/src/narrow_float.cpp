#include "ptxdsl/dsl/narrow_float.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ptxdsl {
namespace {

// A sign-magnitude minifloat: its field widths and the encodings its largest finite value, its
// infinity and its NaN take (0 where the format has none).
struct Minifloat {
  int mantissa_bits;
  int bias;
  std::uint8_t max_finite;  // magnitude bits
  std::uint8_t infinity;
  std::uint8_t nan;
  std::uint8_t nan_instead;  // what NaN converts to where the format has no NaN
};
constexpr Minifloat kE4M3{3, 7, 0x7E, 0, 0x7F, 0};
constexpr Minifloat kE5M2{2, 15, 0x7B, 0x7C, 0x7F, 0};
constexpr Minifloat kE2M1{1, 1, 0x7, 0, 0, 0x7};

int sign_shift(const Minifloat& f) {
  return f.mantissa_bits == 1 ? 3 : 7;
}

double decode(const Minifloat& f, std::uint8_t bits) {
  const int shift = sign_shift(f);
  const std::uint8_t magnitude = bits & ((1u << shift) - 1u);
  const bool negative = (bits >> shift) & 1u;
  if (f.infinity != 0 && magnitude >= f.infinity) {
    if (magnitude > f.infinity) return std::numeric_limits<double>::quiet_NaN();
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  }
  if (f.nan != 0 && magnitude == f.nan) return std::numeric_limits<double>::quiet_NaN();
  const int exponent = magnitude >> f.mantissa_bits;
  const int mantissa = magnitude & ((1 << f.mantissa_bits) - 1);
  const double v = exponent == 0 ? std::ldexp(mantissa, 1 - f.bias - f.mantissa_bits)
                                 : std::ldexp((1 << f.mantissa_bits) + mantissa,
                                              exponent - f.bias - f.mantissa_bits);
  return negative ? -v : v;
}

// Round to nearest even with saturation to the largest finite value (PTX's `.rn.satfinite`).
std::uint8_t encode(const Minifloat& f, double value) {
  const int shift = sign_shift(f);
  if (std::isnan(value)) return f.nan != 0 ? f.nan : f.nan_instead;
  const std::uint8_t sign = std::signbit(value) ? static_cast<std::uint8_t>(1u << shift) : 0;
  const double a = std::fabs(value);
  const double top = decode(f, f.max_finite);
  if (a >= top) return sign | f.max_finite;
  // The quantum of a's binade, or of the subnormals below the smallest normal 2^(1 - bias).
  const int emin = 1 - f.bias;
  const int e = a == 0 ? emin : std::max(std::ilogb(a), emin);
  const double quantum = std::ldexp(1.0, e - f.mantissa_bits);
  const double m = a / quantum;
  double whole = std::floor(m);
  const double frac = m - whole;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(whole, 2.0) != 0)) whole += 1;
  const double r = whole * quantum;
  if (r >= top) return sign | f.max_finite;
  // Encode r exactly: its exponent field and mantissa.
  if (r < std::ldexp(1.0, emin)) {
    return sign | static_cast<std::uint8_t>(r / std::ldexp(1.0, emin - f.mantissa_bits));
  }
  const int re = std::ilogb(r);
  const auto mantissa =
      static_cast<unsigned>(std::ldexp(r, f.mantissa_bits - re)) - (1u << f.mantissa_bits);
  return sign | static_cast<std::uint8_t>(((re + f.bias) << f.mantissa_bits) | mantissa);
}

}  // namespace

std::uint8_t f32_to_e4m3_bits(float value) {
  return encode(kE4M3, value);
}
float e4m3_bits_to_f32(std::uint8_t bits) {
  return static_cast<float>(decode(kE4M3, bits));
}
std::uint8_t f32_to_e5m2_bits(float value) {
  return encode(kE5M2, value);
}
float e5m2_bits_to_f32(std::uint8_t bits) {
  return static_cast<float>(decode(kE5M2, bits));
}
std::uint8_t f32_to_e2m1_bits(float value) {
  return encode(kE2M1, value);
}
float e2m1_bits_to_f32(std::uint8_t bits) {
  return static_cast<float>(decode(kE2M1, bits & 0xFu));
}

std::uint8_t f32_to_ue8m0_bits(float value, bool round_up, bool satfinite) {
  constexpr std::uint8_t kNan = 0xFF, kMax = 0xFE;
  if (std::isnan(value)) return kNan;
  const double a = std::fabs(static_cast<double>(value));
  if (std::isinf(a)) return satfinite ? kMax : kNan;
  if (a <= std::ldexp(1.0, -127)) return 0;  // zero and everything below the smallest scale
  int e = std::ilogb(a);
  if (round_up && a != std::ldexp(1.0, e)) ++e;
  if (e > 127) return satfinite ? kMax : kNan;
  return static_cast<std::uint8_t>(e + 127);
}
float ue8m0_bits_to_f32(std::uint8_t bits) {
  if (bits == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return static_cast<float>(std::ldexp(1.0, bits - 127));
}

}  // namespace ptxdsl
