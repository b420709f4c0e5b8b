#include <cmath>
#include <limits>

#include "numeric.hpp"
#include "program.hpp"
#include "ptxdsl/dsl/narrow_float.hpp"

// cvt between every pair of types the DSL has, in every rounding mode, with ftz and saturation;
// the two-f32-to-packed-pair forms (`cvt.rn.f16x2.f32 d, hi, lo`, FP8, FP4 and ue8m0 pairs) and
// the pair-to-pair forms (`cvt.rn.f16x2.e4m3x2 d, a`).
namespace ptxdsl::detail {
namespace {

bool is_float_type(ScalarType t) {
  return t == ScalarType::F16 || t == ScalarType::BF16 || t == ScalarType::F32 ||
         t == ScalarType::F64;
}

Fmt fmt_of(ScalarType t) {
  switch (t) {
    case ScalarType::F16:
      return Fmt::F16;
    case ScalarType::BF16:
      return Fmt::BF16;
    case ScalarType::F32:
      return Fmt::F32;
    default:
      return Fmt::F64;
  }
}

int bits_of_type(ScalarType t) {
  return size_bytes(t) * 8;
}

// An integer register's value, sign- or zero-extended.
__int128 int_value(ScalarType t, std::uint64_t bits) {
  switch (t) {
    case ScalarType::S32:
      return static_cast<std::int32_t>(bits);
    case ScalarType::S64:
      return static_cast<std::int64_t>(bits);
    case ScalarType::S8:
      return static_cast<std::int8_t>(bits);
    default: {
      const int n = bits_of_type(t);
      return n == 64 ? static_cast<__int128>(bits)
                     : static_cast<__int128>(bits & ((std::uint64_t{1} << n) - 1));
    }
  }
}

__int128 int_min(ScalarType t) {
  if (t == ScalarType::S8) return std::numeric_limits<std::int8_t>::min();
  if (t == ScalarType::S32) return std::numeric_limits<std::int32_t>::min();
  if (t == ScalarType::S64) return std::numeric_limits<std::int64_t>::min();
  return 0;
}
__int128 int_max(ScalarType t) {
  if (t == ScalarType::S8) return std::numeric_limits<std::int8_t>::max();
  if (t == ScalarType::S32) return std::numeric_limits<std::int32_t>::max();
  if (t == ScalarType::S64) return std::numeric_limits<std::int64_t>::max();
  const int n = bits_of_type(t);
  return (static_cast<__int128>(1) << n) - 1;
}

std::uint64_t int_bits(ScalarType t, __int128 v) {
  // An s8 result fills its 16-bit register sign-extended, as ld.s8 does.
  if (t == ScalarType::S8) return static_cast<std::uint16_t>(static_cast<std::int16_t>(v));
  const int n = bits_of_type(t);
  const auto u = static_cast<unsigned __int128>(v);
  return n == 64 ? static_cast<std::uint64_t>(u)
                 : static_cast<std::uint64_t>(u & ((static_cast<unsigned __int128>(1) << n) - 1));
}

// A float value as an exact double, flushed when .ftz applies to it (f32 only).
double float_source(const DInstr& in, std::uint64_t bits) {
  double v = decode(fmt_of(in.src_type), bits);
  if (in.ftz && in.src_type == ScalarType::F32) v = flush(v, kF32);
  return v;
}

// An integer as a double plus the sign of what the double dropped (64-bit values).
Exact int_source(ScalarType t, std::uint64_t bits) {
  const __int128 v = int_value(t, bits);
  const double hi = static_cast<double>(v);
  const __int128 rest = v - static_cast<__int128>(hi);
  return {hi, rest > 0 ? 1 : (rest < 0 ? -1 : 0)};
}

std::uint64_t to_float(const DInstr& in, Exact x) {
  const Fmt f = fmt_of(in.type);
  const FloatFormat& fmt = format_of(f);
  double r;
  const Rounding rnd = in.rounding;
  if (rnd == Rounding::Rni || rnd == Rounding::Rzi || rnd == Rounding::Rmi ||
      rnd == Rounding::Rpi) {
    r = round_to_format(round_integral(x.x, rnd), 0, Rounding::Rn, fmt);
  } else {
    r = round_to_format(x.x, x.sticky, rnd == Rounding::None ? Rounding::Rn : rnd, fmt);
  }
  if (in.ftz && in.type == ScalarType::F32) r = flush(r, kF32);
  if (in.sat) r = std::isnan(r) ? 0.0 : std::fmin(std::fmax(r, 0.0), 1.0);
  return encode(f, r);
}

std::uint64_t float_to_int(const DInstr& in, double v) {
  if (std::isnan(v)) return 0;
  const double r = round_integral(v, in.rounding);
  const __int128 lo = int_min(in.type), hi = int_max(in.type);
  __int128 out;
  if (r <= static_cast<double>(lo)) {
    out = lo;
  } else if (r >= static_cast<double>(hi)) {
    out = hi;
  } else {
    out = static_cast<__int128>(r);
  }
  return int_bits(in.type, out);
}

std::uint64_t convert_lane(const DInstr& in, std::uint64_t bits) {
  const bool from_float = is_float_type(in.src_type);
  if (is_float_type(in.type)) {
    return to_float(in, from_float ? Exact{float_source(in, bits)} : int_source(in.src_type, bits));
  }
  if (from_float) return float_to_int(in, float_source(in, bits));
  __int128 v = int_value(in.src_type, bits);
  if (in.sat) v = std::min(std::max(v, int_min(in.type)), int_max(in.type));
  return int_bits(in.type, v);
}

void convert(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  each_lane(exec, [&](std::uint32_t l) { d[l] = convert_lane(in, a[l]); });
}

// ---- fast paths for what the kernels run per element ----
void f32_from_f16(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  each_lane(exec, [&](std::uint32_t l) {
    const float v = f16_bits_to_f32(static_cast<std::uint16_t>(a[l]));
    d[l] = v != v ? kCanonicalNanF32 : bits_of(v);
  });
}
void f32_from_bf16(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  each_lane(exec, [&](std::uint32_t l) {
    const float v = bf16_bits_to_f32(static_cast<std::uint16_t>(a[l]));
    d[l] = v != v ? kCanonicalNanF32 : bits_of(v);
  });
}
void f16_from_f32(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  each_lane(exec, [&](std::uint32_t l) {
    const float v = f32_of(a[l]);
    d[l] = v != v ? kCanonicalNan16 : f32_to_f16_bits(v);
  });
}
void bf16_from_f32(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  each_lane(exec, [&](std::uint32_t l) {
    const float v = f32_of(a[l]);
    d[l] = v != v ? kCanonicalNan16 : f32_to_bf16_bits(v);
  });
}
template <class I>
void f32_from_int(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  each_lane(exec,
            [&](std::uint32_t l) { d[l] = bits_of(static_cast<float>(static_cast<I>(a[l]))); });
}

// ---- cvt.rn.satfinite.e4m3x2.f32 d, hi, lo and its FP4 and ue8m0 kin ----
// One f32 to its narrow encoding, by the pair type it goes into.
template <ScalarType Pair>
std::uint64_t narrow_one(const DInstr& in, std::uint64_t bits) {
  const float v = f32_of(bits);
  if constexpr (Pair == ScalarType::E4M3x2) return f32_to_e4m3_bits(v);
  if constexpr (Pair == ScalarType::E5M2x2) return f32_to_e5m2_bits(v);
  if constexpr (Pair == ScalarType::E2M1x2) return f32_to_e2m1_bits(v);
  return f32_to_ue8m0_bits(v, in.rounding == Rounding::Rp, in.sat);
}

template <ScalarType Pair>
void pack_narrow(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* hi = c.row(in.src[0]);
  const std::uint64_t* lo = c.row(in.src[1]);
  constexpr int kShift = Pair == ScalarType::E2M1x2 ? 4 : 8;
  each_lane(exec, [&](std::uint32_t l) {
    d[l] = (narrow_one<Pair>(in, hi[l]) << kShift) | narrow_one<Pair>(in, lo[l]);
  });
}

// ---- cvt.rn.f16x2.e4m3x2 d, a (exact), cvt.rn.satfinite.e4m3x2.f16x2 d, a ----
std::uint64_t f16_of_narrow(ScalarType from, std::uint64_t bits) {
  const auto b = static_cast<std::uint8_t>(bits);
  float v = 0;
  switch (from) {
    case ScalarType::E4M3x2:
      v = e4m3_bits_to_f32(b);
      break;
    case ScalarType::E5M2x2:
      v = e5m2_bits_to_f32(b);
      break;
    default:
      v = e2m1_bits_to_f32(b);
      break;
  }
  return v != v ? kCanonicalNan16 : f32_to_f16_bits(v);
}

void widen_pair(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  const int shift = in.src_type == ScalarType::E2M1x2 ? 4 : 8;
  const std::uint64_t mask = (std::uint64_t{1} << shift) - 1;
  each_lane(exec, [&](std::uint32_t l) {
    if (in.src_type == ScalarType::UE8M0x2) {
      const auto half = [](std::uint64_t b) -> std::uint64_t {
        const float v = ue8m0_bits_to_f32(static_cast<std::uint8_t>(b));
        return v != v ? kCanonicalNan16 : f32_to_bf16_bits(v);
      };
      d[l] = (half((a[l] >> 8) & 0xFF) << 16) | half(a[l] & 0xFF);
      return;
    }
    d[l] = (f16_of_narrow(in.src_type, (a[l] >> shift) & mask) << 16) |
           f16_of_narrow(in.src_type, a[l] & mask);
  });
}

void narrow_f16_pair(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  const auto one = [&](std::uint64_t half) -> std::uint64_t {
    const float v = f16_bits_to_f32(static_cast<std::uint16_t>(half));
    return in.type == ScalarType::E4M3x2 ? f32_to_e4m3_bits(v) : f32_to_e5m2_bits(v);
  };
  each_lane(exec, [&](std::uint32_t l) { d[l] = (one(a[l] >> 16) << 8) | one(a[l] & 0xFFFF); });
}

// ---- cvt.rn.f16x2.f32 d, hi, lo ----
template <Fmt F>
void pack_pair(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* hi = c.row(in.src[0]);
  const std::uint64_t* lo = c.row(in.src[1]);
  const FloatFormat& fmt = format_of(F);
  const Rounding r = in.rounding == Rounding::None ? Rounding::Rn : in.rounding;
  const auto one = [&](std::uint64_t bits) -> std::uint64_t {
    const float v = f32_of(bits);
    if (v != v) return kCanonicalNan16;
    if (r == Rounding::Rn && !in.sat) {
      return F == Fmt::F16 ? f32_to_f16_bits(v) : f32_to_bf16_bits(v);
    }
    double x = round_to_format(v, 0, r, fmt);
    if (in.sat && std::isinf(x)) x = std::copysign(max_finite(fmt), x);  // .satfinite
    return encode(F, x);
  };
  each_lane(exec, [&](std::uint32_t l) { d[l] = (one(hi[l]) << 16) | one(lo[l]); });
}

}  // namespace

// The semantics the instruction table names.
Handler select_cvt_pack(const Instr& in) {
  if (in.src_type != ScalarType::F32) return nullptr;
  if (in.type == ScalarType::E4M3x2) return &pack_narrow<ScalarType::E4M3x2>;
  if (in.type == ScalarType::E5M2x2) return &pack_narrow<ScalarType::E5M2x2>;
  if (in.type == ScalarType::E2M1x2) return &pack_narrow<ScalarType::E2M1x2>;
  if (in.type == ScalarType::UE8M0x2) return &pack_narrow<ScalarType::UE8M0x2>;
  if (in.type == ScalarType::F16x2) return &pack_pair<Fmt::F16>;
  if (in.type == ScalarType::BF16x2) return &pack_pair<Fmt::BF16>;
  return nullptr;
}

Handler select_cvt_pair(const Instr& in) {
  return in.src_type == ScalarType::F16x2 ? &narrow_f16_pair : &widen_pair;
}

Handler select_cvt(const Instr& in) {
  const auto ok = [](ScalarType t) {
    return t != ScalarType::Pred && t != ScalarType::F16x2 && t != ScalarType::BF16x2;
  };
  if (!ok(in.type) || !ok(in.src_type)) return nullptr;
  const bool nearest = in.rounding == Rounding::None || in.rounding == Rounding::Rn;
  const bool plain = nearest && !in.ftz && !in.sat;
  if (in.type == ScalarType::F32 && plain) {
    if (in.src_type == ScalarType::F16) return &f32_from_f16;
    if (in.src_type == ScalarType::BF16) return &f32_from_bf16;
    if (in.src_type == ScalarType::U32) return &f32_from_int<std::uint32_t>;
    if (in.src_type == ScalarType::S32) return &f32_from_int<std::int32_t>;
  }
  if (in.src_type == ScalarType::F32 && plain) {
    if (in.type == ScalarType::F16) return &f16_from_f32;
    if (in.type == ScalarType::BF16) return &bf16_from_f32;
  }
  return &convert;
}

}  // namespace ptxdsl::detail
