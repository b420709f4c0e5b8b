#include <catch2/catch.hpp>

#include <cfenv>
#include <cmath>
#include <limits>

#include "support.hpp"

using namespace ptxdsl;
using test::bits;
using test::eval;
using test::f32;

namespace {

template <TypeTag To, TypeTag From>
std::uint64_t cvt(std::function<Reg<From>(Kernel&)> src, Rounding r = Rounding::None,
                  bool ftz = false, bool sat = false) {
  return eval<To>([&](Kernel& k) { return k.cvt<To>(src(k), r, ftz, sat); });
}
template <TypeTag To>
std::uint64_t cvt_f32(float v, Rounding r = Rounding::None, bool ftz = false, bool sat = false) {
  return cvt<To, F32>([&](Kernel& k) { return k.mov<F32>(v); }, r, ftz, sat);
}

}  // namespace

TEST_CASE("cvt f32 -> f16 rounds in every mode, overflows and underflows as IEEE",
          "[executor][cvt]") {
  CHECK(cvt_f32<F16>(1.0f) == 0x3C00);
  CHECK(cvt_f32<F16>(65519.0f) == 0x7BFF);
  CHECK(cvt_f32<F16>(65520.0f) == 0x7C00);  // the tie above the largest finite goes to inf
  CHECK(cvt_f32<F16>(65520.0f, Rounding::Rz) == 0x7BFF);
  CHECK(cvt_f32<F16>(1e6f, Rounding::Rz) == 0x7BFF);
  CHECK(cvt_f32<F16>(-1e6f, Rounding::Rm) == 0xFC00);
  CHECK(cvt_f32<F16>(-1e6f, Rounding::Rp) == 0xFBFF);
  CHECK(cvt_f32<F16>(std::ldexp(1.0f, -25)) == 0x0000);  // tie with 0: even
  CHECK(cvt_f32<F16>(std::ldexp(1.5f, -25)) == 0x0001);  // above the tie
  CHECK(cvt_f32<F16>(std::ldexp(3.0f, -25)) == 0x0002);  // 1.5 quanta: tie, to even 2
  CHECK(cvt_f32<F16>(1e-9f, Rounding::Rp) == 0x0001);
  CHECK(cvt_f32<F16>(-1e-9f, Rounding::Rm) == 0x8001);
  CHECK(cvt_f32<F16>(-1e-9f, Rounding::Rz) == 0x8000);
  CHECK(cvt_f32<F16>(1.0f + std::ldexp(1.0f, -11), Rounding::Rp) == 0x3C01);
  CHECK(cvt_f32<F16>(1.0f + std::ldexp(1.0f, -11), Rounding::Rn) == 0x3C00);
  CHECK(cvt_f32<F16>(1.0f + std::ldexp(3.0f, -11)) == 0x3C02);
  CHECK(cvt_f32<F16>(std::nanf("")) == 0x7FFF);
  CHECK(cvt_f32<F16>(-INFINITY) == 0xFC00);
  CHECK(cvt_f32<F16>(2.0f, Rounding::Rn, false, true) == 0x3C00);  // .sat: 1.0
}

TEST_CASE("cvt f32 -> bf16 and back; f16 -> f32 is exact", "[executor][cvt]") {
  CHECK(cvt_f32<BF16>(1.0f + std::ldexp(1.0f, -8)) == 0x3F80);
  CHECK(cvt_f32<BF16>(1.0f + std::ldexp(3.0f, -8)) == 0x3F82);
  CHECK(cvt_f32<BF16>(1.0f + std::ldexp(1.0f, -8), Rounding::Rp) == 0x3F81);
  CHECK(cvt_f32<BF16>(std::numeric_limits<float>::max()) == 0x7F80);
  CHECK(cvt_f32<BF16>(std::numeric_limits<float>::max(), Rounding::Rz) == 0x7F7F);
  CHECK(cvt_f32<BF16>(std::nanf("")) == 0x7FFF);
  for (std::uint32_t h : {0x0001u, 0x03FFu, 0x3C00u, 0x7BFFu, 0xC000u, 0x7C00u}) {
    CHECK(cvt<F32, F16>([&](Kernel& k) {
            return k.mov<F16>(f16_bits_to_f32(static_cast<std::uint16_t>(h)));
          }) == bits(f16_bits_to_f32(static_cast<std::uint16_t>(h))));
  }
  CHECK(cvt<F32, BF16>([](Kernel& k) { return k.mov<BF16>(-3.0f); }) == bits(-3.0f));
  // ftz on the f32 side: a bf16 subnormal becomes 0.
  CHECK(cvt<F32, BF16>([](Kernel& k) { return k.bitcast<BF16>(k.mov<B16>(std::uint16_t{0x0001})); },
                       Rounding::None, true) == 0);
  CHECK(cvt<F16, BF16>([](Kernel& k) { return k.mov<BF16>(0.5f); }) == 0x3800);
}

