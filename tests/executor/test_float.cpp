#include <catch2/catch.hpp>

#include <cfenv>
#include <cmath>
#include <limits>
#include <random>

#include "support.hpp"

using namespace ptxdsl;
using test::bits;
using test::eval;
using test::f32;

// Differential checks: the executor against the host FPU switched to the same rounding mode, on
// random operands across the whole range (subnormal results, overflow, signed zeros, NaN).
namespace {

using Op3 = std::function<Reg<F32>(Kernel&, Reg<F32>, Reg<F32>, Reg<F32>)>;

std::vector<float> operands(std::uint32_t seed, std::size_t n) {
  std::mt19937 rng(seed);
  std::vector<float> out;
  const float specials[] = {0.0f,
                            -0.0f,
                            1.0f,
                            -1.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::denorm_min(),
                            std::numeric_limits<float>::min(),
                            3.0f,
                            0.1f};
  for (float s : specials) out.push_back(s);
  while (out.size() < n) {
    const std::uint32_t kind = rng() % 8;
    const float mantissa = std::ldexp(static_cast<float>(rng() & 0xFFFFFF), -23);
    const float sign = rng() & 1 ? -1.0f : 1.0f;
    int e;
    if (kind == 0) {
      out.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));  // any bits
      continue;
    } else if (kind == 1) {
      e = -140 + static_cast<int>(rng() % 20);  // subnormal and just above
    } else if (kind == 2) {
      e = 110 + static_cast<int>(rng() % 17);  // near overflow
    } else if (kind == 3) {
      e = -75 + static_cast<int>(rng() % 10);  // products land in the subnormals
    } else {
      e = static_cast<int>(rng() % 40) - 20;
    }
    out.push_back(sign * std::ldexp(mantissa, e));
  }
  return out;
}

std::vector<std::uint32_t> run_f32(const Op3& op, const std::vector<float>& a,
                                   const std::vector<float>& b, const std::vector<float>& c) {
  Module m;
  Kernel& k = m.kernel("f32_op");
  auto pa = k.param_ptr<F32>("a"), pb = k.param_ptr<F32>("b"), pc = k.param_ptr<F32>("c");
  auto po = k.param_ptr<F32>("out");
  auto n = k.param<U32>("n");
  Reg<U32> i = k.mad(k.ctaid_x(), k.ntid_x(), k.tid_x());
  k.if_(k.setp(Cmp::Lt, i, n),
        [&] { k.st(po + i, op(k, k.ld(pa + i), k.ld(pb + i), k.ld(pc + i))); });
  k.finalize();
  CpuDevice dev;
  const auto count = static_cast<std::uint32_t>(a.size());
  const ExecutorAddress da = dev.upload<float>(a, "a"), db = dev.upload<float>(b, "b"),
                        dc = dev.upload<float>(c, "c"), out = dev.alloc(count * 4, "out");
  dev.launch(k, {(count + 255) / 256, 256}, {da, db, dc, out, count});
  return dev.download<std::uint32_t>(out, count);
}

int fe_mode(Rounding r) {
  switch (r) {
    case Rounding::Rz:
      return FE_TOWARDZERO;
    case Rounding::Rm:
      return FE_DOWNWARD;
    case Rounding::Rp:
      return FE_UPWARD;
    default:
      return FE_TONEAREST;
  }
}

float flush32(float v) {
  return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v;
}

template <class F>
float host(Rounding r, bool ftz, float a, float b, float c, F f) {
  volatile float va = ftz ? flush32(a) : a, vb = ftz ? flush32(b) : b, vc = ftz ? flush32(c) : c;
  std::fesetround(fe_mode(r));
  volatile float out = f(va, vb, vc);
  std::fesetround(FE_TONEAREST);
  return ftz ? flush32(out) : out;
}

template <class F>
void differential(const char* what, const Op3& op, Rounding r, bool ftz, F f) {
  const std::size_t n = 6000;
  const auto a = operands(1, n), b = operands(2, n), c = operands(3, n);
  const auto got = run_f32(op, a, b, c);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float want = host(r, ftz, a[i], b[i], c[i], f);
    const bool ok = std::isnan(want) ? got[i] == 0x7FFFFFFFu : got[i] == bits(want);
    if (!ok && bad++ < 5) {
      INFO(what << ": a=" << a[i] << " b=" << b[i] << " c=" << c[i] << " want " << want << " ("
                << std::hex << bits(want) << ") got " << f32(got[i]) << " (" << got[i] << ")");
      CHECK(ok);
    }
  }
  CHECK(bad == 0);
}

constexpr Rounding kModes[] = {Rounding::Rn, Rounding::Rz, Rounding::Rm, Rounding::Rp};

