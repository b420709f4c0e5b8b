// tanh, sin, cos and copysign, and the packed 16-bit forms lane by lane. The executor computes the
// approximate functions exactly (in double, rounded once); the checks allow what PTX documents.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <span>
#include <vector>

#include "support.hpp"

using namespace ptxdsl;
using test::bits;
using test::eval;
using test::f32;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr double kPi = 3.14159265358979323846;

// op(x) for each x, one thread each, read back as T's bits.
template <TypeTag T>
std::vector<std::uint64_t> map(const std::function<Reg<T>(Kernel&, Reg<T>)>& op,
                               const std::vector<std::uint64_t>& xs) {
  Module m;
  Kernel& k = m.kernel("map");
  auto in = k.param_ptr<T>("in");
  auto out = k.param_ptr<T>("out");
  const Reg<U32> t = k.tid_x();
  k.st(k.index(out, t), op(k, k.ld(k.index(in, t))));
  k.finalize();
  std::vector<std::byte> in_bytes(xs.size() * T::kBytes), out_bytes(xs.size() * T::kBytes);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    std::memcpy(in_bytes.data() + i * T::kBytes, &xs[i], T::kBytes);
  }
  CpuDevice dev;
  dev.launch(k, {1, static_cast<std::uint32_t>(xs.size())},
             {dev.map(std::span<std::byte>(in_bytes), "in"),
              dev.map(std::span<std::byte>(out_bytes), "out")});
  std::vector<std::uint64_t> got(xs.size(), 0);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    std::memcpy(&got[i], out_bytes.data() + i * T::kBytes, T::kBytes);
  }
  return got;
}

std::vector<std::uint64_t> f32_bits(const std::vector<float>& xs) {
  std::vector<std::uint64_t> out;
  for (float x : xs) out.push_back(bits(x));
  return out;
}

}  // namespace

TEST_CASE("tanh.approx.f32: within 2^-11 relative, exact at the corners", "[executor][approx]") {
  const std::vector<float> xs = {1e-40f, 1e-20f, 0.001f, 0.1f,   0.5f,  1.0f,  -1.5f, 2.0f,
                                 -3.0f,  5.0f,   9.0f,   -12.0f, 20.0f, 88.0f, 1e30f};
  const auto got = map<F32>([](Kernel& k, Reg<F32> x) { return k.tanh(x); }, f32_bits(xs));
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double want = std::tanh(double{xs[i]});
    INFO("tanh(" << xs[i] << ") = " << f32(got[i]) << ", want " << want);
    CHECK(std::fabs(f32(got[i]) - want) <= std::ldexp(std::fabs(want), -11));
  }
  const auto corners = map<F32>([](Kernel& k, Reg<F32> x) { return k.tanh(x); },
                                f32_bits({0.0f, -0.0f, kInf, -kInf, std::nanf("")}));
  CHECK(corners[0] == bits(0.0f));
  CHECK(corners[1] == bits(-0.0f));
  CHECK(corners[2] == bits(1.0f));
  CHECK(corners[3] == bits(-1.0f));
  CHECK(std::isnan(f32(corners[4])));
}

TEST_CASE("tanh.approx on f16 (2^-10.987 absolute) and bf16 (2^-8), single and paired",
          "[executor][approx]") {
  const float xs[] = {-4.0f, -1.0f, -0.25f, 0.0f, 0.0625f, 0.5f, 0.75f, 1.25f, 3.0f, 10.0f};
  for (float x : xs) {
    INFO("x = " << x);
    const double want = std::tanh(double{x});
    const auto h =
        static_cast<std::uint16_t>(eval<F16>([&](Kernel& k) { return k.tanh(k.mov<F16>(x)); }));
    CHECK(std::fabs(f16_bits_to_f32(h) - want) <= std::exp2(-10.987));
    // The pair computes each half as the scalar form does.
    const std::uint32_t pair = (std::uint32_t{f32_to_f16_bits(-x)} << 16) | f32_to_f16_bits(x);
    const auto p = static_cast<std::uint32_t>(
        eval<F16x2>([&](Kernel& k) { return k.tanh(k.bitcast<F16x2>(k.mov<B32>(pair))); }));
    CHECK((p & 0xFFFFu) == h);
    CHECK((p >> 16) ==
          static_cast<std::uint16_t>(eval<F16>([&](Kernel& k) { return k.tanh(k.mov<F16>(-x)); })));
  }
  // bf16 pairs (sm_90, the default module's target).
  for (float x : xs) {
    INFO("x = " << x);
    const std::uint32_t pair = (std::uint32_t{f32_to_bf16_bits(x)} << 16) | f32_to_bf16_bits(-x);
    const auto p = static_cast<std::uint32_t>(
        eval<BF16x2>([&](Kernel& k) { return k.tanh(k.bitcast<BF16x2>(k.mov<B32>(pair))); }));
    CHECK(std::fabs(bf16_bits_to_f32(static_cast<std::uint16_t>(p >> 16)) -
                    std::tanh(double{bf16_bits_to_f32(f32_to_bf16_bits(x))})) <= std::exp2(-8));
    CHECK(std::fabs(bf16_bits_to_f32(static_cast<std::uint16_t>(p & 0xFFFFu)) -
                    std::tanh(double{bf16_bits_to_f32(f32_to_bf16_bits(-x))})) <= std::exp2(-8));
  }
}

