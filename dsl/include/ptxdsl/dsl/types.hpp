#pragma once

#include <concepts>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace ptxdsl {

// Every PTX type the DSL speaks. f16/bf16 values live in .b16 registers and f16x2/bf16x2 in .b32
// registers, as PTX requires.
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
};

// The register file a value of a type lives in; one `.reg` declaration per class.
enum class RegClass : std::uint8_t { Pred, B16, B32, B64, F32, F64 };
inline constexpr int kRegClassCount = 6;

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
  }
  return "?";
}

constexpr int size_bytes(ScalarType t) {
  switch (t) {
    case ScalarType::Pred:
      return 0;
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
    default:
      break;
  }
  switch (size_bytes(t)) {
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
    default:
      return t;
  }
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
// Types setp compares: everything but predicates and the paired 16-bit floats.
template <class T>
concept CompareTag = TypeTag<T> && T::kType != ScalarType::Pred&& T::kType !=
                     ScalarType::F16x2&& T::kType != ScalarType::BF16x2;
// Types cvt converts between: integers and single floats (pairs go through cvt_pack / unpack).
template <class T>
concept CvtTag = TypeTag<T> &&
    (is_int(T::kType) || T::kType == ScalarType::F16 || T::kType == ScalarType::BF16 ||
     T::kType == ScalarType::F32 || T::kType == ScalarType::F64);

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