TEST_CASE("cvt float -> int: integer roundings, saturation, NaN to 0", "[executor][cvt]") {
  CHECK(cvt_f32<S32>(-2.7f) == static_cast<std::uint32_t>(-2));  // default .rzi
  CHECK(cvt_f32<S32>(-2.7f, Rounding::Rmi) == static_cast<std::uint32_t>(-3));
  CHECK(cvt_f32<S32>(-2.7f, Rounding::Rpi) == static_cast<std::uint32_t>(-2));
  CHECK(cvt_f32<S32>(2.5f, Rounding::Rni) == 2);
  CHECK(cvt_f32<S32>(3.5f, Rounding::Rni) == 4);
  CHECK(cvt_f32<S32>(3e9f) == 0x7FFFFFFFu);
  CHECK(cvt_f32<S32>(-3e9f) == 0x80000000u);
  CHECK(cvt_f32<U32>(-1.0f) == 0);
  CHECK(cvt_f32<U32>(5e9f) == 0xFFFFFFFFu);
  CHECK(cvt_f32<U32>(std::nanf("")) == 0);
  CHECK(cvt_f32<S64>(-1e30f) == 0x8000000000000000ull);
  CHECK(cvt_f32<U64>(1e30f) == ~0ull);
  CHECK(cvt_f32<U16>(70000.0f) == 0xFFFF);
  CHECK(cvt_f32<U64>(4294967296.0f) == 4294967296ull);
}

TEST_CASE("cvt int -> float rounds in every mode", "[executor][cvt]") {
  const auto s32 = [](std::int32_t v, Rounding r) {
    return cvt<F32, S32>([&](Kernel& k) { return k.mov<S32>(v); }, r);
  };
  CHECK(s32(16777217, Rounding::Rn) == bits(16777216.0f));
  CHECK(s32(16777219, Rounding::Rn) == bits(16777220.0f));  // tie: even
  CHECK(s32(16777219, Rounding::Rz) == bits(16777218.0f));
  CHECK(s32(16777219, Rounding::Rp) == bits(16777220.0f));
  CHECK(s32(-16777219, Rounding::Rm) == bits(-16777220.0f));
  CHECK(s32(-16777219, Rounding::Rz) == bits(-16777218.0f));
  const auto u64 = [](std::uint64_t v, Rounding r) {
    return cvt<F32, U64>([&](Kernel& k) { return k.mov<U64>(v); }, r);
  };
  CHECK(u64(~0ull, Rounding::Rn) == bits(18446744073709551616.0f));
  CHECK(u64(~0ull, Rounding::Rz) == 0x5F7FFFFFu);
  CHECK(u64((1ull << 53) + 1, Rounding::Rp) == bits(std::nextafter(9007199254740992.0f, INFINITY)));
  CHECK(cvt<F64, U64>([](Kernel& k) { return k.mov<U64>((1ull << 53) + 1); }, Rounding::Rp) ==
        std::bit_cast<std::uint64_t>(9007199254740994.0));
  CHECK(cvt<F64, U64>([](Kernel& k) { return k.mov<U64>((1ull << 53) + 1); }, Rounding::Rn) ==
        std::bit_cast<std::uint64_t>(9007199254740992.0));
  CHECK(cvt<F64, S64>([](Kernel& k) { return k.mov<S64>(-((std::int64_t{1} << 53) + 1)); },
                      Rounding::Rm) == std::bit_cast<std::uint64_t>(-9007199254740994.0));
  CHECK(cvt<F16, U32>([](Kernel& k) { return k.mov<U32>(70000u); }) == 0x7C00);
  CHECK(cvt<F16, S32>([](Kernel& k) { return k.mov<S32>(-3); }) == f32_to_f16_bits(-3.0f));
}

