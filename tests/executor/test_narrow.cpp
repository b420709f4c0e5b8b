// The 8-bit integer, FP8, FP4 and ue8m0 conversions against hand-computed encodings: rounding to
// nearest even (ties both ways), saturation to the largest finite value, NaN, -0 and subnormals.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "support.hpp"

using namespace ptxdsl;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNan = std::numeric_limits<float>::quiet_NaN();

// Runs `body` in a one-thread kernel of a module for `arch` and returns the bits it returns.
template <TypeTag T>
std::uint64_t run(Arch arch, PtxVersion version, const std::function<Reg<T>(Kernel&)>& body) {
  Module m(arch, version);
  Kernel& k = m.kernel("eval");
  auto out = k.param_ptr<T>("out");
  k.st(out, body(k));
  k.finalize();
  CpuDevice dev;
  const ExecutorAddress p = dev.alloc(8, "out", 0);
  dev.launch(k, {1, 1}, {p});
  std::uint64_t bits = 0;
  dev.read(std::as_writable_bytes(std::span<std::uint64_t>(&bits, 1)).first(T::kBytes), p);
  return bits;
}

// The pair `cvt_pack<Pair>(lo, hi)` makes.
template <NarrowPairTag Pair>
std::uint64_t pack(float lo, float hi, Rounding r = Rounding::None, bool satfinite = true) {
  const bool fp8 = Pair::kType == ScalarType::E4M3x2 || Pair::kType == ScalarType::E5M2x2;
  return run<Pair>(
      fp8 ? Arch::Sm90 : Arch::Sm100a, fp8 ? PtxVersion{7, 8} : PtxVersion{8, 6},
      [&](Kernel& k) { return k.cvt_pack<Pair>(k.mov<F32>(lo), k.mov<F32>(hi), r, satfinite); });
}
std::uint64_t e4m3(float v) {
  return pack<E4M3x2>(v, 0.0f) & 0xFF;
}
std::uint64_t e5m2(float v) {
  return pack<E5M2x2>(v, 0.0f) & 0xFF;
}
std::uint64_t e2m1(float v) {
  return pack<E2M1x2>(v, 0.0f) & 0xF;
}
std::uint64_t ue8m0(float v, Rounding r, bool satfinite = true) {
  return pack<UE8M0x2>(v, 1.0f, r, satfinite) & 0xFF;
}

// What `cvt_unpack` makes of a pair's bits.
template <NarrowPairTag Pair>
std::uint64_t unpack(std::uint16_t bits) {
  const bool fp8 = Pair::kType == ScalarType::E4M3x2 || Pair::kType == ScalarType::E5M2x2;
  return run<Unpacked<Pair>>(
      fp8 ? Arch::Sm90 : Arch::Sm100a, fp8 ? PtxVersion{7, 8} : PtxVersion{8, 6}, [&](Kernel& k) {
        if constexpr (Pair::kType == ScalarType::E2M1x2) {
          // e2m1x2 lives in a .b8 register, which only cvt and ld write.
          Reg<E2M1x2> p = k.cvt_pack<E2M1x2>(k.mov<F32>(e2m1_bits_to_f32(bits & 0xF)),
                                             k.mov<F32>(e2m1_bits_to_f32(bits >> 4)));
          return k.cvt_unpack(p);
        } else {
          return k.cvt_unpack(k.mov<Pair>(bits));
        }
      });
}

template <TypeTag To>
std::uint64_t to_int(float v, Rounding r, bool sat = true) {
  return run<To>(Arch::Sm80, {7, 0},
                 [&](Kernel& k) { return k.cvt<To>(k.mov<F32>(v), r, false, sat); });
}

}  // namespace

