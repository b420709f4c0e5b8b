#include <catch2/catch.hpp>

#include <limits>

#include "support.hpp"

using namespace ptxdsl;
using ptxdsl::test::eval;
using ptxdsl::test::eval_pred;

namespace {
constexpr MathMode kSat{Precision::Exact, Rounding::None, false, true};
}

TEST_CASE("integer add/sub wrap at the type's width; add.sat.s32 clamps", "[executor][int]") {
  CHECK(eval<U32>([](Kernel& k) { return k.add(k.mov<U32>(0xFFFFFFFFu), 2u); }) == 1);
  CHECK(eval<U16>([](Kernel& k) {
          return k.sub(k.mov<U16>(std::uint16_t{1}), std::uint16_t{2});
        }) == 0xFFFF);
  CHECK(eval<U64>([](Kernel& k) { return k.add(k.mov<U64>(~0ull), 1ull); }) == 0);
  CHECK(eval<S32>([](Kernel& k) {
          return k.add(k.mov<S32>(std::numeric_limits<std::int32_t>::max()), 1);
        }) == 0x80000000u);
  CHECK(eval<S32>([](Kernel& k) {
          return k.add(k.mov<S32>(std::numeric_limits<std::int32_t>::max()), 1, kSat);
        }) == 0x7FFFFFFFu);
  CHECK(eval<S32>([](Kernel& k) {
          return k.sub(k.mov<S32>(std::numeric_limits<std::int32_t>::min()), 1, kSat);
        }) == 0x80000000u);
  CHECK(eval<S64>([](Kernel& k) { return k.sub(k.mov<S64>(std::int64_t{-5}), std::int64_t{7}); }) ==
        static_cast<std::uint64_t>(-12));
}

TEST_CASE("mul.lo, mul.hi, mul.wide", "[executor][int]") {
  CHECK(eval<U32>([](Kernel& k) { return k.mul(k.mov<U32>(0x10000u), 0x10000u); }) == 0);
  CHECK(eval<U32>([](Kernel& k) { return k.mul(k.mov<U32>(0x12345u), 0x1000u); }) == 0x12345000u);
  CHECK(eval<U16>([](Kernel& k) {
          return k.mul(k.mov<U16>(std::uint16_t{0xFFFF}), std::uint16_t{0xFFFF});
        }) == 1);
  CHECK(eval<U32>([](Kernel& k) { return k.mul_hi(k.mov<U32>(0xFFFFFFFFu), 0xFFFFFFFFu); }) ==
        0xFFFFFFFEu);
  CHECK(eval<S32>([](Kernel& k) { return k.mul_hi(k.mov<S32>(-1), 1); }) == 0xFFFFFFFFu);
  CHECK(eval<S32>([](Kernel& k) { return k.mul_hi(k.mov<S32>(0x40000000), 8); }) == 2);
  CHECK(eval<U64>([](Kernel& k) { return k.mul_hi(k.mov<U64>(~0ull), 2ull); }) == 1);
  CHECK(eval<S64>([](Kernel& k) {
          return k.mul_hi(k.mov<S64>(std::int64_t{-1}), std::int64_t{-1});
        }) == 0);
  CHECK(eval<U64>([](Kernel& k) { return k.mul_wide(k.mov<U32>(0xFFFFFFFFu), 0xFFFFFFFFu); }) ==
        0xFFFFFFFE00000001ull);
  CHECK(eval<S64>([](Kernel& k) { return k.mul_wide(k.mov<S32>(-2), 3); }) ==
        static_cast<std::uint64_t>(-6));
  CHECK(eval<U32>([](Kernel& k) {
          return k.mul_wide(k.mov<U16>(std::uint16_t{0xFFFF}), std::uint16_t{0xFFFF});
        }) == 0xFFFE0001u);
}

TEST_CASE("mad.lo, mad.wide, and the address forms", "[executor][int]") {
  CHECK(eval<S32>([](Kernel& k) { return k.mad(k.mov<S32>(-3), 4, 100); }) == 88);
  CHECK(eval<U32>([](Kernel& k) { return k.mad(k.mov<U32>(0x80000000u), 2u, 5u); }) == 5);
  CHECK(eval<U64>([](Kernel& k) { return k.mad_wide(k.mov<U32>(0xFFFFFFFFu), 2u, 10ull); }) ==
        0x1FFFFFFFEull + 10);
  CHECK(eval<S64>([](Kernel& k) { return k.mad_wide(k.mov<S32>(-1), 4, std::int64_t{1000}); }) ==
        996);
  CHECK(eval<U64>([](Kernel& k) { return k.mad(k.mov<U64>(3ull), 8ull, 1ull << 40); }) ==
        (1ull << 40) + 24);
}