MathMode mode(Rounding r, bool ftz = false) {
  return MathMode{Precision::Exact, r, ftz, false};
}

}  // namespace

TEST_CASE("f32 add/sub/mul/fma/div/sqrt: every rounding mode, with and without ftz",
          "[executor][float]") {
  for (Rounding r : kModes) {
    for (bool ftz : {false, true}) {
      const MathMode m = mode(r, ftz);
      differential(
          "add", [&](Kernel& k, Reg<F32> a, Reg<F32> b, Reg<F32>) { return k.add(a, b, m); }, r,
          ftz, [](float a, float b, float) { return a + b; });
      differential(
          "sub", [&](Kernel& k, Reg<F32> a, Reg<F32> b, Reg<F32>) { return k.sub(a, b, m); }, r,
          ftz, [](float a, float b, float) { return a - b; });
      differential(
          "mul", [&](Kernel& k, Reg<F32> a, Reg<F32> b, Reg<F32>) { return k.mul(a, b, m); }, r,
          ftz, [](float a, float b, float) { return a * b; });
      differential(
          "fma", [&](Kernel& k, Reg<F32> a, Reg<F32> b, Reg<F32> c) { return k.fma(a, b, c, m); },
          r, ftz, [](float a, float b, float c) { return std::fma(a, b, c); });
      differential(
          "div", [&](Kernel& k, Reg<F32> a, Reg<F32> b, Reg<F32>) { return k.div(a, b, m); }, r,
          ftz, [](float a, float b, float) { return a / b; });
      differential(
          "sqrt", [&](Kernel& k, Reg<F32> a, Reg<F32>, Reg<F32>) { return k.sqrt(a, m); }, r, ftz,
          [](float a, float, float) { return std::sqrt(a); });
      differential(
          "rcp", [&](Kernel& k, Reg<F32> a, Reg<F32>, Reg<F32>) { return k.rcp(a, m); }, r, ftz,
          [](float a, float, float) { return 1.0f / a; });
    }
  }
}

TEST_CASE("f32 rounding by hand", "[executor][float]") {
  const auto add = [](float a, float b, Rounding r) {
    return static_cast<std::uint32_t>(
        eval<F32>([&](Kernel& k) { return k.add(k.mov<F32>(a), b, mode(r)); }));
  };
  const float tiny = std::ldexp(1.0f, -30);
  CHECK(add(1.0f, tiny, Rounding::Rn) == 0x3F800000u);
  CHECK(add(1.0f, tiny, Rounding::Rz) == 0x3F800000u);
  CHECK(add(1.0f, tiny, Rounding::Rm) == 0x3F800000u);
  CHECK(add(1.0f, tiny, Rounding::Rp) == 0x3F800001u);
  CHECK(add(-1.0f, -tiny, Rounding::Rm) == 0xBF800001u);
  CHECK(add(-1.0f, -tiny, Rounding::Rz) == 0xBF800000u);
  CHECK(add(1.0f, -tiny, Rounding::Rz) == 0x3F7FFFFFu);  // just below a binade start
  CHECK(add(std::numeric_limits<float>::max(), std::numeric_limits<float>::max(), Rounding::Rz) ==
        bits(std::numeric_limits<float>::max()));
  CHECK(add(std::numeric_limits<float>::max(), std::numeric_limits<float>::max(), Rounding::Rn) ==
        0x7F800000u);
  // fma rounds once: (1 + 2^-23)(1 - 2^-23) - 1 = -2^-46 exactly.
  CHECK(f32(eval<F32>([](Kernel& k) {
          return k.fma(k.mov<F32>(1.0f + std::ldexp(1.0f, -23)), 1.0f - std::ldexp(1.0f, -23),
                       -1.0f);
        })) == -std::ldexp(1.0f, -46));
  // NaN results are the canonical NaN; min/max return the non-NaN operand.
  CHECK(eval<F32>([](Kernel& k) {
          return k.add(k.mov<F32>(std::numeric_limits<float>::infinity()),
                       -std::numeric_limits<float>::infinity());
        }) == 0x7FFFFFFFu);
  CHECK(f32(eval<F32>([](Kernel& k) { return k.min(k.mov<F32>(std::nanf("")), 2.0f); })) == 2.0f);
  CHECK(f32(eval<F32>([](Kernel& k) { return k.max(k.mov<F32>(1.0f), std::nanf("")); })) == 1.0f);
  CHECK(eval<F32>([](Kernel& k) { return k.min(k.mov<F32>(0.0f), -0.0f); }) == 0x80000000u);
  CHECK(eval<F32>([](Kernel& k) { return k.max(k.mov<F32>(-0.0f), 0.0f); }) == 0u);
  // abs/neg flip the sign bit; .sat clamps to [0, 1] and sends NaN to 0.
  CHECK(eval<F32>([](Kernel& k) { return k.neg(k.mov<F32>(0.0f)); }) == 0x80000000u);
  CHECK(eval<F32>([](Kernel& k) { return k.abs(k.mov<F32>(-2.5f)); }) == bits(2.5f));
  const MathMode sat{Precision::Exact, Rounding::Rn, false, true};
  CHECK(f32(eval<F32>([&](Kernel& k) { return k.add(k.mov<F32>(0.75f), 0.5f, sat); })) == 1.0f);
  CHECK(f32(eval<F32>([&](Kernel& k) { return k.add(k.mov<F32>(-0.75f), 0.5f, sat); })) == 0.0f);
  CHECK(eval<F32>([&](Kernel& k) {
          return k.mul(k.mov<F32>(std::numeric_limits<float>::infinity()), 0.0f, sat);
        }) == 0u);
  // ftz flushes subnormal inputs and results.
  const float sub = std::ldexp(1.0f, -130);
  CHECK(f32(eval<F32>([&](Kernel& k) { return k.add(k.mov<F32>(sub), 0.0f); })) == sub);
  CHECK(f32(eval<F32>([&](Kernel& k) {
          return k.add(k.mov<F32>(sub), 0.0f, mode(Rounding::Rn, true));
        })) == 0.0f);
}

