#pragma once

#include <concepts>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace ptxdsl {

// Every PTX type the DSL speaks. f16/bf16 values live in .b16 registers and f16x2/bf16x2 in .b32
// registers, as PTX requires. The 8-bit types are one byte in memory and live in .b16 registers
// (ld.u8 widens, st.u8 narrows); PTX has no arithmetic on them, only loads, stores and cvt. FP8
// pairs (e4m3x2, e5m2x2) and ue8m0 scale pairs are .b16 values; an FP4 pair (e2m1x2) is one
// byte, which cvt writes into a .b8 register.
enum class ScalarType : std::uint8_t {
  Pred,
  B16,
  B32,
  B64,
  U16,
  U32,
  U64,
  S32,
  S64,
  F16,
  BF16,
  F16x2,
  BF16x2,
  F32,
  F64,
  // 8-bit integers, FP8/FP4 and scales: one byte in memory, or a pair in two.
  B8,
  U8,
  S8,
  E4M3,
  E5M2,
  E4M3x2,
  E5M2x2,
  E2M1x2,
  UE8M0,
  UE8M0x2,
};
inline constexpr int kScalarTypeCount = static_cast<int>(ScalarType::UE8M0x2) + 1;

// The register file a value of a type lives in; one `.reg` declaration per class.
// B8 holds what only cvt.*.e2m1x2 writes: PTX has no mov or selp of .b8 registers.
enum class RegClass : std::uint8_t { Pred, B16, B32, B64, F32, F64, B8 };
inline constexpr int kRegClassCount = 7;

constexpr std::string_view ptx_name(ScalarType t) {
  switch (t) {
    case ScalarType::Pred:
      return "pred";
    case ScalarType::B16:
      return "b16";
    case ScalarType::B32:
      return "b32";
    case ScalarType::B64:
      return "b64";
    case ScalarType::U16:
      return "u16";
    case ScalarType::U32:
      return "u32";
    case ScalarType::U64:
      return "u64";
    case ScalarType::S32:
      return "s32";
    case ScalarType::S64:
      return "s64";
    case ScalarType::F16:
      return "f16";
    case ScalarType::BF16:
      return "bf16";
    case ScalarType::F16x2:
      return "f16x2";
    case ScalarType::BF16x2:
      return "bf16x2";
    case ScalarType::F32:
      return "f32";
    case ScalarType::F64:
      return "f64";
    case ScalarType::B8:
      return "b8";
    case ScalarType::U8:
      return "u8";
    case ScalarType::S8:
      return "s8";
    case ScalarType::E4M3:
      return "e4m3";
    case ScalarType::E5M2:
      return "e5m2";
    case ScalarType::E4M3x2:
      return "e4m3x2";
    case ScalarType::E5M2x2:
      return "e5m2x2";
    case ScalarType::E2M1x2:
      return "e2m1x2";
    case ScalarType::UE8M0:
      return "ue8m0";
    case ScalarType::UE8M0x2:
      return "ue8m0x2";
  }
  return "?";
}

constexpr int size_bytes(ScalarType t) {
  switch (t) {
    case ScalarType::Pred:
      return 0;
    case ScalarType::B8:
    case ScalarType::U8:
    case ScalarType::S8:
    case ScalarType::E4M3:
    case ScalarType::E5M2:
    case ScalarType::E2M1x2:
    case ScalarType::UE8M0:
      return 1;
    case ScalarType::E4M3x2:
    case ScalarType::E5M2x2:
    case ScalarType::UE8M0x2:
      return 2;
    case ScalarType::B16:
    case ScalarType::U16:
    case ScalarType::F16:
    case ScalarType::BF16:
      return 2;
    case ScalarType::B32:
    case ScalarType::U32:
    case ScalarType::S32:
    case ScalarType::F16x2:
    case ScalarType::BF16x2:
    case ScalarType::F32:
      return 4;
    case ScalarType::B64:
    case ScalarType::U64:
    case ScalarType::S64:
    case ScalarType::F64:
      return 8;
  }
  return 0;
}

constexpr RegClass reg_class(ScalarType t) {
  switch (t) {
    case ScalarType::Pred:
      return RegClass::Pred;
    case ScalarType::F32:
      return RegClass::F32;
    case ScalarType::F64:
      return RegClass::F64;
    case ScalarType::E2M1x2:
      return RegClass::B8;
    default:
      break;
  }
  switch (size_bytes(t)) {
    case 1:
    case 2:
      return RegClass::B16;
    case 4:
      return RegClass::B32;
    default:
      return RegClass::B64;
  }
}

