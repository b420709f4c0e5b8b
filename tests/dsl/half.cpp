// The host conversions behind 16-bit float immediates (and the executor and references): exact
// round trips over every bit pattern, and round-to-nearest-even on the way down.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "support.hpp"

using namespace ptxdsl;

TEST_CASE("f16: every bit pattern survives f16 -> f32 -> f16", "[dsl][half]") {
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    const float f = f16_bits_to_f32(h);
    if (std::isnan(f)) {
      CHECK((f32_to_f16_bits(f) & 0x7C00u) == 0x7C00u);
      CHECK((f32_to_f16_bits(f) & 0x03FFu) != 0);
      continue;
    }
    INFO(bits);
    REQUIRE(f32_to_f16_bits(f) == h);
  }
}

TEST_CASE("bf16: every bit pattern survives bf16 -> f32 -> bf16", "[dsl][half]") {
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto b = static_cast<std::uint16_t>(bits);
    const float f = bf16_bits_to_f32(b);
    INFO(bits);
    if (std::isnan(f)) {
      CHECK(std::isnan(bf16_bits_to_f32(f32_to_bf16_bits(f))));
      continue;
    }
    REQUIRE(f32_to_bf16_bits(f) == b);
  }
}

TEST_CASE("f16 and bf16 round to nearest, ties to even", "[dsl][half]") {
  CHECK(f32_to_f16_bits(1.0f) == 0x3C00);
  CHECK(f32_to_f16_bits(-2.0f) == 0xC000);
  CHECK(f32_to_f16_bits(65504.0f) == 0x7BFF);  // largest finite
  CHECK(f32_to_f16_bits(65520.0f) == 0x7C00);  // halfway to the next binade: rounds to inf
  CHECK(f32_to_f16_bits(65519.0f) == 0x7BFF);
  CHECK(f32_to_f16_bits(std::ldexp(1.0f, -24)) == 0x0001);         // smallest subnormal
  CHECK(f32_to_f16_bits(std::ldexp(1.0f, -25)) == 0x0000);         // half of it: tie to even (0)
  CHECK(f32_to_f16_bits(std::ldexp(3.0f, -25)) == 0x0002);         // 1.5 ulp: tie to even (2)
  CHECK(f32_to_f16_bits(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);  // tie, even stays
  CHECK(f32_to_f16_bits(1.0f + std::ldexp(3.0f, -11)) == 0x3C02);  // tie, odd rounds up
  CHECK(f32_to_f16_bits(-0.0f) == 0x8000);
  CHECK(f32_to_f16_bits(std::numeric_limits<float>::infinity()) == 0x7C00);
  CHECK(f32_to_bf16_bits(1.0f) == 0x3F80);
  CHECK(f32_to_bf16_bits(1.00390625f) == 0x3F80);  // tie, even stays
  CHECK(f32_to_bf16_bits(1.01171875f) == 0x3F82);  // tie, odd rounds up
  CHECK(f32_to_bf16_bits(0.1f) == 0x3DCD);
  CHECK(f32_to_bf16_bits(std::numeric_limits<float>::max()) == 0x7F80);  // rounds to inf
  CHECK(bf16_bits_to_f32(0x3F80) == 1.0f);
  CHECK(f16_bits_to_f32(0x0001) == std::ldexp(1.0f, -24));
}