TEST_CASE("f32 -> e4m3: nearest even, satfinite to 448, NaN 0x7F, -0, subnormals",
          "[executor][cvt][narrow]") {
  CHECK(e4m3(1.0f) == 0x38);
  CHECK(e4m3(-3.5f) == 0xC6);
  CHECK(e4m3(240.0f) == 0x77);
  CHECK(e4m3(448.0f) == 0x7E);  // the largest finite
  CHECK(e4m3(449.0f) == 0x7E);
  CHECK(e4m3(464.0f) == 0x7E);  // the tie with 480, which is NaN's encoding: saturates
  CHECK(e4m3(1e6f) == 0x7E);
  CHECK(e4m3(-1e6f) == 0xFE);
  CHECK(e4m3(kInf) == 0x7E);
  CHECK(e4m3(-kInf) == 0xFE);
  CHECK(e4m3(kNan) == 0x7F);
  CHECK(e4m3(0.0f) == 0x00);
  CHECK(e4m3(-0.0f) == 0x80);
  CHECK(e4m3(std::ldexp(1.0f, -9)) == 0x01);             // the smallest subnormal
  CHECK(e4m3(std::ldexp(1.0f, -10)) == 0x00);            // its half: a tie, to even 0
  CHECK(e4m3(-std::ldexp(1.0f, -10)) == 0x80);           // ... keeping its sign
  CHECK(e4m3(std::ldexp(1.5f, -10)) == 0x01);            // above the tie
  CHECK(e4m3(std::ldexp(3.0f, -10)) == 0x02);            // 1.5 quanta: to even 2
  CHECK(e4m3(std::ldexp(7.0f, -9)) == 0x07);             // the largest subnormal
  CHECK(e4m3(std::ldexp(7.5f, -9)) == 0x08);             // rounds up into the smallest normal
  CHECK(e4m3(std::ldexp(1.0f, -6)) == 0x08);             // the smallest normal
  CHECK(e4m3(1.0625f) == 0x38);                          // tie between 1 and 1.125: even
  CHECK(e4m3(1.1875f) == 0x3A);                          // tie between 1.125 and 1.25: even
  CHECK(e4m3(1.0625f + std::ldexp(1.0f, -20)) == 0x39);  // just above the tie
  CHECK(pack<E4M3x2>(1.0f, -2.0f) == 0xC038);            // lo in the low byte
}

TEST_CASE("f32 -> e5m2: nearest even, satfinite to 57344, NaN, -0, subnormals",
          "[executor][cvt][narrow]") {
  CHECK(e5m2(1.0f) == 0x3C);
  CHECK(e5m2(57344.0f) == 0x7B);
  CHECK(e5m2(61440.0f) == 0x7B);  // the tie with infinity: saturates
  CHECK(e5m2(kInf) == 0x7B);
  CHECK(e5m2(-kInf) == 0xFB);
  CHECK(e5m2(kNan) == 0x7F);
  CHECK(e5m2(-0.0f) == 0x80);
  CHECK(e5m2(std::ldexp(1.0f, -16)) == 0x01);
  CHECK(e5m2(std::ldexp(1.0f, -17)) == 0x00);
  CHECK(e5m2(std::ldexp(3.0f, -17)) == 0x02);
  CHECK(e5m2(1.125f) == 0x3C);
  CHECK(e5m2(1.375f) == 0x3E);
  CHECK(pack<E5M2x2>(-1.0f, 2.0f) == 0x40BC);
}

TEST_CASE("f32 -> e2m1 (FP4): nearest even, satfinite to 6, -0, the subnormal 0.5",
          "[executor][cvt][narrow]") {
  CHECK(e2m1(6.0f) == 0x7);
  CHECK(e2m1(5.0f) == 0x6);  // tie between 4 and 6: even
  CHECK(e2m1(7.0f) == 0x7);  // beyond 6 saturates
  CHECK(e2m1(kInf) == 0x7);
  CHECK(e2m1(-kInf) == 0xF);
  CHECK(e2m1(kNan) == 0x7);  // no NaN in e2m1
  CHECK(e2m1(-0.0f) == 0x8);
  CHECK(e2m1(0.5f) == 0x1);
  CHECK(e2m1(0.25f) == 0x0);  // tie between 0 and 0.5: even
  CHECK(e2m1(0.75f) == 0x2);  // tie between 0.5 and 1: even
  CHECK(e2m1(1.25f) == 0x2);
  CHECK(e2m1(2.5f) == 0x4);
  CHECK(e2m1(-3.0f) == 0xD);
  CHECK(pack<E2M1x2>(1.0f, -6.0f) == 0xF2);  // lo in the low nibble
}