constexpr bool is_float(ScalarType t) {
  return t == ScalarType::F16 || t == ScalarType::BF16 || t == ScalarType::F16x2 ||
         t == ScalarType::BF16x2 || t == ScalarType::F32 || t == ScalarType::F64;
}
constexpr bool is_signed_int(ScalarType t) {
  return t == ScalarType::S32 || t == ScalarType::S64;
}
constexpr bool is_unsigned_int(ScalarType t) {
  return t == ScalarType::U16 || t == ScalarType::U32 || t == ScalarType::U64;
}
constexpr bool is_int(ScalarType t) {
  return is_signed_int(t) || is_unsigned_int(t);
}
constexpr bool is_bits(ScalarType t) {
  return t == ScalarType::B16 || t == ScalarType::B32 || t == ScalarType::B64;
}
// u8 and s8: memory and cvt types, no arithmetic (PTX has no add.u8).
constexpr bool is_byte_int(ScalarType t) {
  return t == ScalarType::U8 || t == ScalarType::S8;
}
// FP8 and FP4 values and ue8m0 scales, single or paired: converted with cvt, never computed on.
constexpr bool is_narrow_float(ScalarType t) {
  return t == ScalarType::E4M3 || t == ScalarType::E5M2 || t == ScalarType::E4M3x2 ||
         t == ScalarType::E5M2x2 || t == ScalarType::E2M1x2 || t == ScalarType::UE8M0 ||
         t == ScalarType::UE8M0x2;
}

// The bit type of a size: b16, b32 or b64 (what logic instructions and bit casts spell).
constexpr ScalarType bits_type(int bytes) {
  switch (bytes) {
    case 2:
      return ScalarType::B16;
    case 4:
      return ScalarType::B32;
    default:
      return ScalarType::B64;
  }
}

// Types as data-movement instructions spell them (mov, selp, ld, st, .param): 16-bit floats move
// as b16, pairs as b32.
constexpr ScalarType storage_type(ScalarType t) {
  switch (t) {
    case ScalarType::F16:
    case ScalarType::BF16:
      return ScalarType::B16;
    case ScalarType::F16x2:
    case ScalarType::BF16x2:
      return ScalarType::B32;
    case ScalarType::E4M3:
    case ScalarType::E5M2:
    case ScalarType::E2M1x2:
    case ScalarType::UE8M0:
      return ScalarType::B8;
    case ScalarType::E4M3x2:
    case ScalarType::E5M2x2:
    case ScalarType::UE8M0x2:
      return ScalarType::B16;
    default:
      return t;
  }
}

// The bytes of the register a value of `t` lives in (a byte lives in a 16-bit register).
constexpr int register_bytes(ScalarType t) {
  switch (reg_class(t)) {
    case RegClass::B8:
      return 1;
    case RegClass::B16:
      return 2;
    case RegClass::B64:
    case RegClass::F64:
      return 8;
    default:
      return 4;
  }
}

// Types as mov and selp spell them: a byte lives in a 16-bit register and moves as b16 (PTX has no
// mov.b8); everything else as data movement spells it.
constexpr ScalarType move_type(ScalarType t) {
  return size_bytes(t) == 1 && reg_class(t) == RegClass::B16 ? ScalarType::B16 : storage_type(t);
}

// Build-time type tags: `Reg<F32>`, `GlobalPtr<F16>`...
#define PTXDSL_TYPE_TAG(Tag, Enum)                              \
  struct Tag {                                                  \
    static constexpr ScalarType kType = ScalarType::Enum;       \
    static constexpr int kBytes = size_bytes(ScalarType::Enum); \
  };
PTXDSL_TYPE_TAG(PredT, Pred)
PTXDSL_TYPE_TAG(B16, B16)
PTXDSL_TYPE_TAG(B32, B32)
PTXDSL_TYPE_TAG(B64, B64)
PTXDSL_TYPE_TAG(U16, U16)
PTXDSL_TYPE_TAG(U32, U32)
PTXDSL_TYPE_TAG(U64, U64)
PTXDSL_TYPE_TAG(S32, S32)
PTXDSL_TYPE_TAG(S64, S64)
PTXDSL_TYPE_TAG(F16, F16)
PTXDSL_TYPE_TAG(BF16, BF16)
PTXDSL_TYPE_TAG(F16x2, F16x2)
PTXDSL_TYPE_TAG(BF16x2, BF16x2)
PTXDSL_TYPE_TAG(F32, F32)
PTXDSL_TYPE_TAG(F64, F64)
PTXDSL_TYPE_TAG(B8, B8)
PTXDSL_TYPE_TAG(U8, U8)
PTXDSL_TYPE_TAG(S8, S8)
PTXDSL_TYPE_TAG(E4M3, E4M3)
PTXDSL_TYPE_TAG(E5M2, E5M2)
PTXDSL_TYPE_TAG(E4M3x2, E4M3x2)
PTXDSL_TYPE_TAG(E5M2x2, E5M2x2)
PTXDSL_TYPE_TAG(E2M1x2, E2M1x2)
PTXDSL_TYPE_TAG(UE8M0, UE8M0)
PTXDSL_TYPE_TAG(UE8M0x2, UE8M0x2)
#undef PTXDSL_TYPE_TAG