TEST_CASE("div, rem: truncating, with PTX's results for zero divisors", "[executor][int]") {
  CHECK(eval<U32>([](Kernel& k) { return k.div(k.mov<U32>(7u), 2u); }) == 3);
  CHECK(eval<S32>([](Kernel& k) { return k.div(k.mov<S32>(-7), 2); }) ==
        static_cast<std::uint32_t>(-3));
  CHECK(eval<S32>([](Kernel& k) { return k.rem(k.mov<S32>(-7), 2); }) ==
        static_cast<std::uint32_t>(-1));
  CHECK(eval<U32>([](Kernel& k) { return k.rem(k.mov<U32>(7u), 4u); }) == 3);
  CHECK(eval<U32>([](Kernel& k) { return k.div(k.mov<U32>(7u), k.mov<U32>(0u)); }) == 0xFFFFFFFFu);
  CHECK(eval<S32>([](Kernel& k) {
          return k.div(k.mov<S32>(std::numeric_limits<std::int32_t>::min()), -1);
        }) == 0x80000000u);
  CHECK(eval<U64>([](Kernel& k) { return k.div(k.mov<U64>(1ull << 40), 3ull); }) ==
        (1ull << 40) / 3);
}

TEST_CASE("min, max, abs, neg follow signedness", "[executor][int]") {
  CHECK(eval<S32>([](Kernel& k) { return k.min(k.mov<S32>(-1), 1); }) == 0xFFFFFFFFu);
  CHECK(eval<U32>([](Kernel& k) { return k.min(k.mov<U32>(0xFFFFFFFFu), 1u); }) == 1);
  CHECK(eval<S32>([](Kernel& k) { return k.max(k.mov<S32>(-1), 1); }) == 1);
  CHECK(eval<U32>([](Kernel& k) { return k.max(k.mov<U32>(0xFFFFFFFFu), 1u); }) == 0xFFFFFFFFu);
  CHECK(eval<S32>([](Kernel& k) { return k.abs(k.mov<S32>(-5)); }) == 5);
  CHECK(eval<S32>([](Kernel& k) {
          return k.abs(k.mov<S32>(std::numeric_limits<std::int32_t>::min()));
        }) == 0x80000000u);
  CHECK(eval<S32>([](Kernel& k) { return k.neg(k.mov<S32>(5)); }) ==
        static_cast<std::uint32_t>(-5));
  CHECK(eval<S64>([](Kernel& k) { return k.neg(k.mov<S64>(std::int64_t{-9})); }) == 9);
}

TEST_CASE("and, or, xor, not on bits and predicates", "[executor][int]") {
  CHECK(eval<B32>([](Kernel& k) { return k.and_(k.mov<B32>(0xF0F0u), 0xFF00u); }) == 0xF000);
  CHECK(eval<B32>([](Kernel& k) { return k.or_(k.mov<B32>(0xF0F0u), 0x0F00u); }) == 0xFFF0);
  CHECK(eval<B32>([](Kernel& k) { return k.xor_(k.mov<B32>(0xFFFFu), 0x0F0Fu); }) == 0xF0F0);
  CHECK(eval<B32>([](Kernel& k) { return k.not_(k.mov<B32>(0u)); }) == 0xFFFFFFFFu);
  CHECK(eval<B16>([](Kernel& k) { return k.not_(k.mov<B16>(std::uint16_t{0x00FF})); }) == 0xFF00);
  CHECK(eval<B64>([](Kernel& k) { return k.not_(k.mov<B64>(0ull)); }) == ~0ull);
  CHECK(eval_pred([](Kernel& k) {
    Pred t = k.setp(Cmp::Eq, k.mov<U32>(1u), 1u), f = k.setp(Cmp::Eq, k.mov<U32>(1u), 2u);
    return k.and_(t, k.not_(f));
  }));
  CHECK_FALSE(eval_pred([](Kernel& k) {
    Pred t = k.setp(Cmp::Eq, k.mov<U32>(1u), 1u);
    return k.xor_(t, t);
  }));
  CHECK(eval_pred([](Kernel& k) {
    Pred t = k.setp(Cmp::Eq, k.mov<U32>(1u), 1u), f = k.setp(Cmp::Eq, k.mov<U32>(1u), 2u);
    return k.or_(f, t);
  }));
}