TEST_CASE("f32 -> ue8m0: toward zero or up to a power of two, satfinite, NaN 0xFF",
          "[executor][cvt][narrow]") {
  CHECK(ue8m0(1.0f, Rounding::Rz) == 0x7F);
  CHECK(ue8m0(1.0f, Rounding::Rp) == 0x7F);
  CHECK(ue8m0(3.0f, Rounding::Rz) == 0x80);
  CHECK(ue8m0(3.0f, Rounding::Rp) == 0x81);
  CHECK(ue8m0(-4.0f, Rounding::Rz) == 0x81);  // the magnitude's
  CHECK(ue8m0(0.0f, Rounding::Rz) == 0x00);
  CHECK(ue8m0(std::ldexp(1.0f, -127), Rounding::Rp) == 0x00);
  CHECK(ue8m0(std::ldexp(1.0f, -126), Rounding::Rz) == 0x01);
  CHECK(ue8m0(std::ldexp(1.0f, 127), Rounding::Rz) == 0xFE);
  CHECK(ue8m0(std::ldexp(1.5f, 127), Rounding::Rz) == 0xFE);
  CHECK(ue8m0(std::ldexp(1.5f, 127), Rounding::Rp) == 0xFE);
  CHECK(ue8m0(std::ldexp(1.5f, 127), Rounding::Rp, false) == 0xFF);
  CHECK(ue8m0(kInf, Rounding::Rz) == 0xFE);
  CHECK(ue8m0(kInf, Rounding::Rz, false) == 0xFF);
  CHECK(ue8m0(kNan, Rounding::Rz) == 0xFF);
  CHECK(pack<UE8M0x2>(2.0f, 0.5f, Rounding::Rz) == 0x7E80);
}

TEST_CASE("narrow pairs widen exactly, and f16x2 -> e4m3x2/e5m2x2 rounds and saturates",
          "[executor][cvt][narrow]") {
  CHECK(unpack<E4M3x2>(0x7E38) == 0x5F003C00u);   // 448, 1
  CHECK(unpack<E4M3x2>(0x8001) == 0x80001800u);   // -0, 2^-9
  CHECK(unpack<E4M3x2>(0x7F00) == 0x7FFF0000u);   // NaN, 0
  CHECK(unpack<E5M2x2>(0xFB7C) == 0xFB007C00u);   // -57344, inf
  CHECK(unpack<E5M2x2>(0x0001) == 0x00000100u);   // 0, 2^-16
  CHECK(unpack<E2M1x2>(0xF2) == 0xC6003C00u);     // -6, 1
  CHECK(unpack<E2M1x2>(0x81) == 0x80003800u);     // -0, 0.5
  CHECK(unpack<UE8M0x2>(0x7F00) == 0x3F800040u);  // 1, 2^-127 (a bf16 subnormal)
  CHECK(unpack<UE8M0x2>(0xFF80) == 0x7FFF4000u);  // NaN, 2
  const auto narrow = [](std::uint32_t pair, bool e4) {
    return run<E4M3x2>(Arch::Sm90, {7, 8}, [&](Kernel& k) {
      Reg<F16x2> h = k.mov<F16x2>(pair);
      return e4 ? k.cvt_pack<E4M3x2>(h) : k.bitcast<E4M3x2>(k.cvt_pack<E5M2x2>(h));
    });
  };
  CHECK(narrow(0xC0003800u, true) == 0xC030);   // -2, 0.5
  CHECK(narrow(0x7C005F80u, true) == 0x7E7E);   // inf, 480: saturate
  CHECK(narrow(0xFC007E00u, false) == 0xFB7F);  // -inf saturates, NaN stays NaN
}

