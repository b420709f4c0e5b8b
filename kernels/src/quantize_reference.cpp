#include "ptxdsl/kernels/quantize_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace ptxdsl::kernels {
namespace {

// An FP8 or FP4 format: mantissa bits, exponent bias, its largest finite code (positive side)
// and its sign bit.
struct Minifloat {
  int mantissa_bits, bias;
  std::uint8_t max_code, sign;
};
constexpr Minifloat kE4m3{3, 7, 0x7E, 0x80};   // S.1111.111 is NaN; no infinity
constexpr Minifloat kE5m2{2, 15, 0x7B, 0x80};  // S.11111.00 is infinity
constexpr Minifloat kE2m1{1, 1, 0x7, 0x8};     // 0, 0.5, 1, 1.5, 2, 3, 4, 6; no NaN, no infinity

const Minifloat& format_of(Quant quant) {
  if (quant == Quant::Nvfp4) return kE2m1;
  return quant == Quant::Fp8E5m2 ? kE5m2 : kE4m3;  // mxfp8's elements are e4m3
}

// NVIDIA's NVFP4 (the PTX ISA's e2m1x2 with a ue4m3 scale per 16 elements and a global f32):
// s = e4m3(absmax / 6 / global), q = e2m1(y / (s·global)); where s·global is 0, y / +inf (q 0).
float nvfp4_divisor(float absmax, float global, float& scale) {
  scale = static_cast<float>(
      quant_value(Quant::Fp8E4m3, quant_code(Quant::Fp8E4m3, absmax / 6.0f / global)));
  const float d = scale * global;
  return d == 0.0f ? INFINITY : d;
}

// OCP Microscaling Formats (MX) v1.0, 6.3: the shared exponent floor(log2(absmax)) − emax of the
// element format (e4m3: 8), as a ue8m0 byte within [−127, 127] (absmax 0: −127).
int mx_exponent(float absmax) {
  if (absmax == 0.0f) return -127;
  return std::clamp(std::ilogb(absmax) - 8, -127, 127);
}

double magnitude(const Minifloat& f, std::uint8_t code) {
  const int e = (code & (f.sign - 1)) >> f.mantissa_bits;
  const int m = code & ((1 << f.mantissa_bits) - 1);
  if (e == 0) return std::ldexp(m, 1 - f.bias - f.mantissa_bits);
  return std::ldexp((1 << f.mantissa_bits) + m, e - f.bias - f.mantissa_bits);
}

// Signed steps from zero: codes of one sign are ordered by magnitude.
int ordinal(Quant quant, std::uint8_t code) {
  if (quant == Quant::Int8) return static_cast<std::int8_t>(code);
  const Minifloat& f = format_of(quant);
  return (code & f.sign) ? -(code & (f.sign - 1)) : (code & (f.sign - 1));
}

}  // namespace

double quant_value(Quant quant, std::uint8_t code) {
  if (quant == Quant::Int8) return static_cast<std::int8_t>(code);
  const Minifloat& f = format_of(quant);
  const double m = magnitude(f, code);
  return (code & f.sign) ? -m : m;
}

std::uint8_t quant_code(Quant quant, float v) {
  if (quant == Quant::Int8) {
    const float r = std::clamp(std::nearbyint(v), -127.0f, 127.0f);  // ties to even
    return static_cast<std::uint8_t>(static_cast<std::int8_t>(r));
  }
  const Minifloat& f = format_of(quant);
  const std::uint8_t sign = std::signbit(v) ? f.sign : 0x00;
  const double a = std::fabs(static_cast<double>(v));
  if (a >= magnitude(f, f.max_code)) return sign | f.max_code;  // satfinite
  std::uint8_t best = 0;
  for (std::uint8_t c = 1; c <= f.max_code; ++c) {
    const double d = std::fabs(magnitude(f, c) - a), best_d = std::fabs(magnitude(f, best) - a);
    if (d < best_d || (d == best_d && (c & 1) == 0)) best = c;
  }
  return sign | best;  // past the largest value: the largest (satfinite)
}

int quant_steps(Quant quant, std::uint8_t a, std::uint8_t b) {
  return std::abs(ordinal(quant, a) - ordinal(quant, b));
}

QuantizedRows quantize_rows(const NormSpec& spec, std::span<const float> y, std::uint32_t batch,
                            float static_scale) {
  const std::uint32_t width = spec.width, group = quant_group(spec);
  QuantizedRows out;
  out.q.resize(static_cast<std::size_t>(batch) * width);
  for (std::uint32_t r = 0; r < batch; ++r) {
    const std::size_t row = static_cast<std::size_t>(r) * width;
    for (std::uint32_t first = 0; first < width; first += group == 0 ? width : group) {
      const std::uint32_t last = group == 0 ? width : std::min(width, first + group);
      float absmax = 0.0f;
      for (std::uint32_t i = first; i < last; ++i) absmax = std::max(absmax, std::fabs(y[row + i]));
      float divisor = static_scale;
      if (spec.quant == Quant::Nvfp4) {
        float scale = 0.0f;
        divisor = nvfp4_divisor(absmax, static_scale, scale);
        out.scale.push_back(scale);
      } else if (spec.quant == Quant::Mxfp8) {
        divisor = std::ldexp(1.0f, mx_exponent(absmax));  // y / 2^e: exact
        out.scale.push_back(divisor);
      } else if (group > 0) {
        const float scale = absmax / quant_max(spec.quant);
        out.scale.push_back(scale);
        divisor = absmax == 0.0f ? 1.0f : scale;
      }
      for (std::uint32_t i = first; i < last; ++i) {
        out.q[row + i] = quant_code(spec.quant, y[row + i] / divisor);
      }
    }
  }
  return out;
}

QuantizedRows quantize_rows(Quant quant, std::span<const float> y, std::uint32_t batch,
                            std::uint32_t width) {
  NormSpec spec;
  spec.quant = quant;
  spec.width = width;
  return quantize_rows(spec, y, batch);
}

}  // namespace ptxdsl::kernels
