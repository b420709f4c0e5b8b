#include <bit>
#include <cstdint>
#include <type_traits>

#include "program.hpp"

// Bit instructions as PTX's ISA pseudocode defines them: popc, clz, brev, bfind, bfe, bfi, prmt,
// lop3, shf, dp4a and dp2a.
namespace ptxdsl::detail {
namespace {

template <class U>
constexpr unsigned kMsb = sizeof(U) * 8 - 1;

template <class U, class F>
void unary(Ctx& c, const DInstr& in, std::uint32_t exec, F f) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  each_lane(exec, [&](std::uint32_t l) { d[l] = f(static_cast<U>(a[l])); });
}

template <class U>
void popc(Ctx& c, const DInstr& in, std::uint32_t exec) {
  unary<U>(c, in, exec, [](U a) { return static_cast<std::uint64_t>(std::popcount(a)); });
}

template <class U>
void clz(Ctx& c, const DInstr& in, std::uint32_t exec) {
  unary<U>(c, in, exec, [](U a) { return static_cast<std::uint64_t>(std::countl_zero(a)); });
}

template <class U>
void brev(Ctx& c, const DInstr& in, std::uint32_t exec) {
  unary<U>(c, in, exec, [](U a) {
    U r = 0;
    for (unsigned i = 0; i <= kMsb<U>; ++i) r |= static_cast<U>((a >> i) & 1u) << (kMsb<U> - i);
    return static_cast<std::uint64_t>(r);
  });
}

// T: the signed or unsigned type; the search runs on the bits unlike the sign.
template <class T, bool kShiftAmount>
void bfind(Ctx& c, const DInstr& in, std::uint32_t exec) {
  using U = std::make_unsigned_t<T>;
  unary<U>(c, in, exec, [](U bits) -> std::uint64_t {
    if (std::is_signed_v<T> && static_cast<T>(bits) < 0) bits = static_cast<U>(~bits);
    if (bits == 0) return 0xFFFFFFFFu;
    const unsigned at = kMsb<U> - static_cast<unsigned>(std::countl_zero(bits));
    return kShiftAmount ? kMsb<U> - at : at;
  });
}

template <class T>
void bfe(Ctx& c, const DInstr& in, std::uint32_t exec) {
  using U = std::make_unsigned_t<T>;
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  const std::uint64_t* b = c.row(in.src[1]);
  const std::uint64_t* cc = c.row(in.src[2]);
  each_lane(exec, [&](std::uint32_t l) {
    const auto x = static_cast<U>(a[l]);
    const unsigned pos = b[l] & 0xFFu, len = cc[l] & 0xFFu;
    const unsigned top = pos + len - 1 < kMsb<U> ? pos + len - 1 : kMsb<U>;
    const unsigned sign = std::is_signed_v<T> && len != 0 ? (x >> top) & 1u : 0u;
    U r = 0;
    for (unsigned i = 0; i <= kMsb<U>; ++i) {
      const unsigned bit = i < len && pos + i <= kMsb<U> ? (x >> (pos + i)) & 1u : sign;
      r |= static_cast<U>(bit) << i;
    }
    d[l] = r;
  });
}

template <class U>
void bfi(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* bits = c.row(in.src[0]);
  const std::uint64_t* base = c.row(in.src[1]);
  const std::uint64_t* at = c.row(in.src[2]);
  const std::uint64_t* count = c.row(in.src[3]);
  each_lane(exec, [&](std::uint32_t l) {
    auto r = static_cast<U>(base[l]);
    const unsigned pos = at[l] & 0xFFu, len = count[l] & 0xFFu;
    for (unsigned i = 0; i < len && pos + i <= kMsb<U>; ++i) {
      const U mask = U{1} << (pos + i);
      r = static_cast<U>(((bits[l] >> i) & 1u) != 0 ? (r | mask) : (r & ~mask));
    }
    d[l] = r;
  });
}

void prmt(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  const std::uint64_t* b = c.row(in.src[1]);
  const std::uint64_t* sel = c.row(in.src[2]);
  each_lane(exec, [&](std::uint32_t l) {
    const std::uint64_t bytes = (b[l] & 0xFFFFFFFFu) << 32 | (a[l] & 0xFFFFFFFFu);
    std::uint32_t r = 0;
    for (unsigned i = 0; i < 4; ++i) {
      const unsigned nibble = (sel[l] >> (4 * i)) & 0xFu;
      std::uint32_t byte = (bytes >> (8 * (nibble & 7u))) & 0xFFu;
      if ((nibble & 8u) != 0) byte = (byte & 0x80u) != 0 ? 0xFFu : 0u;
      r |= byte << (8 * i);
    }
    d[l] = r;
  });
}

void lop3(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  const std::uint64_t* b = c.row(in.src[1]);
  const std::uint64_t* cc = c.row(in.src[2]);
  const std::uint64_t* lut = c.row(in.src[3]);
  each_lane(exec, [&](std::uint32_t l) {
    const auto x = static_cast<std::uint32_t>(a[l]), y = static_cast<std::uint32_t>(b[l]),
               z = static_cast<std::uint32_t>(cc[l]);
    std::uint32_t r = 0;
    // Entry i of the table is the result where a, b and c are bits 2, 1 and 0 of i.
    for (unsigned i = 0; i < 8; ++i) {
      if (((lut[l] >> i) & 1u) == 0) continue;
      r |= ((i & 4u) != 0 ? x : ~x) & ((i & 2u) != 0 ? y : ~y) & ((i & 1u) != 0 ? z : ~z);
    }
    d[l] = r;
  });
}

template <Funnel kMode>
void shf(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* lo = c.row(in.src[0]);
  const std::uint64_t* hi = c.row(in.src[1]);
  const std::uint64_t* amount = c.row(in.src[2]);
  constexpr bool kClamp = kMode == Funnel::LeftClamp || kMode == Funnel::RightClamp;
  constexpr bool kLeft = kMode == Funnel::LeftWrap || kMode == Funnel::LeftClamp;
  each_lane(exec, [&](std::uint32_t l) {
    const auto raw = static_cast<std::uint32_t>(amount[l]);
    const std::uint32_t n = kClamp ? (raw < 32 ? raw : 32) : raw & 31u;
    const std::uint64_t pair = (hi[l] & 0xFFFFFFFFu) << 32 | (lo[l] & 0xFFFFFFFFu);
    d[l] = kLeft ? ((pair << n) >> 32) & 0xFFFFFFFFu : (pair >> n) & 0xFFFFFFFFu;
  });
}

// Element i (of `bits` wide) of a word, sign- or zero-extended.
template <bool kSigned, unsigned kBits>
std::int64_t element(std::uint64_t word, unsigned i) {
  const std::uint64_t v = (word >> (kBits * i)) & ((1u << kBits) - 1);
  if (kSigned && ((v >> (kBits - 1)) & 1u) != 0) {
    return static_cast<std::int64_t>(v) - (std::int64_t{1} << kBits);
  }
  return static_cast<std::int64_t>(v);
}

// dp4a (kHalves false) and dp2a: the products summed onto c, wrapping at 32 bits.
template <bool kSignedA, bool kSignedB, bool kHalves, bool kHigh>
void dot(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  const std::uint64_t* b = c.row(in.src[1]);
  const std::uint64_t* acc = c.row(in.src[2]);
  each_lane(exec, [&](std::uint32_t l) {
    std::uint64_t sum = acc[l];
    if constexpr (kHalves) {
      for (unsigned i = 0; i < 2; ++i) {
        sum += static_cast<std::uint64_t>(element<kSignedA, 16>(a[l], i) *
                                          element<kSignedB, 8>(b[l], (kHigh ? 2 : 0) + i));
      }
    } else {
      for (unsigned i = 0; i < 4; ++i) {
        sum += static_cast<std::uint64_t>(element<kSignedA, 8>(a[l], i) *
                                          element<kSignedB, 8>(b[l], i));
      }
    }
    d[l] = sum & 0xFFFFFFFFu;
  });
}

template <bool kHalves, bool kHigh>
Handler select_dot(const Instr& in) {
  const bool sa = in.type == ScalarType::S32, sb = in.src_type == ScalarType::S32;
  if (sa && sb) return &dot<true, true, kHalves, kHigh>;
  if (sa) return &dot<true, false, kHalves, kHigh>;
  if (sb) return &dot<false, true, kHalves, kHigh>;
  return &dot<false, false, kHalves, kHigh>;
}

}  // namespace