TEST_CASE("f32 -> s8/u8: every integer rounding, saturation, NaN to 0, sign in the register",
          "[executor][cvt][narrow]") {
  CHECK(to_int<S8>(127.5f, Rounding::Rni) == 0x7F);
  CHECK(to_int<S8>(-200.0f, Rounding::Rni) == 0x80);
  CHECK(to_int<S8>(2.5f, Rounding::Rni) == 2);
  CHECK(to_int<S8>(3.5f, Rounding::Rni) == 4);
  CHECK(to_int<S8>(-2.5f, Rounding::Rmi) == 0xFD);
  CHECK(to_int<S8>(-2.5f, Rounding::Rpi) == 0xFE);
  CHECK(to_int<S8>(-2.7f, Rounding::Rzi) == 0xFE);
  CHECK(to_int<S8>(kNan, Rounding::Rni) == 0);
  CHECK(to_int<U8>(300.0f, Rounding::Rni) == 0xFF);
  CHECK(to_int<U8>(-5.0f, Rounding::Rzi) == 0);
  CHECK(to_int<U8>(254.5f, Rounding::Rni) == 254);
  CHECK(to_int<U8>(254.5f, Rounding::Rpi) == 255);
  CHECK(to_int<U8>(kInf, Rounding::Rzi, false) == 255);
  // The s8 result fills its 16-bit register sign-extended; widening keeps the value.
  CHECK(run<S32>(Arch::Sm80, {7, 0}, [](Kernel& k) {
          return k.cvt<S32>(k.cvt<S8>(k.mov<F32>(-3.0f), Rounding::Rni, false, true));
        }) == 0xFFFFFFFDu);
  CHECK(run<U32>(Arch::Sm80, {7, 0}, [](Kernel& k) {
          return k.cvt<U32>(k.cvt<U8>(k.mov<S32>(-7), Rounding::None, false, true));
        }) == 0);
}

TEST_CASE("ld/st of bytes: u8 zero-extends, s8 sign-extends, v4 and v2 move byte by byte",
          "[executor][memory][narrow]") {
  Module m(Arch::Sm80, {7, 0});
  Kernel& k = m.kernel("bytes");
  GlobalPtr<U8> in = k.param_ptr<U8>("in");
  GlobalPtr<S32> out = k.param_ptr<S32>("out");
  GlobalPtr<U8> copy = k.param_ptr<U8>("copy");
  Vec<U8, 4> v = k.ld_v<4>(in);
  k.st(out, k.cvt<S32>(k.ld(in.as<S8>() + 1)));
  k.st(out + 1, k.cvt<S32>(v[1]));
  k.st_v<2>(copy + 2, Vec<U8, 2>{v[3], v[0]});
  k.st(copy + 5, k.ld(in + 4));
  k.finalize();
  CpuDevice dev;
  const std::vector<std::uint8_t> bytes = {0x12, 0xF0, 0x7F, 0x80, 0xAB, 0, 0, 0};
  const ExecutorAddress pin = dev.upload(std::span<const std::uint8_t>(bytes), "in");
  const ExecutorAddress pout = dev.alloc(8, "out", 0);
  const ExecutorAddress pcopy = dev.alloc(8, "copy", 0);
  dev.launch(k, {1, 1}, {pin, pout, pcopy});
  std::int32_t got[2];
  dev.read(std::as_writable_bytes(std::span<std::int32_t>(got)), pout);
  CHECK(got[0] == -16);
  CHECK(got[1] == 0xF0);
  std::uint8_t copied[8];
  dev.read(std::as_writable_bytes(std::span<std::uint8_t>(copied)), pcopy);
  CHECK(copied[2] == 0x80);
  CHECK(copied[3] == 0x12);
  CHECK(copied[5] == 0xAB);
  CHECK(copied[0] == 0);
}

