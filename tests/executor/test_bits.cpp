// The bit instructions against values worked out by hand from PTX's ISA pseudocode.
#include <catch2/catch.hpp>

#include <cstdint>

#include "support.hpp"

using namespace ptxdsl;
using ptxdsl::test::eval;

TEST_CASE("popc, clz and brev on 32 and 64 bits", "[executor][bits]") {
  CHECK(eval<U32>([](Kernel& k) { return k.popc(k.mov<U32>(0u)); }) == 0);
  CHECK(eval<U32>([](Kernel& k) { return k.popc(k.mov<U32>(0xF0F0F0F1u)); }) == 17);
  CHECK(eval<U32>([](Kernel& k) { return k.popc(k.mov<U64>(~0ull)); }) == 64);
  CHECK(eval<U32>([](Kernel& k) { return k.popc(k.mov<S64>(std::int64_t{-2})); }) == 63);
  CHECK(eval<U32>([](Kernel& k) { return k.clz(k.mov<U32>(0u)); }) == 32);
  CHECK(eval<U32>([](Kernel& k) { return k.clz(k.mov<U32>(1u)); }) == 31);
  CHECK(eval<U32>([](Kernel& k) { return k.clz(k.mov<B32>(0x80000000u)); }) == 0);
  CHECK(eval<U32>([](Kernel& k) { return k.clz(k.mov<U64>(0ull)); }) == 64);
  CHECK(eval<U32>([](Kernel& k) { return k.clz(k.mov<U64>(0x00000000FFFFFFFFull)); }) == 32);
  CHECK(eval<U32>([](Kernel& k) { return k.brev(k.mov<U32>(1u)); }) == 0x80000000u);
  CHECK(eval<U32>([](Kernel& k) { return k.brev(k.mov<U32>(0x12345678u)); }) == 0x1E6A2C48u);
  CHECK(eval<U64>([](Kernel& k) { return k.brev(k.mov<U64>(0x3ull)); }) == 0xC000000000000000ull);
}

TEST_CASE("bfind: the highest bit unlike the sign, or its shift amount", "[executor][bits]") {
  CHECK(eval<U32>([](Kernel& k) { return k.bfind(k.mov<U32>(0u)); }) == 0xFFFFFFFFu);
  CHECK(eval<U32>([](Kernel& k) { return k.bfind(k.mov<U32>(1u)); }) == 0);
  CHECK(eval<U32>([](Kernel& k) { return k.bfind(k.mov<U32>(0x80000000u)); }) == 31);
  CHECK(eval<U32>([](Kernel& k) { return k.bfind(k.mov<U32>(0x00012345u), true); }) == 15);
  // Signed: the highest 0 of a negative value; -1 has none.
  CHECK(eval<U32>([](Kernel& k) { return k.bfind(k.mov<S32>(-1)); }) == 0xFFFFFFFFu);
  CHECK(eval<U32>([](Kernel& k) { return k.bfind(k.mov<S32>(-2)); }) == 0);
  CHECK(eval<U32>([](Kernel& k) { return k.bfind(k.mov<S32>(-65536)); }) == 15);
  CHECK(eval<U32>([](Kernel& k) { return k.bfind(k.mov<S32>(0x40000000)); }) == 30);
  CHECK(eval<U32>([](Kernel& k) { return k.bfind(k.mov<S32>(0x40000000), true); }) == 1);
  CHECK(eval<U32>([](Kernel& k) { return k.bfind(k.mov<U64>(1ull << 40)); }) == 40);
  CHECK(eval<U32>([](Kernel& k) { return k.bfind(k.mov<S64>(std::int64_t{-1} << 40), true); }) ==
        24);
  CHECK(eval<U32>([](Kernel& k) { return k.bfind(k.mov<U64>(0ull), true); }) == 0xFFFFFFFFu);
}