// The semantics the instruction table names.
Handler select_popc(const Instr& in) {
  return size_bytes(in.type) == 8 ? &popc<std::uint64_t> : &popc<std::uint32_t>;
}
Handler select_clz(const Instr& in) {
  return size_bytes(in.type) == 8 ? &clz<std::uint64_t> : &clz<std::uint32_t>;
}
Handler select_brev(const Instr& in) {
  return size_bytes(in.type) == 8 ? &brev<std::uint64_t> : &brev<std::uint32_t>;
}
Handler select_bfind(const Instr& in) {
  const bool wide = size_bytes(in.type) == 8, sign = is_signed_int(in.type);
  if (in.shift_amount) {
    if (wide) return sign ? &bfind<std::int64_t, true> : &bfind<std::uint64_t, true>;
    return sign ? &bfind<std::int32_t, true> : &bfind<std::uint32_t, true>;
  }
  if (wide) return sign ? &bfind<std::int64_t, false> : &bfind<std::uint64_t, false>;
  return sign ? &bfind<std::int32_t, false> : &bfind<std::uint32_t, false>;
}
Handler select_bfe(const Instr& in) {
  const bool wide = size_bytes(in.type) == 8, sign = is_signed_int(in.type);
  if (wide) return sign ? &bfe<std::int64_t> : &bfe<std::uint64_t>;
  return sign ? &bfe<std::int32_t> : &bfe<std::uint32_t>;
}
Handler select_bfi(const Instr& in) {
  return size_bytes(in.type) == 8 ? &bfi<std::uint64_t> : &bfi<std::uint32_t>;
}
Handler select_prmt(const Instr&) {
  return &prmt;
}
Handler select_lop3(const Instr&) {
  return &lop3;
}
Handler select_shf(const Instr& in) {
  switch (in.funnel) {
    case Funnel::LeftWrap:
      return &shf<Funnel::LeftWrap>;
    case Funnel::LeftClamp:
      return &shf<Funnel::LeftClamp>;
    case Funnel::RightWrap:
      return &shf<Funnel::RightWrap>;
    case Funnel::RightClamp:
      return &shf<Funnel::RightClamp>;
  }
  return nullptr;
}
Handler select_dp4a(const Instr& in) {
  return select_dot<false, false>(in);
}
Handler select_dp2a(const Instr& in) {
  return in.high_half ? select_dot<true, true>(in) : select_dot<true, false>(in);
}

}  // namespace ptxdsl::detail
