#include <cfenv>
#include <cmath>

#include "numeric.hpp"
#include "program.hpp"

// Floating-point arithmetic. f32 in round-to-nearest (what kernels use) runs on the host FPU
// directly; every other mode, ftz, sat, f16/bf16 and packed pairs go through the exact path
// (numeric.hpp). Approximate instructions (rsqrt, ex2, lg2, tanh, sin, cos, rcp/div/sqrt
// .approx) return the exact function's value computed in double precision and rounded once to the
// format: within every error bound PTX documents for them (tanh.approx: 2^-11 relative for f32,
// 2^-10.987 absolute for f16, 2^-8 for bf16; sin/cos.approx.f32: 2^-20.5 absolute on
// [-2 pi, 2 pi]), though not the GPU's own approximation.
namespace ptxdsl::detail {
namespace {

inline std::uint64_t canonical_f32(float v) {
  return v != v ? kCanonicalNanF32 : bits_of(v);
}

template <Op O>
void fast_f32_binary(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  const std::uint64_t* b = c.row(in.src[1]);
  each_lane(exec, [&](std::uint32_t l) {
    const float x = f32_of(a[l]), y = f32_of(b[l]);
    float r;
    if constexpr (O == Op::Add) {
      r = x + y;
    } else if constexpr (O == Op::Sub) {
      r = x - y;
    } else if constexpr (O == Op::Mul) {
      r = x * y;
    } else if constexpr (O == Op::Div) {
      r = x / y;
    } else if constexpr (O == Op::Min) {
      r = static_cast<float>(canonical_min(x, y));
    } else {
      r = static_cast<float>(canonical_max(x, y));
    }
    d[l] = canonical_f32(r);
  });
}

void fast_f32_fma(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  const std::uint64_t* b = c.row(in.src[1]);
  const std::uint64_t* cc = c.row(in.src[2]);
  each_lane(exec, [&](std::uint32_t l) {
    d[l] = canonical_f32(std::fma(f32_of(a[l]), f32_of(b[l]), f32_of(cc[l])));
  });
}

template <Op O>
void fast_f32_unary(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  each_lane(exec, [&](std::uint32_t l) {
    const float x = f32_of(a[l]);
    float r;
    if constexpr (O == Op::Sqrt) {
      r = std::sqrt(x);
    } else if constexpr (O == Op::Rcp) {
      r = 1.0f / x;
    } else if constexpr (O == Op::Rsqrt) {
      r = static_cast<float>(1.0 / std::sqrt(static_cast<double>(x)));
    } else if constexpr (O == Op::Ex2) {
      r = static_cast<float>(std::exp2(static_cast<double>(x)));
    } else {
      r = static_cast<float>(std::log2(static_cast<double>(x)));
    }
    d[l] = canonical_f32(r);
  });
}

// f64 fma in a directed mode: the one place the host's rounding mode is switched.
double fma_f64_directed(double a, double b, double c, Rounding r) {
  int mode = FE_TONEAREST;
  switch (r) {
    case Rounding::Rz:
      mode = FE_TOWARDZERO;
      break;
    case Rounding::Rm:
      mode = FE_DOWNWARD;
      break;
    case Rounding::Rp:
      mode = FE_UPWARD;
      break;
    default:
      break;
  }
  volatile double va = a, vb = b, vc = c;
  std::fesetround(mode);
  volatile double out = std::fma(va, vb, vc);
  std::fesetround(FE_TONEAREST);
  return out;
}

// One scalar lane of any float op in any mode.
template <Fmt F>
std::uint64_t float_lane(const DInstr& in, std::uint64_t ab, std::uint64_t bb, std::uint64_t cb) {
  const FloatFormat& f = format_of(F);
  double a = decode(F, ab), b = decode(F, bb), c = decode(F, cb);
  if (in.ftz) {
    a = flush(a, f);
    b = flush(b, f);
    c = flush(c, f);
  }
  Rounding mode = in.rounding;
  if (mode == Rounding::None || in.precision != Precision::Exact) mode = Rounding::Rn;
  Exact e{0};
  switch (in.op) {
    case Op::Add:
      e = exact_add(a, b);
      break;
    case Op::Sub:
      e = exact_add(a, -b);
      break;
    case Op::Mul:
      e = exact_mul(a, b);
      break;
    case Op::Fma:
    case Op::Mad:
      if constexpr (F == Fmt::F64) {
        e = {mode == Rounding::Rn ? std::fma(a, b, c) : fma_f64_directed(a, b, c, mode)};
        mode = Rounding::Rn;
      } else {
        e = exact_fma_narrow(a, b, c);
      }
      break;
    case Op::Div:
      e = exact_div(a, b);
      break;
    case Op::Rcp:
      e = exact_div(1.0, a);
      break;
    case Op::Sqrt:
      e = exact_sqrt(a);
      break;
    case Op::Rsqrt:
      e = {1.0 / std::sqrt(a)};
      break;
    case Op::Ex2:
      e = {std::exp2(a)};
      break;
    case Op::Lg2:
      e = {std::log2(a)};
      break;
    case Op::Tanh:
      e = {std::tanh(a)};
      break;
    case Op::Sin:
      e = {std::sin(a)};
      break;
    case Op::Cos:
      e = {std::cos(a)};
      break;
    case Op::Min:
      e = {canonical_min(a, b)};
      break;
    case Op::Max:
      e = {canonical_max(a, b)};
      break;
    case Op::Abs:
      e = {std::fabs(a)};
      break;
    case Op::Neg:
      e = {-a};
      break;
    default:
      break;
  }
  if (e.x == 0 && e.sticky == 0 && mode == Rounding::Rm &&
      (in.op == Op::Add || in.op == Op::Sub ||
       ((in.op == Op::Fma || in.op == Op::Mad) && F != Fmt::F64))) {
    // An exact zero sum is -0 when rounding down, unless both addends are +0.
    const double p = in.op == Op::Add ? a : (in.op == Op::Sub ? a : a * b);
    const double q = in.op == Op::Add ? b : (in.op == Op::Sub ? -b : c);
    e.x = !std::signbit(p) && !std::signbit(q) ? 0.0 : -0.0;
  }
  double r = round_to_format(e.x, e.sticky, mode, f);
  if (in.ftz) r = flush(r, f);
  if (in.sat) r = std::isnan(r) ? 0.0 : std::fmin(std::fmax(r, 0.0), 1.0);
  if ((in.op == Op::Abs || in.op == Op::Neg) && std::isnan(r)) {
    // abs/neg act on the sign bit of whatever NaN came in.
    const int bits = F == Fmt::F32 ? 31 : (F == Fmt::F64 ? 63 : 15);
    const std::uint64_t sign = std::uint64_t{1} << bits;
    return in.op == Op::Abs ? (ab & ~sign) : (ab ^ sign);
  }
  return encode(F, r);
}

template <Fmt F>
void generic(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  const std::uint64_t* b = in.nsrc > 1 ? c.row(in.src[1]) : a;
  const std::uint64_t* cc = in.nsrc > 2 ? c.row(in.src[2]) : a;
  each_lane(exec, [&](std::uint32_t l) { d[l] = float_lane<F>(in, a[l], b[l], cc[l]); });
}

// f16x2 / bf16x2: the op on each half.
template <Fmt F>
void generic_pair(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  const std::uint64_t* b = in.nsrc > 1 ? c.row(in.src[1]) : a;
  const std::uint64_t* cc = in.nsrc > 2 ? c.row(in.src[2]) : a;
  each_lane(exec, [&](std::uint32_t l) {
    std::uint64_t out = 0;
    for (int half = 0; half < 2; ++half) {
      const int s = 16 * half;
      out |= (float_lane<F>(in, (a[l] >> s) & 0xFFFF, (b[l] >> s) & 0xFFFF, (cc[l] >> s) & 0xFFFF) &
              0xFFFF)
             << s;
    }
    d[l] = out;
  });
}

// f32 in round-to-nearest without ftz or sat: the host FPU's own operations.
template <Op O>
Handler fast_f32(const Instr& in) {
  const bool nearest = in.rounding == Rounding::None || in.rounding == Rounding::Rn;
  if (in.ftz || in.sat || !nearest) return nullptr;
  if constexpr (O == Op::Add || O == Op::Sub || O == Op::Mul || O == Op::Div || O == Op::Min ||
                O == Op::Max) {
    return &fast_f32_binary<O>;
  } else if constexpr (O == Op::Fma || O == Op::Mad) {
    return &fast_f32_fma;
  } else if constexpr (O == Op::Sqrt || O == Op::Rcp || O == Op::Rsqrt || O == Op::Ex2 ||
                       O == Op::Lg2) {
    return &fast_f32_unary<O>;
  } else {
    return nullptr;
  }
}

// copysign d, a, b: b with a's sign bit, NaNs included.
template <int kSignBit>
void copysign(Ctx& c, const DInstr& in, std::uint32_t exec) {
  constexpr std::uint64_t kSign = std::uint64_t{1} << kSignBit;
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  const std::uint64_t* b = c.row(in.src[1]);
  each_lane(exec, [&](std::uint32_t l) { d[l] = (a[l] & kSign) | (b[l] & (kSign - 1)); });
}

}  // namespace

Handler select_copysign(const Instr& in) {
  return in.type == ScalarType::F64 ? &copysign<63> : &copysign<31>;
}

// The semantics the instruction table names: op O over the float types.
template <Op O>
Handler select_float_op(const Instr& in) {
  if constexpr (O == Op::Rem) return nullptr;  // integers only
  if (in.mul == MulMode::Hi || in.mul == MulMode::Wide) return nullptr;
  switch (in.type) {
    case ScalarType::F32:
      if (Handler h = fast_f32<O>(in)) return h;
      return &generic<Fmt::F32>;
    case ScalarType::F64:
      return &generic<Fmt::F64>;
    case ScalarType::F16:
      return &generic<Fmt::F16>;
    case ScalarType::BF16:
      return &generic<Fmt::BF16>;
    case ScalarType::F16x2:
      return &generic_pair<Fmt::F16>;
    case ScalarType::BF16x2:
      return &generic_pair<Fmt::BF16>;
    default:
      return nullptr;
  }
}

template Handler select_float_op<Op::Add>(const Instr&);
template Handler select_float_op<Op::Sub>(const Instr&);
template Handler select_float_op<Op::Mul>(const Instr&);
template Handler select_float_op<Op::Mad>(const Instr&);
template Handler select_float_op<Op::Fma>(const Instr&);
template Handler select_float_op<Op::Div>(const Instr&);
template Handler select_float_op<Op::Rem>(const Instr&);
template Handler select_float_op<Op::Min>(const Instr&);
template Handler select_float_op<Op::Max>(const Instr&);
template Handler select_float_op<Op::Abs>(const Instr&);
template Handler select_float_op<Op::Neg>(const Instr&);
template Handler select_float_op<Op::Rcp>(const Instr&);
template Handler select_float_op<Op::Sqrt>(const Instr&);
template Handler select_float_op<Op::Rsqrt>(const Instr&);
template Handler select_float_op<Op::Ex2>(const Instr&);
template Handler select_float_op<Op::Lg2>(const Instr&);
template Handler select_float_op<Op::Tanh>(const Instr&);
template Handler select_float_op<Op::Sin>(const Instr&);
template Handler select_float_op<Op::Cos>(const Instr&);

}  // namespace ptxdsl::detail