template <class T>
concept TypeTag = requires {
  { T::kType } -> std::convertible_to<ScalarType>;
};
template <class T>
concept FloatTag = TypeTag<T> && is_float(T::kType);
template <class T>
concept IntTag = TypeTag<T> && is_int(T::kType);
template <class T>
concept BitsTag = TypeTag<T> && is_bits(T::kType);
// Types with ordinary arithmetic (add, sub, mul, min, max...).
template <class T>
concept ArithTag = TypeTag<T> &&
    (is_int(T::kType) || T::kType == ScalarType::F32 || T::kType == ScalarType::F64 ||
     T::kType == ScalarType::F16 || T::kType == ScalarType::BF16 || T::kType == ScalarType::F16x2 ||
     T::kType == ScalarType::BF16x2);
// Types and/or/xor/not/shl/shr take.
template <class T>
concept LogicTag = TypeTag<T> &&(is_int(T::kType) || is_bits(T::kType));

// The single-element scalar type of a tag, for memory elements.
template <class T>
concept MemTag = TypeTag<T> && T::kType != ScalarType::Pred;

// abs and neg: signed integers and floats (PTX has no neg.u32).
template <class T>
concept SignedArithTag = ArithTag<T> && !is_unsigned_int(T::kType);
// div: integers and the 32/64-bit floats (no div.f16).
template <class T>
concept DivTag = TypeTag<T> &&
    (is_int(T::kType) || T::kType == ScalarType::F32 || T::kType == ScalarType::F64);
// rcp, sqrt, rsqrt: f32 and f64.
template <class T>
concept F32OrF64Tag = TypeTag<T> &&(T::kType == ScalarType::F32 || T::kType == ScalarType::F64);
// ex2.approx: f32 and the 16-bit floats, single or paired.
template <class T>
concept Ex2Tag = FloatTag<T> && T::kType != ScalarType::F64;
// Types setp compares: everything but predicates, the paired 16-bit floats, and the 8-bit and
// narrow float types (PTX has no setp.u8 or setp.e4m3).
template <class T>
concept CompareTag =
    TypeTag<T> && T::kType != ScalarType::Pred&& T::kType != ScalarType::F16x2&& T::kType !=
        ScalarType::BF16x2 &&
    !is_byte_int(T::kType) && !is_narrow_float(T::kType) && T::kType != ScalarType::B8;
// Types cvt converts between: integers (8-bit ones included) and single floats (pairs go through
// cvt_pack / unpack).
template <class T>
concept CvtTag = TypeTag<T> &&
    (is_int(T::kType) || is_byte_int(T::kType) || T::kType == ScalarType::F16 ||
     T::kType == ScalarType::BF16 || T::kType == ScalarType::F32 || T::kType == ScalarType::F64);
// The packed narrow formats two f32 values convert to (`cvt_pack`), and what each unpacks to.
template <class T>
concept NarrowPairTag = TypeTag<T> &&
    (T::kType == ScalarType::E4M3x2 || T::kType == ScalarType::E5M2x2 ||
     T::kType == ScalarType::E2M1x2 || T::kType == ScalarType::UE8M0x2);
template <NarrowPairTag T>
using Unpacked = std::conditional_t<T::kType == ScalarType::UE8M0x2, BF16x2, F16x2>;

// dp4a / dp2a operands: 32-bit words of signed or unsigned bytes (halves).
template <class T>
concept DotTag = TypeTag<T> &&(T::kType == ScalarType::U32 || T::kType == ScalarType::S32);
// The type a dot product sums in: u32 when both operands are unsigned, else s32.
template <DotTag A, DotTag B>
using DotSum =
    std::conditional_t<A::kType == ScalarType::U32 && B::kType == ScalarType::U32, U32, S32>;

// What atom and red work on: 32- and 64-bit integers and bits, f32, f64, f16x2 and bf16x2 (which
// operation takes which type is the instruction table's: add takes f32, and takes b32...).
template <class T>
concept AtomTag = TypeTag<T> &&
    (T::kType == ScalarType::U32 || T::kType == ScalarType::S32 || T::kType == ScalarType::U64 ||
     T::kType == ScalarType::S64 || T::kType == ScalarType::B32 || T::kType == ScalarType::B64 ||
     T::kType == ScalarType::F32 || T::kType == ScalarType::F64 || T::kType == ScalarType::F16x2 ||
     T::kType == ScalarType::BF16x2);

}  // namespace ptxdsl