TEST_CASE("approximate functions are within PTX's bounds (here: correctly rounded)",
          "[executor][float]") {
  const auto near = [](float got, double want, double ulps) {
    return std::fabs(got - want) <=
           ulps * std::fabs(std::nextafter(static_cast<float>(want), INFINITY) -
                            static_cast<float>(want));
  };
  for (float x : {0.5f, 1.0f, 2.0f, 3.0f, 10.0f, 1e-20f, 1e20f, 123.456f}) {
    CHECK(near(f32(eval<F32>([&](Kernel& k) { return k.rsqrt(k.mov<F32>(x)); })),
               1.0 / std::sqrt(double{x}), 2));
    CHECK(near(f32(eval<F32>([&](Kernel& k) { return k.lg2(k.mov<F32>(x)); })),
               std::log2(double{x}), 2));
    CHECK(
        near(f32(eval<F32>([&](Kernel& k) { return k.rcp(k.mov<F32>(x), kApprox); })), 1.0 / x, 1));
    CHECK(near(f32(eval<F32>([&](Kernel& k) { return k.sqrt(k.mov<F32>(x), kApprox); })),
               std::sqrt(double{x}), 1));
    CHECK(near(f32(eval<F32>([&](Kernel& k) { return k.div(k.mov<F32>(1.0f), x, kFull); })),
               1.0 / x, 2));
  }
  for (float x : {-3.5f, 0.0f, 0.25f, 3.0f, 20.0f}) {
    CHECK(near(f32(eval<F32>([&](Kernel& k) { return k.ex2(k.mov<F32>(x)); })),
               std::exp2(double{x}), 2));
  }
  CHECK(f32(eval<F32>([](Kernel& k) { return k.rsqrt(k.mov<F32>(4.0f)); })) == 0.5f);
  CHECK(f32(eval<F32>([](Kernel& k) { return k.rsqrt(k.mov<F32>(0.0f)); })) == INFINITY);
  CHECK(f32(eval<F32>([](Kernel& k) { return k.lg2(k.mov<F32>(0.0f)); })) == -INFINITY);
  CHECK(std::isnan(f32(eval<F32>([](Kernel& k) { return k.lg2(k.mov<F32>(-1.0f)); }))));
  CHECK(f32(eval<F32>([](Kernel& k) { return k.ex2(k.mov<F32>(-200.0f), kApproxFtz); })) == 0.0f);
}