TEST_CASE("bfe extracts, zero- or sign-extended; bfi inserts", "[executor][bits]") {
  CHECK(eval<U32>([](Kernel& k) { return k.bfe(k.mov<U32>(0x12345678u), 8u, 8u); }) == 0x56);
  CHECK(eval<S32>([](Kernel& k) { return k.bfe(k.mov<S32>(0x0000F000), 12u, 4u); }) == 0xFFFFFFFFu);
  CHECK(eval<S32>([](Kernel& k) { return k.bfe(k.mov<S32>(0x00007000), 12u, 4u); }) == 7);
  // len 0 gives 0 even when signed; a field past the top is cut there and extended by its top
  // bit; pos and len are taken mod 256.
  CHECK(eval<S32>([](Kernel& k) { return k.bfe(k.mov<S32>(-1), 4u, 0u); }) == 0);
  CHECK(eval<S32>([](Kernel& k) {
          return k.bfe(k.mov<S32>(static_cast<std::int32_t>(0x80000000u)), 28u, 8u);
        }) == 0xFFFFFFF8u);
  CHECK(eval<U32>([](Kernel& k) { return k.bfe(k.mov<U32>(0xF0000000u), 28u, 8u); }) == 0xF);
  CHECK(eval<U32>([](Kernel& k) { return k.bfe(k.mov<U32>(0xABu), 256u + 4u, 256u + 4u); }) == 0xA);
  CHECK(eval<U32>([](Kernel& k) { return k.bfe(k.mov<U32>(0xFFFFFFFFu), 40u, 4u); }) == 0);
  CHECK(eval<S32>([](Kernel& k) { return k.bfe(k.mov<S32>(-1), 40u, 4u); }) == 0xFFFFFFFFu);
  CHECK(eval<S64>([](Kernel& k) {
          return k.bfe(k.mov<S64>(std::int64_t{0x0000800000000000}), 44u, 4u);
        }) == 0xFFFFFFFFFFFFFFF8ull);
  CHECK(eval<U64>([](Kernel& k) { return k.bfe(k.mov<U64>(0xABCD000000000000ull), 48u, 16u); }) ==
        0xABCD);

  CHECK(eval<B32>([](Kernel& k) { return k.bfi(k.mov<B32>(0xFu), k.mov<B32>(0u), 4u, 4u); }) ==
        0xF0);
  CHECK(eval<B32>([](Kernel& k) {
          return k.bfi(k.mov<B32>(0x5u), k.mov<B32>(0xFFFFFFFFu), 8u, 4u);
        }) == 0xFFFFF5FFu);
  CHECK(eval<U32>([](Kernel& k) { return k.bfi(k.mov<U32>(0xFFu), 0x0u, 28u, 8u); }) ==
        0xF0000000u);
  CHECK(eval<U32>([](Kernel& k) { return k.bfi(k.mov<U32>(0xFFu), 0x12u, 4u, 0u); }) == 0x12);
  CHECK(eval<U64>([](Kernel& k) {
          return k.bfi(k.mov<U64>(0xABCDull), k.mov<U64>(0ull), 48u, 16u);
        }) == 0xABCD000000000000ull);
}

TEST_CASE("prmt picks bytes of {b, a} and replicates signs", "[executor][bits]") {
  const auto prmt = [](std::uint32_t a, std::uint32_t b, std::uint32_t sel) {
    return eval<U32>([=](Kernel& k) { return k.prmt(k.mov<U32>(a), k.mov<U32>(b), sel); });
  };
  CHECK(prmt(0x33221100u, 0x77665544u, 0x3210u) == 0x33221100u);
  CHECK(prmt(0x33221100u, 0x77665544u, 0x7654u) == 0x77665544u);
  CHECK(prmt(0x33221100u, 0x77665544u, 0x0123u) == 0x00112233u);
  CHECK(prmt(0x33221100u, 0x77665544u, 0x4444u) == 0x44444444u);
  // Bit 3 of a nibble: the selected byte's sign bit, in all eight bits.
  CHECK(prmt(0x80000001u, 0x7F00FF00u, 0x0BCDu) == 0x01FF00FFu);
  CHECK(prmt(0x80000001u, 0x7F00FF00u, 0x8F3Bu) == 0x000080FFu);
}

TEST_CASE("lop3 applies its truth table bit by bit", "[executor][bits]") {
  const auto lop3 = [](std::uint32_t a, std::uint32_t b, std::uint32_t c, std::uint8_t lut) {
    return eval<B32>(
        [=](Kernel& k) { return k.lop3(k.mov<B32>(a), k.mov<B32>(b), k.mov<B32>(c), lut); });
  };
  const std::uint32_t a = 0xF0F0FF00u, b = 0xCCCC0FF0u, c = 0xAAAA3C3Cu;
  CHECK(lop3(a, b, c, 0xF0) == a);
  CHECK(lop3(a, b, c, 0xCC) == b);
  CHECK(lop3(a, b, c, 0xAA) == c);
  CHECK(lop3(a, b, c, 0xEA) == ((a & b) | c));
  CHECK(lop3(a, b, c, 0x96) == (a ^ b ^ c));
  CHECK(lop3(a, b, c, 0xE8) == ((a & b) | (a & c) | (b & c)));  // majority
  CHECK(lop3(a, b, c, 0x00) == 0);
  CHECK(lop3(a, b, c, 0xFF) == 0xFFFFFFFFu);
  CHECK(lop3(a, b, c, 0x1E) == (a ^ (b | c)));
}

