#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ptxdsl/dsl/half.hpp"
#include "ptxdsl/dsl/ir.hpp"

// Exact floating-point rounding for the executor. A result is computed as a double `x` plus the
// sign of what the double dropped (`sticky`: the true value is x + tiny * sticky), then rounded
// once to the target format in the instruction's mode. Double holds every f16/bf16/f32 operand
// exactly and every sum/product/quotient to within an error whose sign the callers recover exactly
// (TwoSum, fma residuals), so the result is the correctly rounded one in every mode.
namespace ptxdsl::detail {

struct FloatFormat {
  int precision;  // significand bits, hidden bit included
  int emin;       // exponent of the smallest normal
  int emax;       // exponent of the largest finite
};
inline constexpr FloatFormat kF16{11, -14, 15};
inline constexpr FloatFormat kBF16{8, -126, 127};
inline constexpr FloatFormat kF32{24, -126, 127};
inline constexpr FloatFormat kF64{53, -1022, 1023};

inline int sign_of(double v) {
  return v > 0 ? 1 : (v < 0 ? -1 : 0);
}

inline double max_finite(const FloatFormat& f) {
  return std::ldexp(2.0 - std::ldexp(1.0, 1 - f.precision), f.emax);
}
inline double min_normal(const FloatFormat& f) {
  return std::ldexp(1.0, f.emin);
}

// Rounding modes seen on magnitudes.
enum class MagRound : std::uint8_t { Nearest, Down, Up };

inline MagRound magnitude_mode(Rounding r, bool negative) {
  switch (r) {
    case Rounding::Rz:
    case Rounding::Rzi:
      return MagRound::Down;
    case Rounding::Rm:
    case Rounding::Rmi:
      return negative ? MagRound::Up : MagRound::Down;
    case Rounding::Rp:
    case Rounding::Rpi:
      return negative ? MagRound::Down : MagRound::Up;
    default:
      return MagRound::Nearest;
  }
}

// Rounds x + tiny * sticky to format f in mode r (None and Rn: nearest even). Returns a double that
// the format holds exactly, or ±inf, or NaN.
inline double round_to_format(double x, int sticky, Rounding r, const FloatFormat& f) {
  if (!std::isfinite(x) || (x == 0 && sticky == 0)) return x;
  const bool negative = std::signbit(x) ? true : (x == 0 && sticky < 0);
  const MagRound mode = magnitude_mode(r, negative);
  const double ax = std::fabs(x);
  const int st = negative ? -sticky : sticky;  // sign of (true magnitude - ax)
  int e = ax == 0 ? f.emin : std::ilogb(ax);
  if (e < f.emin) e = f.emin;
  const double quantum = std::ldexp(1.0, e - (f.precision - 1));
  const double m = ax / quantum;  // exact: a power-of-two scaling
  const double whole = std::floor(m);
  const double frac = m - whole;
  double result;
  if (frac == 0 && st == 0) {
    result = ax;
  } else if (mode == MagRound::Nearest) {
    const bool up =
        frac > 0.5 || (frac == 0.5 && (st > 0 || (st == 0 && std::fmod(whole, 2.0) != 0)));
    result = (whole + (up ? 1 : 0)) * quantum;
  } else if (mode == MagRound::Up) {
    result = (whole + 1) * quantum;  // frac > 0, or an exact value plus a positive tail
    if (frac == 0 && st < 0) result = ax;
  } else {
    result = whole * quantum;
    if (frac == 0 && st < 0) {
      // Just below an exact value: its predecessor, whose quantum halves at a binade's start.
      const bool binade_start = whole == std::ldexp(1.0, f.precision - 1) && e > f.emin;
      result = ax - (binade_start ? quantum / 2 : quantum);
    }
  }
  const double top = max_finite(f);
  if (result > top) {
    result = mode == MagRound::Down ? top : std::numeric_limits<double>::infinity();
  }
  return negative ? -result : result;
}

inline bool is_subnormal(double v, const FloatFormat& f) {
  return v != 0 && std::fabs(v) < min_normal(f);
}
inline double flush(double v, const FloatFormat& f) {
  return is_subnormal(v, f) ? std::copysign(0.0, v) : v;
}

// ---- encodings ----
inline float f32_of(std::uint64_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits));
}
inline std::uint64_t bits_of(float v) {
  return std::bit_cast<std::uint32_t>(v);
}
inline double f64_of(std::uint64_t bits) {
  return std::bit_cast<double>(bits);
}
inline std::uint64_t bits_of(double v) {
  return std::bit_cast<std::uint64_t>(v);
}