TEST_CASE("sin.approx and cos.approx: within 2^-20.5 absolute on [-2 pi, 2 pi]",
          "[executor][approx]") {
  std::vector<float> xs;
  for (int i = -64; i <= 64; ++i) xs.push_back(static_cast<float>(2 * kPi * i / 64));
  const auto s = map<F32>([](Kernel& k, Reg<F32> x) { return k.sin(x); }, f32_bits(xs));
  const auto c = map<F32>([](Kernel& k, Reg<F32> x) { return k.cos(x); }, f32_bits(xs));
  for (std::size_t i = 0; i < xs.size(); ++i) {
    INFO("x = " << xs[i]);
    CHECK(std::fabs(f32(s[i]) - std::sin(double{xs[i]})) <= std::exp2(-20.5));
    CHECK(std::fabs(f32(c[i]) - std::cos(double{xs[i]})) <= std::exp2(-20.5));
  }
  const auto corners = map<F32>([](Kernel& k, Reg<F32> x) { return k.sin(x); },
                                f32_bits({-0.0f, kInf, std::nanf("")}));
  CHECK(corners[0] == bits(-0.0f));
  CHECK(std::isnan(f32(corners[1])));
  CHECK(std::isnan(f32(corners[2])));
  // .ftz: a subnormal input is a signed zero.
  const float tiny = std::ldexp(-1.0f, -130);
  CHECK(f32(eval<F32>([&](Kernel& k) { return k.sin(k.mov<F32>(tiny)); })) == tiny);
  CHECK(eval<F32>([&](Kernel& k) { return k.sin(k.mov<F32>(tiny), kApproxFtz); }) == bits(-0.0f));
  CHECK(f32(eval<F32>([&](Kernel& k) { return k.cos(k.mov<F32>(tiny), kApproxFtz); })) == 1.0f);
}

TEST_CASE("copysign: the magnitude of b with the sign of a, NaNs included", "[executor][approx]") {
  const auto cs = [](float sign, float magnitude) {
    return eval<F32>([&](Kernel& k) { return k.copysign(k.mov<F32>(sign), magnitude); });
  };
  CHECK(cs(-1.0f, 2.5f) == bits(-2.5f));
  CHECK(cs(3.0f, -2.5f) == bits(2.5f));
  CHECK(cs(-0.0f, 0.0f) == bits(-0.0f));
  CHECK(cs(1.0f, -kInf) == bits(kInf));
  CHECK(cs(-1.0f, std::bit_cast<float>(0x7FC00123u)) == 0xFFC00123u);  // the payload stays
  CHECK(cs(std::bit_cast<float>(0xFFC00000u), 1.0f) == bits(-1.0f));   // a NaN's sign counts
  CHECK(eval<F64>([](Kernel& k) { return k.copysign(k.mov<F64>(-2.0), 0.25); }) ==
        std::bit_cast<std::uint64_t>(-0.25));
}

// Each half of a packed op equals the scalar op on that half.
TEST_CASE("packed f16x2 and bf16x2 arithmetic runs each half on its own", "[executor][approx]") {
  using Pair = std::function<Reg<F16x2>(Kernel&, Reg<F16x2>, Reg<F16x2>, Reg<F16x2>)>;
  using Half = std::function<Reg<F16>(Kernel&, Reg<F16>, Reg<F16>, Reg<F16>)>;
  struct Case {
    const char* name;
    Pair pair;
    Half half;
  };
  const Case cases[] = {
      {"add", [](Kernel& k, auto a, auto b, auto) { return k.add(a, b); },
       [](Kernel& k, auto a, auto b, auto) { return k.add(a, b); }},
      {"sub", [](Kernel& k, auto a, auto b, auto) { return k.sub(a, b); },
       [](Kernel& k, auto a, auto b, auto) { return k.sub(a, b); }},
      {"mul.sat",
       [](Kernel& k, auto a, auto b, auto) { return k.mul(a, b, MathMode{.sat = true}); },
       [](Kernel& k, auto a, auto b, auto) { return k.mul(a, b, MathMode{.sat = true}); }},
      {"fma", [](Kernel& k, auto a, auto b, auto c) { return k.fma(a, b, c); },
       [](Kernel& k, auto a, auto b, auto c) { return k.fma(a, b, c); }},
      {"min", [](Kernel& k, auto a, auto b, auto) { return k.min(a, b); },
       [](Kernel& k, auto a, auto b, auto) { return k.min(a, b); }},
      {"max", [](Kernel& k, auto a, auto b, auto) { return k.max(a, b); },
       [](Kernel& k, auto a, auto b, auto) { return k.max(a, b); }},
      {"neg", [](Kernel& k, auto a, auto, auto) { return k.neg(a); },
       [](Kernel& k, auto a, auto, auto) { return k.neg(a); }},
      {"abs", [](Kernel& k, auto a, auto, auto) { return k.abs(a); },
       [](Kernel& k, auto a, auto, auto) { return k.abs(a); }},
      {"ex2", [](Kernel& k, auto a, auto, auto) { return k.ex2(a); },
       [](Kernel& k, auto a, auto, auto) { return k.ex2(a); }},
  };
  const float lo[] = {1.5f, -0.0f, 0.125f}, hi[] = {-3.0f, 2.0f, 0.75f};
  const auto word = [](float l, float h) {
    return (std::uint32_t{f32_to_f16_bits(h)} << 16) | f32_to_f16_bits(l);
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const auto got = static_cast<std::uint32_t>(eval<F16x2>([&](Kernel& k) {
      const auto in = [&](std::uint32_t w) { return k.bitcast<F16x2>(k.mov<B32>(w)); };
      return c.pair(k, in(word(lo[0], hi[0])), in(word(lo[1], hi[1])), in(word(lo[2], hi[2])));
    }));
    const auto half = [&](const float* v) {
      return static_cast<std::uint32_t>(eval<F16>([&](Kernel& k) {
        return c.half(k, k.mov<F16>(v[0]), k.mov<F16>(v[1]), k.mov<F16>(v[2]));
      }));
    };
    CHECK((got & 0xFFFFu) == half(lo));
    CHECK((got >> 16) == half(hi));
  }
}
