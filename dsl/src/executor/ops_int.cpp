#include <limits>
#include <type_traits>

#include "program.hpp"

// Integer arithmetic and logic: every result wraps to the type's width, as PTX defines.
namespace ptxdsl::detail {
namespace {

template <class T>
using Unsigned = std::make_unsigned_t<T>;
// Products of 16-bit values promote to int; multiply in a wide unsigned type instead.
template <class T>
using MulType = std::conditional_t<(sizeof(T) < 4), std::uint32_t, Unsigned<T>>;

template <class T>
constexpr unsigned kBits = sizeof(T) * 8;

template <class T>
T wrap_add(T a, T b) {
  return static_cast<T>(
      static_cast<Unsigned<T>>(static_cast<MulType<T>>(static_cast<Unsigned<T>>(a)) +
                               static_cast<MulType<T>>(static_cast<Unsigned<T>>(b))));
}
template <class T>
T wrap_sub(T a, T b) {
  return static_cast<T>(
      static_cast<Unsigned<T>>(static_cast<MulType<T>>(static_cast<Unsigned<T>>(a)) -
                               static_cast<MulType<T>>(static_cast<Unsigned<T>>(b))));
}
template <class T>
T wrap_mul(T a, T b) {
  return static_cast<T>(
      static_cast<Unsigned<T>>(static_cast<MulType<T>>(static_cast<Unsigned<T>>(a)) *
                               static_cast<MulType<T>>(static_cast<Unsigned<T>>(b))));
}

// The full product's high half.
template <class T>
T mul_high(T a, T b) {
  if constexpr (sizeof(T) == 8) {
    using W = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
    return static_cast<T>(static_cast<W>(a) * static_cast<W>(b) >> 64);
  } else {
    using W = std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>;
    return static_cast<T>(static_cast<W>(a) * static_cast<W>(b) >> kBits<T>);
  }
}

template <class T>
T saturate_s32(std::int64_t v) {
  if constexpr (std::is_same_v<T, std::int32_t>) {
    if (v > std::numeric_limits<std::int32_t>::max())
      return std::numeric_limits<std::int32_t>::max();
    if (v < std::numeric_limits<std::int32_t>::min())
      return std::numeric_limits<std::int32_t>::min();
  }
  return static_cast<T>(v);
}

template <class T>
T divide(T a, T b) {
  if (b == 0) return static_cast<T>(~Unsigned<T>{0});  // what the hardware returns
  if constexpr (std::is_signed_v<T>) {
    if (a == std::numeric_limits<T>::min() && b == -1) return a;
  }
  return static_cast<T>(a / b);
}
template <class T>
T remainder(T a, T b) {
  if (b == 0) return a;
  if constexpr (std::is_signed_v<T>) {
    if (a == std::numeric_limits<T>::min() && b == -1) return 0;
  }
  return static_cast<T>(a % b);
}

template <class T>
T shift_left(T a, std::uint32_t n) {
  if (n >= kBits<T>) return 0;  // PTX clamps the amount to the width
  return static_cast<T>(static_cast<MulType<T>>(static_cast<Unsigned<T>>(a)) << n);
}
template <class T>
T shift_right(T a, std::uint32_t n) {
  if (n >= kBits<T>) n = kBits<T> - 1 + (std::is_signed_v<T> ? 0 : 1);
  if (n >= kBits<T>) return 0;
  return static_cast<T>(a >> n);
}

template <class T>
T get(std::uint64_t v) {
  return static_cast<T>(v);
}
template <class T>
std::uint64_t put(T v) {
  return static_cast<Unsigned<T>>(v);
}

template <class T, Op O>
void binary(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  const std::uint64_t* b = c.row(in.src[1]);
  const bool sat = in.sat;
  each_lane(exec, [&](std::uint32_t l) {
    const T x = get<T>(a[l]);
    const T y = get<T>(b[l]);
    T r{};
    if constexpr (O == Op::Add) {
      r = sat ? saturate_s32<T>(static_cast<std::int64_t>(x) + static_cast<std::int64_t>(y))
              : wrap_add(x, y);
    } else if constexpr (O == Op::Sub) {
      r = sat ? saturate_s32<T>(static_cast<std::int64_t>(x) - static_cast<std::int64_t>(y))
              : wrap_sub(x, y);
    } else if constexpr (O == Op::Mul) {
      r = wrap_mul(x, y);
    } else if constexpr (O == Op::Div) {
      r = divide(x, y);
    } else if constexpr (O == Op::Rem) {
      r = remainder(x, y);
    } else if constexpr (O == Op::Min) {
      r = x < y ? x : y;
    } else if constexpr (O == Op::Max) {
      r = x > y ? x : y;
    } else if constexpr (O == Op::And) {
      r = static_cast<T>(x & y);
    } else if constexpr (O == Op::Or) {
      r = static_cast<T>(x | y);
    } else if constexpr (O == Op::Xor) {
      r = static_cast<T>(x ^ y);
    } else if constexpr (O == Op::Shl) {
      r = shift_left(x, static_cast<std::uint32_t>(b[l]));
    } else if constexpr (O == Op::Shr) {
      r = shift_right(x, static_cast<std::uint32_t>(b[l]));
    }
    d[l] = put(r);
  });
}

template <class T>
void mul_hi(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  const std::uint64_t* b = c.row(in.src[1]);
  each_lane(exec, [&](std::uint32_t l) { d[l] = put(mul_high(get<T>(a[l]), get<T>(b[l]))); });
}

// mul.wide: the full product in the double-width type.
template <class T, class W>
void mul_wide(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  const std::uint64_t* b = c.row(in.src[1]);
  each_lane(exec, [&](std::uint32_t l) {
    d[l] = put(wrap_mul(static_cast<W>(get<T>(a[l])), static_cast<W>(get<T>(b[l]))));
  });
}

template <class T>
void mad_lo(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  const std::uint64_t* b = c.row(in.src[1]);
  const std::uint64_t* cc = c.row(in.src[2]);
  each_lane(exec, [&](std::uint32_t l) {
    d[l] = put(wrap_add(wrap_mul(get<T>(a[l]), get<T>(b[l])), get<T>(cc[l])));
  });
}

template <class T>
void mad_hi(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  const std::uint64_t* b = c.row(in.src[1]);
  const std::uint64_t* cc = c.row(in.src[2]);
  each_lane(exec, [&](std::uint32_t l) {
    d[l] = put(wrap_add(mul_high(get<T>(a[l]), get<T>(b[l])), get<T>(cc[l])));
  });
}

template <class T, class W>
void mad_wide(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  const std::uint64_t* b = c.row(in.src[1]);
  const std::uint64_t* cc = c.row(in.src[2]);
  each_lane(exec, [&](std::uint32_t l) {
    const W p = wrap_mul(static_cast<W>(get<T>(a[l])), static_cast<W>(get<T>(b[l])));
    d[l] = put(wrap_add(p, get<W>(cc[l])));
  });
}

template <class T, Op O>
void unary(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  each_lane(exec, [&](std::uint32_t l) {
    const T x = get<T>(a[l]);
    T r{};
    if constexpr (O == Op::Neg) {
      r = wrap_sub(T{0}, x);
    } else if constexpr (O == Op::Abs) {
      r = std::is_signed_v<T> && x < 0 ? wrap_sub(T{0}, x) : x;
    } else if constexpr (O == Op::Not) {
      r = static_cast<T>(~x);
    }
    d[l] = put(r);
  });
}

void not_pred(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  const std::uint64_t* a = c.row(in.src[0]);
  each_lane(exec, [&](std::uint32_t l) { d[l] = a[l] ? 0 : 1; });
}

// The handler of op O on integers of type T (T: the register's bits for logic on other types).
template <class T, Op O>
Handler for_type(const Instr& in) {
  constexpr bool kBinary = O == Op::Add || O == Op::Sub || O == Op::Div || O == Op::Rem ||
                           O == Op::Min || O == Op::Max || O == Op::And || O == Op::Or ||
                           O == Op::Xor || O == Op::Shl || O == Op::Shr;
  using Wide =
      std::conditional_t<sizeof(T) == 2, std::uint32_t,
                         std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>>;
  if constexpr (kBinary) {
    return &binary<T, O>;
  } else if constexpr (O == Op::Neg || O == Op::Abs || O == Op::Not) {
    return &unary<T, O>;
  } else if constexpr (O == Op::Mul) {
    if (in.mul == MulMode::Hi) return &mul_hi<T>;
    if (in.mul == MulMode::Wide) {
      if constexpr (sizeof(T) <= 4) return &mul_wide<T, Wide>;
      return nullptr;
    }
    return &binary<T, Op::Mul>;
  } else if constexpr (O == Op::Mad) {
    if (in.mul == MulMode::Hi) return &mad_hi<T>;
    if (in.mul == MulMode::Wide) {
      if constexpr (sizeof(T) <= 4) return &mad_wide<T, Wide>;
      return nullptr;
    }
    return &mad_lo<T>;
  } else {
    return nullptr;  // a float-only op
  }
}

}  // namespace

// The semantics the instruction table names: op O over the integer and bit types.
template <Op O>
Handler select_int_op(const Instr& in) {
  switch (in.type) {
    case ScalarType::Pred:
      if constexpr (O == Op::Not) return &not_pred;
      if constexpr (O == Op::And || O == Op::Or || O == Op::Xor)
        return for_type<std::uint8_t, O>(in);
      return nullptr;
    case ScalarType::B16:
    case ScalarType::U16:
      return for_type<std::uint16_t, O>(in);
    case ScalarType::B32:
    case ScalarType::U32:
      return for_type<std::uint32_t, O>(in);
    case ScalarType::S32:
      return for_type<std::int32_t, O>(in);
    case ScalarType::B64:
    case ScalarType::U64:
      return for_type<std::uint64_t, O>(in);
    case ScalarType::S64:
      return for_type<std::int64_t, O>(in);
    // Logic on 16/32-bit floats' registers is spelled with the bit type (and.b32 on f32 regs).
    case ScalarType::F16:
    case ScalarType::BF16:
      return for_type<std::uint16_t, O>(in);
    case ScalarType::F16x2:
    case ScalarType::BF16x2:
    case ScalarType::F32:
      return for_type<std::uint32_t, O>(in);
    case ScalarType::F64:
      return for_type<std::uint64_t, O>(in);
    default:
      return nullptr;  // the 8-bit and narrow float types have no arithmetic
  }
}

template Handler select_int_op<Op::Add>(const Instr&);
template Handler select_int_op<Op::Sub>(const Instr&);
template Handler select_int_op<Op::Mul>(const Instr&);
template Handler select_int_op<Op::Mad>(const Instr&);
template Handler select_int_op<Op::Fma>(const Instr&);
template Handler select_int_op<Op::Div>(const Instr&);
template Handler select_int_op<Op::Rem>(const Instr&);
template Handler select_int_op<Op::Min>(const Instr&);
template Handler select_int_op<Op::Max>(const Instr&);
template Handler select_int_op<Op::Abs>(const Instr&);
template Handler select_int_op<Op::Neg>(const Instr&);
template Handler select_int_op<Op::And>(const Instr&);
template Handler select_int_op<Op::Or>(const Instr&);
template Handler select_int_op<Op::Xor>(const Instr&);
template Handler select_int_op<Op::Not>(const Instr&);
template Handler select_int_op<Op::Shl>(const Instr&);
template Handler select_int_op<Op::Shr>(const Instr&);
template Handler select_int_op<Op::Rcp>(const Instr&);
template Handler select_int_op<Op::Sqrt>(const Instr&);
template Handler select_int_op<Op::Rsqrt>(const Instr&);
template Handler select_int_op<Op::Ex2>(const Instr&);
template Handler select_int_op<Op::Lg2>(const Instr&);

}  // namespace ptxdsl::detail