// Element I/O of the byte types: n elements (1, 2, 4, 8) loaded as f32 and stored back, and f32
// values encoded (u8/s8 by cvt.rni.sat, FP8 by cvt.rn.satfinite).
TEST_CASE("element I/O of u8, s8, e4m3 and e5m2: load as f32, encode from f32",
          "[executor][memory][narrow]") {
  const std::vector<std::uint8_t> bytes = {0x00, 0x01, 0x7F, 0x80, 0xFF, 0x38, 0xC6, 0x7E};
  const auto value = [](ScalarType t, std::uint8_t b) -> float {
    switch (t) {
      case ScalarType::U8:
        return b;
      case ScalarType::S8:
        return static_cast<std::int8_t>(b);
      case ScalarType::E4M3:
        return e4m3_bits_to_f32(b);
      default:
        return e5m2_bits_to_f32(b);
    }
  };
  for (ScalarType t : {ScalarType::U8, ScalarType::S8, ScalarType::E4M3, ScalarType::E5M2}) {
    for (std::uint32_t n : {1u, 2u, 4u, 8u}) {
      INFO(ptx_name(t) << " x" << n);
      Module m(Arch::Sm90, {7, 8});
      Kernel& k = m.kernel("io");
      const GlobalDPtr in = param_dptr(k, "in", t);
      const GlobalDPtr out = param_dptr(k, "out", ScalarType::F32);
      const GlobalDPtr back = param_dptr(k, "back", t);
      const Values v = load_values(k, in, n);
      store_values(k, out, v);
      store_values(k, back, v);
      k.finalize();
      CpuDevice dev;
      const ExecutorAddress pin = dev.upload(std::span<const std::uint8_t>(bytes), "in");
      const ExecutorAddress pout = dev.alloc(32, "out", 0);
      const ExecutorAddress pback = dev.alloc(8, "back", 0);
      dev.launch(k, {1, 1}, {pin, pout, pback});
      float got[8];
      std::uint8_t round_trip[8];
      dev.read(std::as_writable_bytes(std::span<float>(got)), pout);
      dev.read(std::as_writable_bytes(std::span<std::uint8_t>(round_trip)), pback);
      for (std::uint32_t i = 0; i < n; ++i) {
        const float want = value(t, bytes[i]);
        if (std::isnan(want)) {
          CHECK(std::isnan(got[i]));
          CHECK(round_trip[i] == 0x7F);  // NaN comes back canonical
        } else {
          CHECK(got[i] == want);
          CHECK(static_cast<int>(round_trip[i]) == static_cast<int>(bytes[i]));
        }
      }
    }
  }
  // Encoding saturates: 300 as u8 is 255, -300 as s8 is -128, 1000 as e4m3 is 448.
  Module m(Arch::Sm90, {7, 8});
  Kernel& k = m.kernel("encode");
  const GlobalDPtr u = param_dptr(k, "u", ScalarType::U8);
  const GlobalDPtr s = param_dptr(k, "s", ScalarType::S8);
  const GlobalDPtr e = param_dptr(k, "e", ScalarType::E4M3);
  const Values v = {k.mov<F32>(300.0f), k.mov<F32>(-300.0f), k.mov<F32>(2.5f), k.mov<F32>(1000.0f)};
  store_values(k, u, v);
  store_values(k, s, v);
  store_values(k, e, v);
  k.finalize();
  CpuDevice dev;
  const ExecutorAddress pu = dev.alloc(4, "u", 0), ps = dev.alloc(4, "s", 0),
                        pe = dev.alloc(4, "e", 0);
  dev.launch(k, {1, 1}, {pu, ps, pe});
  std::uint8_t gu[4], gs[4], ge[4];
  dev.read(std::as_writable_bytes(std::span<std::uint8_t>(gu)), pu);
  dev.read(std::as_writable_bytes(std::span<std::uint8_t>(gs)), ps);
  dev.read(std::as_writable_bytes(std::span<std::uint8_t>(ge)), pe);
  CHECK((gu[0] == 255 && gu[1] == 0 && gu[2] == 2 && gu[3] == 255));
  CHECK((gs[0] == 0x7F && gs[1] == 0x80 && gs[2] == 2 && gs[3] == 0x7F));
  CHECK((ge[0] == 0x79 && ge[1] == 0xF9 && ge[2] == 0x42 && ge[3] == 0x7E));  // 300 -> 288
}