TEST_CASE("cvt int -> int: extension, truncation, saturation", "[executor][cvt]") {
  CHECK(cvt<S64, S32>([](Kernel& k) { return k.mov<S32>(-1); }) == ~0ull);
  CHECK(cvt<U64, U32>([](Kernel& k) { return k.mov<U32>(0xFFFFFFFFu); }) == 0xFFFFFFFFull);
  CHECK(cvt<U64, S32>([](Kernel& k) { return k.mov<S32>(-1); }) == ~0ull);
  CHECK(cvt<U32, U64>([](Kernel& k) { return k.mov<U64>(0x123456789ull); }) == 0x23456789u);
  CHECK(cvt<U32, S32>([](Kernel& k) { return k.mov<S32>(-5); }, Rounding::None, false, true) == 0);
  CHECK(cvt<S32, U32>([](Kernel& k) { return k.mov<U32>(0xFFFFFFFFu); }, Rounding::None, false,
                      true) == 0x7FFFFFFFu);
  CHECK(cvt<U16, U32>([](Kernel& k) { return k.mov<U32>(0x12345u); }) == 0x2345);
  CHECK(cvt<U16, U32>([](Kernel& k) { return k.mov<U32>(0x12345u); }, Rounding::None, false,
                      true) == 0xFFFF);
  CHECK(cvt<S32, U16>([](Kernel& k) { return k.mov<U16>(std::uint16_t{0xFFFF}); }) == 0xFFFF);
}

TEST_CASE("cvt float -> float: widening exact, narrowing rounded, integral roundings",
          "[executor][cvt]") {
  CHECK(cvt_f32<F64>(0.1f) == std::bit_cast<std::uint64_t>(static_cast<double>(0.1f)));
  CHECK(cvt<F32, F64>([](Kernel& k) { return k.mov<F64>(0.1); }) == bits(0.1f));
  CHECK(cvt<F32, F64>([](Kernel& k) { return k.mov<F64>(0.1); }, Rounding::Rz) ==
        bits(std::nextafter(0.1f, 0.0f)));  // 0.1f rounds up from 0.1
  CHECK(cvt<F32, F64>([](Kernel& k) { return k.mov<F64>(1e300); }) == 0x7F800000u);
  CHECK(cvt_f32<F32>(2.5f, Rounding::Rni) == bits(2.0f));
  CHECK(cvt_f32<F32>(-2.5f, Rounding::Rmi) == bits(-3.0f));
  CHECK(cvt_f32<F32>(-2.5f, Rounding::Rzi) == bits(-2.0f));
  CHECK(cvt_f32<F32>(2.1f, Rounding::Rpi) == bits(3.0f));
  CHECK(cvt_f32<F32>(std::ldexp(1.0f, -130), Rounding::None, true) == 0);  // cvt.ftz.f32.f32
  CHECK(cvt_f32<F32>(1.5f, Rounding::None, false, true) == bits(1.0f));    // cvt.sat.f32.f32
  CHECK(cvt_f32<F32>(std::nanf(""), Rounding::None, false, true) == 0);
}

TEST_CASE("cvt pack: `d, hi, lo` puts lo in the low half", "[executor][cvt]") {
  CHECK(eval<F16x2>([](Kernel& k) {
          return k.cvt_pack<F16x2>(k.mov<F32>(1.0f), k.mov<F32>(2.0f));
        }) == 0x40003C00u);
  CHECK(eval<BF16x2>([](Kernel& k) {
          return k.cvt_pack<BF16x2>(k.mov<F32>(1.0f), k.mov<F32>(-2.0f));
        }) == 0xC0003F80u);
  CHECK(eval<F16x2>([](Kernel& k) {
          return k.cvt_pack<F16x2>(k.mov<F32>(1.0f + std::ldexp(1.0f, -11)), k.mov<F32>(1e6f),
                                   Rounding::Rz);
        }) == 0x7BFF3C00u);
  CHECK(eval<F16x2>([](Kernel& k) {
          return k.cvt_pack<F16x2>(k.mov<F32>(std::nanf("")), k.mov<F32>(0.0f));
        }) == 0x00007FFFu);
}