TEST_CASE("shf: funnel shifts of {hi, lo}, wrapped or clamped", "[executor][bits]") {
  const auto shf = [](Funnel mode, std::uint32_t lo, std::uint32_t hi, std::uint32_t n) {
    return eval<B32>([=](Kernel& k) { return k.shf(mode, k.mov<B32>(lo), k.mov<B32>(hi), n); });
  };
  CHECK(shf(Funnel::LeftWrap, 0x89ABCDEFu, 0x01234567u, 8) == 0x23456789u);
  CHECK(shf(Funnel::RightWrap, 0x89ABCDEFu, 0x01234567u, 8) == 0x6789ABCDu);
  CHECK(shf(Funnel::LeftWrap, 0x89ABCDEFu, 0x01234567u, 0) == 0x01234567u);
  CHECK(shf(Funnel::RightWrap, 0x89ABCDEFu, 0x01234567u, 0) == 0x89ABCDEFu);
  // 40: wrapped to 8, clamped to 32 (left: lo; right: hi).
  CHECK(shf(Funnel::LeftWrap, 0x89ABCDEFu, 0x01234567u, 40) == 0x23456789u);
  CHECK(shf(Funnel::LeftClamp, 0x89ABCDEFu, 0x01234567u, 40) == 0x89ABCDEFu);
  CHECK(shf(Funnel::RightClamp, 0x89ABCDEFu, 0x01234567u, 40) == 0x01234567u);
  CHECK(shf(Funnel::RightWrap, 0x89ABCDEFu, 0x01234567u, 32) == 0x89ABCDEFu);
  CHECK(shf(Funnel::RightClamp, 0x89ABCDEFu, 0x01234567u, 31) == 0x02468ACFu);
}

TEST_CASE("dp4a and dp2a: byte and half dot products onto c", "[executor][bits]") {
  // Bytes 1, 2, 3, 4 against 5, 6, 7, 8: 5 + 12 + 21 + 32 = 70.
  CHECK(eval<U32>([](Kernel& k) {
          return k.dp4a(k.mov<U32>(0x04030201u), k.mov<U32>(0x08070605u), 1000u);
        }) == 1070);
  // Bytes 0xFF: 255 unsigned, -1 signed.
  CHECK(eval<U32>([](Kernel& k) {
          return k.dp4a(k.mov<U32>(0xFFFFFFFFu), k.mov<U32>(0x01010101u), 0u);
        }) == 1020);
  CHECK(eval<S32>([](Kernel& k) { return k.dp4a(k.mov<S32>(-1), k.mov<U32>(0x01010101u), 0); }) ==
        static_cast<std::uint32_t>(-4));
  CHECK(eval<S32>([](Kernel& k) { return k.dp4a(k.mov<S32>(-1), k.mov<S32>(-1), -10); }) ==
        static_cast<std::uint32_t>(-6));
  CHECK(eval<S32>([](Kernel& k) {
          return k.dp4a(k.mov<U32>(0xFFFFFFFFu), k.mov<S32>(static_cast<std::int32_t>(0x80808080u)),
                        0);
        }) == static_cast<std::uint32_t>(4 * 255 * -128));
  // The sum wraps at 32 bits.
  CHECK(eval<U32>([](Kernel& k) {
          return k.dp4a(k.mov<U32>(0xFFFFFFFFu), k.mov<U32>(0xFFFFFFFFu), 0xFFFFFFFFu);
        }) == static_cast<std::uint32_t>(4u * 255u * 255u - 1u));
  // dp2a: halves 3 and -2 (0xFFFE) against bytes 0-1 (lo) or 2-3 (hi) of 0x05040201.
  CHECK(eval<S32>([](Kernel& k) {
          return k.dp2a(k.mov<S32>(static_cast<std::int32_t>(0xFFFE0003u)), k.mov<U32>(0x05040201u),
                        100);
        }) == static_cast<std::uint32_t>(100 + 3 * 1 - 2 * 2));
  CHECK(eval<S32>([](Kernel& k) {
          return k.dp2a(k.mov<S32>(static_cast<std::int32_t>(0xFFFE0003u)), k.mov<U32>(0x05040201u),
                        100, true);
        }) == static_cast<std::uint32_t>(100 + 3 * 4 - 2 * 5));
  CHECK(eval<U32>([](Kernel& k) {
          return k.dp2a(k.mov<U32>(0xFFFE0003u), k.mov<U32>(0x05040201u), 0u, true);
        }) == 3u * 4u + 0xFFFEu * 5u);
}