TEST_CASE("shifts clamp the amount to the width", "[executor][int]") {
  CHECK(eval<B32>([](Kernel& k) { return k.shl(k.mov<B32>(1u), 31u); }) == 0x80000000u);
  CHECK(eval<B32>([](Kernel& k) { return k.shl(k.mov<B32>(1u), 32u); }) == 0);
  CHECK(eval<B32>([](Kernel& k) { return k.shl(k.mov<B32>(1u), k.mov<U32>(1000u)); }) == 0);
  CHECK(eval<U32>([](Kernel& k) { return k.shr(k.mov<U32>(0x80000000u), 31u); }) == 1);
  CHECK(eval<U32>([](Kernel& k) { return k.shr(k.mov<U32>(0x80000000u), 40u); }) == 0);
  CHECK(eval<S32>([](Kernel& k) { return k.shr(k.mov<S32>(-8), 1u); }) ==
        static_cast<std::uint32_t>(-4));
  CHECK(eval<S32>([](Kernel& k) { return k.shr(k.mov<S32>(-8), 40u); }) == 0xFFFFFFFFu);
  CHECK(eval<S32>([](Kernel& k) { return k.shr(k.mov<S32>(8), 40u); }) == 0);
  CHECK(eval<U16>([](Kernel& k) { return k.shr(k.mov<U16>(std::uint16_t{0x8000}), 15u); }) == 1);
  CHECK(eval<B16>([](Kernel& k) { return k.shl(k.mov<B16>(std::uint16_t{1}), 16u); }) == 0);
  CHECK(eval<B64>([](Kernel& k) { return k.shl(k.mov<B64>(1ull), 63u); }) == 1ull << 63);
  CHECK(eval<B64>([](Kernel& k) { return k.shl(k.mov<B64>(1ull), 64u); }) == 0);
  CHECK(eval<S64>([](Kernel& k) { return k.shr(k.mov<S64>(std::int64_t{-1} << 40), 100u); }) ==
        ~0ull);
}

TEST_CASE("setp on integers: signed, unsigned and the lo/ls/hi/hs forms", "[executor][int]") {
  CHECK(eval_pred([](Kernel& k) { return k.setp(Cmp::Lt, k.mov<S32>(-1), 1); }));
  CHECK_FALSE(eval_pred([](Kernel& k) { return k.setp(Cmp::Lt, k.mov<U32>(0xFFFFFFFFu), 1u); }));
  CHECK_FALSE(eval_pred([](Kernel& k) { return k.setp(Cmp::Lo, k.mov<U32>(0xFFFFFFFFu), 1u); }));
  CHECK(eval_pred([](Kernel& k) { return k.setp(Cmp::Hi, k.mov<U32>(0xFFFFFFFFu), 1u); }));
  CHECK(eval_pred([](Kernel& k) { return k.setp(Cmp::Hs, k.mov<U32>(5u), 5u); }));
  CHECK(eval_pred([](Kernel& k) { return k.setp(Cmp::Ls, k.mov<U32>(5u), 5u); }));
  CHECK(eval_pred(
      [](Kernel& k) { return k.setp(Cmp::Ge, k.mov<S64>(std::int64_t{-1}), std::int64_t{-1}); }));
  CHECK(eval_pred(
      [](Kernel& k) { return k.setp(Cmp::Ne, k.mov<U16>(std::uint16_t{1}), std::uint16_t{2}); }));
  CHECK(eval_pred([](Kernel& k) { return k.setp(Cmp::Gt, k.mov<U64>(~0ull), 0ull); }));
  CHECK(eval_pred([](Kernel& k) { return k.setp(Cmp::Le, k.mov<S32>(-5), -5); }));
  CHECK_FALSE(eval_pred([](Kernel& k) { return k.setp(Cmp::Eq, k.mov<S32>(-5), 5); }));
}

TEST_CASE("selp, mov, bitcast, pack and unpack", "[executor][int]") {
  CHECK(eval<U32>([](Kernel& k) {
          Pred p = k.setp(Cmp::Eq, k.mov<U32>(1u), 1u);
          return k.selp<U32>(7u, 9u, p);
        }) == 7);
  CHECK(eval<F32>([](Kernel& k) {
          Pred p = k.setp(Cmp::Eq, k.mov<U32>(1u), 2u);
          return k.selp<F32>(1.0f, 2.0f, p);
        }) == test::bits(2.0f));
  CHECK(eval<U32>([](Kernel& k) { return k.bitcast<U32>(k.mov<F32>(1.0f)); }) == 0x3F800000u);
  CHECK(eval<B32>([](Kernel& k) {
          return k.pack(k.mov<B16>(std::uint16_t{0x1234}), k.mov<B16>(std::uint16_t{0xABCD}));
        }) == 0xABCD1234u);
  CHECK(eval<B16>([](Kernel& k) { return k.unpack<B16>(k.mov<B32>(0xABCD1234u))[0]; }) == 0x1234);
  CHECK(eval<B16>([](Kernel& k) { return k.unpack<B16>(k.mov<B32>(0xABCD1234u))[1]; }) == 0xABCD);
}