TEST_CASE("setp on floats: ordered, unordered, num, nan", "[executor][float]") {
  const float nan = std::nanf("");
  const auto cmp = [](Cmp c, float a, float b) {
    return test::eval_pred([&](Kernel& k) { return k.setp(c, k.mov<F32>(a), b); });
  };
  CHECK(cmp(Cmp::Lt, 1.0f, 2.0f));
  CHECK_FALSE(cmp(Cmp::Lt, nan, 2.0f));
  CHECK(cmp(Cmp::Ltu, nan, 2.0f));
  CHECK_FALSE(cmp(Cmp::Ne, nan, 2.0f));  // ne is ordered
  CHECK(cmp(Cmp::Neu, nan, 2.0f));
  CHECK(cmp(Cmp::Eq, 0.0f, -0.0f));
  CHECK_FALSE(cmp(Cmp::Equ, 1.0f, 2.0f));
  CHECK(cmp(Cmp::Geu, 3.0f, 2.0f));
  CHECK(cmp(Cmp::Num, 1.0f, 2.0f));
  CHECK_FALSE(cmp(Cmp::Num, 1.0f, nan));
  CHECK(cmp(Cmp::Nan, nan, 1.0f));
  CHECK(cmp(Cmp::Le, 2.0f, 2.0f));
  CHECK(cmp(Cmp::Gt, 2.0f, -INFINITY));
  CHECK(cmp(Cmp::Leu, 2.0f, 2.0f));
  CHECK_FALSE(cmp(Cmp::Gtu, 1.0f, 2.0f));
  CHECK(cmp(Cmp::Ge, INFINITY, INFINITY));
  // .ftz compares subnormals as zero.
  CHECK(test::eval_pred(
      [](Kernel& k) { return k.setp(Cmp::Eq, k.mov<F32>(std::ldexp(1.0f, -130)), 0.0f, true); }));
  CHECK_FALSE(test::eval_pred(
      [](Kernel& k) { return k.setp(Cmp::Eq, k.mov<F32>(std::ldexp(1.0f, -130)), 0.0f); }));
}

TEST_CASE("f16, bf16 and packed arithmetic round once to their format", "[executor][float]") {
  const auto h = [](float v) { return f32_to_f16_bits(v); };
  // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: even wins. 1 + 3·2^-11 rounds up to 1 + 2^-9.
  CHECK(eval<F16>([&](Kernel& k) {
          return k.add(k.mov<F16>(1.0f), k.mov<F16>(std::ldexp(1.0f, -11)));
        }) == 0x3C00);
  CHECK(eval<F16>([&](Kernel& k) {
          return k.add(k.mov<F16>(1.0f + std::ldexp(1.0f, -10)), k.mov<F16>(std::ldexp(1.0f, -11)));
        }) == 0x3C02);
  CHECK(eval<F16>([&](Kernel& k) { return k.mul(k.mov<F16>(300.0f), k.mov<F16>(300.0f)); }) ==
        0x7C00);  // inf
  CHECK(eval<F16>([&](Kernel& k) {
          return k.fma(k.mov<F16>(2.0f), k.mov<F16>(3.0f), k.mov<F16>(0.5f));
        }) == h(6.5f));
  CHECK(eval<F16>([&](Kernel& k) { return k.neg(k.mov<F16>(2.0f)); }) == h(-2.0f));
  CHECK(eval<F16>([&](Kernel& k) { return k.max(k.mov<F16>(2.0f), k.mov<F16>(3.0f)); }) == h(3.0f));
  // bf16: 8 significant bits; 1 + 2^-8 is a tie (even: 1), 1 + 3·2^-8 goes up.
  CHECK(eval<BF16>([&](Kernel& k) {
          return k.add(k.mov<BF16>(1.0f), k.mov<BF16>(std::ldexp(1.0f, -8)));
        }) == 0x3F80);
  CHECK(eval<BF16>([&](Kernel& k) {
          return k.add(k.mov<BF16>(1.0f + std::ldexp(1.0f, -7)), k.mov<BF16>(std::ldexp(1.0f, -8)));
        }) == 0x3F82);
  // Pairs: each half on its own.
  const std::uint32_t pair = (std::uint32_t{h(2.0f)} << 16) | h(1.0f);
  const std::uint32_t sum = (std::uint32_t{h(2.5f)} << 16) | h(1.5f);
  CHECK(eval<F16x2>([&](Kernel& k) {
          return k.add(k.bitcast<F16x2>(k.mov<B32>(pair)),
                       k.bitcast<F16x2>(k.mov<B32>(0x38003800u)));
        }) == sum);
  CHECK(eval<F64>([](Kernel& k) { return k.div(k.mov<F64>(1.0), 3.0); }) ==
        std::bit_cast<std::uint64_t>(1.0 / 3.0));
  CHECK(eval<F64>([](Kernel& k) { return k.div(k.mov<F64>(1.0), 3.0, kRz); }) ==
        std::bit_cast<std::uint64_t>(1.0 / 3.0));  // 1/3 rounds down to nearest
  CHECK(eval<F64>([](Kernel& k) { return k.div(k.mov<F64>(1.0), 3.0, kRp); }) ==
        std::bit_cast<std::uint64_t>(std::nextafter(1.0 / 3.0, 1.0)));
  CHECK(eval<F64>([](Kernel& k) {
          return k.fma(k.mov<F64>(1.0), 1.0, std::ldexp(1.0, -60), kRp);
        }) == std::bit_cast<std::uint64_t>(std::nextafter(1.0, 2.0)));
}