inline constexpr std::uint32_t kCanonicalNanF32 = 0x7FFFFFFFu;
inline constexpr std::uint64_t kCanonicalNanF64 = 0x7FFFFFFFFFFFFFFFull;
inline constexpr std::uint16_t kCanonicalNan16 = 0x7FFFu;

enum class Fmt : std::uint8_t { F16, BF16, F32, F64 };

inline const FloatFormat& format_of(Fmt f) {
  switch (f) {
    case Fmt::F16:
      return kF16;
    case Fmt::BF16:
      return kBF16;
    case Fmt::F32:
      return kF32;
    default:
      return kF64;
  }
}

inline double decode(Fmt f, std::uint64_t bits) {
  switch (f) {
    case Fmt::F16:
      return f16_bits_to_f32(static_cast<std::uint16_t>(bits));
    case Fmt::BF16:
      return bf16_bits_to_f32(static_cast<std::uint16_t>(bits));
    case Fmt::F32:
      return f32_of(bits);
    default:
      return f64_of(bits);
  }
}

// `v` must be exactly representable in f (as round_to_format returns), or ±inf, or NaN.
inline std::uint64_t encode(Fmt f, double v) {
  if (std::isnan(v)) {
    switch (f) {
      case Fmt::F16:
      case Fmt::BF16:
        return kCanonicalNan16;
      case Fmt::F32:
        return kCanonicalNanF32;
      default:
        return kCanonicalNanF64;
    }
  }
  switch (f) {
    case Fmt::F16:
      return f32_to_f16_bits(static_cast<float>(v));
    case Fmt::BF16:
      return f32_to_bf16_bits(static_cast<float>(v));
    case Fmt::F32:
      return bits_of(static_cast<float>(v));
    default:
      return bits_of(v);
  }
}

// ---- exact operations: the double result and the sign of what it dropped ----
struct Exact {
  double x;
  int sticky = 0;
};

inline Exact exact_add(double a, double b) {
  const double s = a + b;
  if (!std::isfinite(s)) return {s};
  const double bb = s - a;
  const double err = (a - (s - bb)) + (b - bb);
  return {s, sign_of(err)};
}
inline Exact exact_mul(double a, double b) {
  const double p = a * b;
  if (!std::isfinite(p) || p == 0) return {p};
  return {p, sign_of(std::fma(a, b, -p))};
}
inline Exact exact_div(double a, double b) {
  const double q = a / b;
  if (!std::isfinite(q) || q == 0 || !std::isfinite(b)) return {q};
  return {q, sign_of(std::fma(-q, b, a)) * sign_of(b)};
}
inline Exact exact_sqrt(double a) {
  const double q = std::sqrt(a);
  if (!std::isfinite(q) || q == 0) return {q};
  return {q, sign_of(std::fma(-q, q, a))};
}
// a * b + c for operands of at most 24 significant bits: the product is exact in double.
inline Exact exact_fma_narrow(double a, double b, double c) {
  const double p = a * b;
  if (!std::isfinite(p)) return {p + c};
  return exact_add(p, c);
}

inline double canonical_min(double a, double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  if (a == b) return std::signbit(a) ? a : b;  // -0 < +0
  return a < b ? a : b;
}
inline double canonical_max(double a, double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

// Round to an integral value in the mode of an integer rounding (rni/rzi/rmi/rpi; others as rni).
inline double round_integral(double v, Rounding r) {
  switch (r) {
    case Rounding::Rzi:
    case Rounding::Rz:
      return std::trunc(v);
    case Rounding::Rmi:
    case Rounding::Rm:
      return std::floor(v);
    case Rounding::Rpi:
    case Rounding::Rp:
      return std::ceil(v);
    default:
      return std::nearbyint(v);  // the host's default mode: nearest even
  }
}

}  // namespace ptxdsl::detail
