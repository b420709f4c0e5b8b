// The tensor-core instructions on the executor: mma.sync of every input type against float64 (or
// exact integer) products at random inputs packed by the ISA's fragment tables, ldmatrix and
// stmatrix against the ISA's thread ↔ row maps, a 16×8×16 tile read through ldmatrix, and the
// faults of their misuse.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "mma_kernels.hpp"
#include "ptxdsl/dsl/executor.hpp"
#include "ptxdsl/dsl/narrow_float.hpp"

using namespace ptxdsl;
using namespace ptxdsl::test;
using Catch::Matchers::Contains;

namespace {

// Runs build_mma_fragments<A, B, kSat> on the case; returns D (16×8 row-major bits).
template <MmaInputTag A, MmaInputTag B, bool kSat = false>
std::vector<std::uint32_t> run_mma(const MmaCase& m, Arch arch = Arch::Sm80,
                                   PtxVersion version = {7, 8}) {
  Module mod(arch, version);
  Kernel& k = mod.kernel("mma");
  build_mma_fragments<A, B, kSat>(k);
  k.finalize();
  std::vector<std::uint32_t> d(4 * kWarp, 0);
  CpuDevice dev;
  dev.launch(k, {1, kWarp},
             {dev.upload<std::uint32_t>(m.a_frag, "a"), dev.upload<std::uint32_t>(m.b_frag, "b"),
              dev.upload<std::uint32_t>(m.c_frag, "c"), dev.map<std::uint32_t>(d, "d")});
  return unpack_acc(d);
}

// An element's value, as the tensor core reads its bits.
using Decode = double (*)(std::uint32_t);
double f16_value(std::uint32_t b) {
  return f16_bits_to_f32(static_cast<std::uint16_t>(b));
}
double bf16_value(std::uint32_t b) {
  return bf16_bits_to_f32(static_cast<std::uint16_t>(b));
}
double tf32_value(std::uint32_t b) {  // the low 13 mantissa bits are not read
  return std::bit_cast<float>(b & 0xFFFFE000u);
}
double e4m3_value(std::uint32_t b) {
  return e4m3_bits_to_f32(static_cast<std::uint8_t>(b));
}
double e5m2_value(std::uint32_t b) {
  return e5m2_bits_to_f32(static_cast<std::uint8_t>(b));
}

// D = A·B + C in float64; each element within an f32 rounding of it (and of the sum's size).
void check_float_product(const MmaCase& m, const std::vector<std::uint32_t>& d, Decode da,
                         Decode db) {
  for (std::uint32_t i = 0; i < 16; ++i) {
    for (std::uint32_t j = 0; j < 8; ++j) {
      double ref = std::bit_cast<float>(m.c[i * 8 + j]);
      double scale = std::fabs(ref);
      for (std::uint32_t p = 0; p < m.k; ++p) {
        const double t = da(m.a[i * m.k + p]) * db(m.b[p * 8 + j]);
        ref += t;
        scale += std::fabs(t);
      }
      const double got = std::bit_cast<float>(d[i * 8 + j]);
      INFO("D[" << i << "][" << j << "] = " << got << ", float64 " << ref);
      CHECK(std::fabs(got - ref) <= std::ldexp(std::fabs(ref), -23) + 1e-12 * scale);
    }
  }
}

template <MmaInputTag A, MmaInputTag B = A>
void check_float_mma(std::uint32_t seed, Decode da, Decode db, Arch arch = Arch::Sm80,
                     PtxVersion version = {7, 8}) {
  std::mt19937 rng(seed);
  constexpr std::uint32_t k = MmaElement<A>::kK;
  const std::uint32_t bits = k == 16 ? 16 : k == 8 ? 32 : 8;
  const MmaCase m = pack_mma_case(bits, random_mma_elements(rng, 16 * k, MmaElement<A>::kInput),
                                  random_mma_elements(rng, k * 8, MmaElement<B>::kInput),
                                  random_mma_f32(rng, 16 * 8));
  check_float_product(m, run_mma<A, B>(m, arch, version), da, db);
}

// Integer D = A·B + C, exact, wrapped to 32 bits or (satfinite) clamped.
std::vector<std::uint32_t> int_reference(const MmaCase& m, bool a_signed, bool b_signed,
                                         bool satfinite) {
  const auto value = [](std::uint32_t bits, bool is_signed) -> std::int64_t {
    return is_signed ? static_cast<std::int8_t>(bits) : static_cast<std::uint8_t>(bits);
  };
  std::vector<std::uint32_t> d(16 * 8);
  for (std::uint32_t i = 0; i < 16; ++i) {
    for (std::uint32_t j = 0; j < 8; ++j) {
      std::int64_t s = static_cast<std::int32_t>(m.c[i * 8 + j]);
      for (std::uint32_t p = 0; p < 32; ++p) {
        s += value(m.a[i * 32 + p], a_signed) * value(m.b[p * 8 + j], b_signed);
      }
      if (satfinite) {
        s = std::max<std::int64_t>(s, std::numeric_limits<std::int32_t>::min());
        s = std::min<std::int64_t>(s, std::numeric_limits<std::int32_t>::max());
      }
      d[i * 8 + j] = static_cast<std::uint32_t>(s);
    }
  }
  return d;
}

}  // namespace

TEST_CASE("mma.sync f16, bf16 and tf32 against float64 products", "[executor][mma]") {
  for (std::uint32_t seed = 1; seed <= 3; ++seed) {
    INFO("seed " << seed);
    check_float_mma<F16>(seed, f16_value, f16_value);
    check_float_mma<BF16>(seed, bf16_value, bf16_value);
    check_float_mma<TF32>(seed, tf32_value, tf32_value);
  }
}

TEST_CASE("mma.sync e4m3 and e5m2 (sm_89, PTX 8.4) against float64 products", "[executor][mma]") {
  for (std::uint32_t seed = 1; seed <= 3; ++seed) {
    INFO("seed " << seed);
    check_float_mma<E4M3>(seed, e4m3_value, e4m3_value, Arch::Sm89, {8, 4});
    check_float_mma<E5M2>(seed, e5m2_value, e5m2_value, Arch::Sm89, {8, 4});
    check_float_mma<E4M3, E5M2>(seed, e4m3_value, e5m2_value, Arch::Sm89, {8, 4});
    check_float_mma<E5M2, E4M3>(seed, e5m2_value, e4m3_value, Arch::Sm89, {8, 4});
  }
}

TEST_CASE("mma.sync s8/u8: exact sums that wrap, or clamp with .satfinite", "[executor][mma]") {
  std::mt19937 rng(7);
  const auto bytes = [&](std::size_t n) { return random_mma_elements(rng, n, MmaInput::S8); };
  std::vector<std::uint32_t> c(16 * 8);
  for (auto& e : c) e = static_cast<std::uint32_t>(rng());
  const MmaCase m = pack_mma_case(8, bytes(16 * 32), bytes(32 * 8), c);
  CHECK(run_mma<S8, S8>(m) == int_reference(m, true, true, false));
  CHECK(run_mma<U8, S8>(m) == int_reference(m, false, true, false));
  CHECK(run_mma<S8, U8>(m) == int_reference(m, true, false, false));
  CHECK(run_mma<U8, U8>(m) == int_reference(m, false, false, false));
  CHECK(run_mma<S8, U8, true>(m) == int_reference(m, true, false, true));

  // Sums past 2^31 - 1 and below -2^31: 32 · 255 · 255 over C = 2^31 - 1000, and 32 · -128 ·
  // 255 under C = -2^31 + 1000.
  const MmaCase big = pack_mma_case(8, std::vector<std::uint32_t>(16 * 32, 0xFFu),
                                    std::vector<std::uint32_t>(32 * 8, 0xFFu),
                                    std::vector<std::uint32_t>(16 * 8, 0x7FFFFFFFu - 999u));
  const auto wrapped = run_mma<U8, U8>(big);
  CHECK(wrapped[0] == static_cast<std::uint32_t>(0x7FFFFFFFu - 999u + 32u * 255u * 255u));
  CHECK(run_mma<U8, U8, true>(big)[5] == 0x7FFFFFFFu);
  const MmaCase low = pack_mma_case(8, std::vector<std::uint32_t>(16 * 32, 0x80u),
                                    std::vector<std::uint32_t>(32 * 8, 0xFFu),
                                    std::vector<std::uint32_t>(16 * 8, 0x80000000u + 1000u));
  CHECK(run_mma<S8, U8, true>(low)[127] == 0x80000000u);
  CHECK(run_mma<S8, U8>(low) == int_reference(low, true, false, false));
}

TEST_CASE("mma.sync: an infinity times zero is the GPU's NaN", "[executor][mma]") {
  std::vector<std::uint32_t> a(16 * 16, f32_to_f16_bits(1.0f)), b(16 * 8, 0);
  a[3 * 16 + 5] = 0x7C00u;  // +inf at A[3][5]
  const MmaCase m = pack_mma_case(16, a, b, std::vector<std::uint32_t>(16 * 8, 0));
  const auto d = run_mma<F16, F16>(m);
  for (std::uint32_t j = 0; j < 8; ++j) {
    CHECK(d[3 * 8 + j] == 0x7FFFFFFFu);
    CHECK(d[4 * 8 + j] == 0u);
  }
}

TEST_CASE("ldmatrix x1, x2, x4, plain and .trans, against the ISA's row map", "[executor][mma]") {
  std::vector<std::uint16_t> tile(kTileRows * kTileCols);
  for (std::size_t i = 0; i < tile.size(); ++i) tile[i] = static_cast<std::uint16_t>(i * 37 + 5);
  const std::vector<std::uint32_t> words = as_words(tile);
  const auto check = [&]<int N>(bool trans) {
    Module m(Arch::Sm80);
    Kernel& k = m.kernel("ld");
    build_ldmatrix<N>(k, trans);
    k.finalize();
    std::vector<std::uint32_t> out(N * kWarp, 0);
    CpuDevice dev;
    dev.launch(k, {1, kWarp},
               {dev.upload<std::uint32_t>(words, "x"), dev.map<std::uint32_t>(out, "out")});
    for (std::uint32_t i = 0; i < N; ++i) {
      for (std::uint32_t lane = 0; lane < kWarp; ++lane) {
        INFO("x" << N << (trans ? ".trans" : "") << ", register " << i << ", lane " << lane);
        CHECK(out[i * kWarp + lane] == isa_ldmatrix(tile, i, lane, trans));
      }
    }
  };
  for (bool trans : {false, true}) {
    check.operator()<1>(trans);
    check.operator()<2>(trans);
    check.operator()<4>(trans);
  }
}

TEST_CASE("stmatrix (sm_90) writes back what ldmatrix reads", "[executor][mma]") {
  std::vector<std::uint32_t> regs(4 * kWarp);
  for (std::uint32_t i = 0; i < regs.size(); ++i) regs[i] = i * 0x00030001u + 0x00100000u;
  const auto check = [&]<int N>(bool trans) {
    Module m(Arch::Sm90);
    Kernel& k = m.kernel("st");
    build_stmatrix<N>(k, trans);
    k.finalize();
    std::vector<std::uint32_t> out(kTileRows * kTileCols / 2, 0xDEADBEEFu);
    CpuDevice dev;
    dev.launch(k, {1, kWarp},
               {dev.upload<std::uint32_t>(regs, "x"), dev.map<std::uint32_t>(out, "out")});
    std::vector<std::uint16_t> tile(kTileRows * kTileCols);
    for (std::size_t i = 0; i < out.size(); ++i) {
      tile[2 * i] = static_cast<std::uint16_t>(out[i]);
      tile[2 * i + 1] = static_cast<std::uint16_t>(out[i] >> 16);
    }
    for (std::uint32_t i = 0; i < N; ++i) {
      for (std::uint32_t lane = 0; lane < kWarp; ++lane) {
        INFO("x" << N << (trans ? ".trans" : "") << ", register " << i << ", lane " << lane);
        CHECK(isa_ldmatrix(tile, i, lane, trans) == regs[i * kWarp + lane]);
      }
    }
    // Nothing else of the tile is written.
    std::size_t written = 0;
    for (std::uint16_t e : tile) written += e != 0 ? 1 : 0;
    CHECK(written <= static_cast<std::size_t>(N) * 64);
  };
  for (bool trans : {false, true}) {
    check.operator()<1>(trans);
    check.operator()<2>(trans);
    check.operator()<4>(trans);
  }
}

TEST_CASE("a 16x8x16 bf16 tile through ldmatrix and mma.sync equals the float64 product",
          "[executor][mma]") {
  const auto a = bf16_inputs(16 * 16, 11), b = bf16_inputs(8 * 16, 12);
  Module m(Arch::Sm80);
  Kernel& k = m.kernel("tile");
  build_bf16_tile(k);
  k.finalize();
  std::vector<float> c(16 * 8, -1.0f);
  CpuDevice dev;
  dev.launch(k, {1, kWarp},
             {dev.upload<std::uint32_t>(as_words(a), "a"),
              dev.upload<std::uint32_t>(as_words(b), "b"), dev.map<float>(c, "c")});
  const std::vector<double> ref = reference_abt(a, b, 16, 8, 16);
  for (std::size_t i = 0; i < c.size(); ++i) {
    INFO("C[" << i / 8 << "][" << i % 8 << "]");
    CHECK(double{c[i]} == ref[i]);  // exact: multiples of 2^-14 well inside f32
  }
}

TEST_CASE("tensor-core misuse at run time: divergence, a partial warp, a misaligned row",
          "[executor][mma]") {
  const auto run = [](Kernel& k, std::uint32_t threads) {
    k.finalize();
    std::vector<std::uint32_t> buf(4 * kWarp, 0);
    CpuDevice dev;
    dev.launch(k, {1, threads},
               {dev.upload<std::uint32_t>(buf, "a"), dev.upload<std::uint32_t>(buf, "b"),
                dev.upload<std::uint32_t>(buf, "c"), dev.map<std::uint32_t>(buf, "d")});
  };
  // One mma.sync of a loaded register, by every thread, or (`diverge`) by threads 0-15.
  const auto build = [](Kernel& k, bool diverge) {
    const GlobalPtr<B32> a = k.param_ptr<B32>("a");
    k.param_ptr<B32>("b");
    k.param_ptr<F32>("c");
    const GlobalPtr<F32> d = k.param_ptr<F32>("d");
    const Reg<B32> x = k.ld(a);
    const auto product = [&] {
      const MmaAcc<F32> r = k.mma(MmaA<F16>{{x, x, x, x}}, MmaB<F16>{{x, x}}, k.mma_zero<F32>());
      k.st(k.index(d, k.tid_x()), r.regs[0]);
    };
    if (diverge) {
      k.if_(k.setp(Cmp::Lt, k.tid_x(), 16u), product);
    } else {
      product();
    }
  };
  {
    Module m(Arch::Sm80);
    Kernel& k = m.kernel("diverged");
    build(k, true);
    CHECK_THROWS_WITH(run(k, kWarp), Contains("mma.sync.aligned.m16n8k16") &&
                                         Contains("thread (16, 0, 0)") &&
                                         Contains("does not execute this .aligned instruction"));
  }
  {
    Module m(Arch::Sm80);
    Kernel& k = m.kernel("partial");
    build(k, false);
    CHECK_THROWS_WITH(run(k, 16), Contains("needs all 32 lanes of its warp") &&
                                      Contains("lane 16 is not a thread of the CTA"));
  }
  {
    Module m(Arch::Sm80);
    Kernel& k = m.kernel("misaligned");
    k.param_ptr<U32>("a");
    k.param_ptr<U32>("b");
    k.param_ptr<U32>("c");
    const GlobalPtr<U32> d = k.param_ptr<U32>("d");
    const SharedPtr<U32> tile = k.shared_array<U32>("tile", 256);
    const Reg<U32> lane = k.tid_x();
    for (std::uint32_t j = 0; j < 8; ++j) k.st(k.index(tile, k.add(lane, j * kWarp)), lane);
    k.bar_sync();
    // Lane 5's row is 4 bytes past a 16-byte boundary.
    const Reg<U32> word = k.add(k.mul(lane, 4u), k.selp<U32>(1u, 0u, k.setp(Cmp::Eq, lane, 5u)));
    const Vec<B32, 4> r = k.ldmatrix<4>(k.index(tile, word).as<B16>());
    k.st(k.index(d, lane), k.bitcast<U32>(r[0]));
    CHECK_THROWS_WITH(run(k, kWarp), Contains("ldmatrix.sync.aligned.m8n8.x4.shared.b16") &&
                                         Contains("thread (5, 0, 0)") &&
                                         Contains("it must be 16-byte aligned"));
  }
}

TEST_CASE("swizzles and matrix descriptors against hand-computed values", "[executor][mma]") {
  // 128-byte swizzle: line 1's chunk 0 moves to chunk 1; line 7's chunk 2 to chunk 5; bytes keep
  // their place in a chunk, and line 8 starts the next 1024-byte atom unswizzled.
  CHECK(swizzled_address(Swizzle::B128, 128) == 144);
  CHECK(swizzled_address(Swizzle::B128, 7 * 128 + 32 + 3) == 7 * 128 + 80 + 3);
  CHECK(swizzled_address(Swizzle::B128, 1024 + 48) == 1024 + 48);
  CHECK(swizzled_address(Swizzle::B64, 3 * 128 + 16) == 3 * 128 + 32);  // chunk 1 ^ 3
  CHECK(swizzled_address(Swizzle::B64, 4 * 128 + 16) == 4 * 128 + 16);  // a new 512-byte atom
  CHECK(swizzled_address(Swizzle::B32, 128) == 144);
  CHECK(swizzled_address(Swizzle::B32, 256 + 16) == 256 + 16);
  CHECK(swizzled_address(Swizzle::None, 7 * 128 + 32) == 7 * 128 + 32);
  CHECK(matrix_descriptor(0x1230, {128, 1024, Swizzle::B128}) == 0x4000004000080123ull);
  CHECK(matrix_descriptor(0x40010, {16, 256, Swizzle::B32}) == 0xC000001000010001ull);
  CHECK_THROWS_WITH(matrix_descriptor(0x1238, {}), Contains("start address") && Contains("4664"));

  // The descriptor a kernel builds is the host's, for every lane's address.
  Module m(Arch::Sm90a, {8, 0});
  Kernel& k = m.kernel("descriptor");
  const GlobalPtr<U64> out = k.param_ptr<U64>("out");
  const SharedPtr<F16> tile = k.shared_array<F16>("tile", 4096);
  const Reg<U32> lane = k.tid_x();
  const MatrixLayout layout{256, 512, Swizzle::B64};
  const MatrixDescriptor d = k.matrix_descriptor(k.index(tile, k.mul(lane, 64u)) + 8, layout);
  k.st(k.index(out, lane), d.bits);
  k.finalize();
  std::vector<std::uint64_t> got(kWarp, 0);
  CpuDevice dev;
  dev.launch(k, {1, kWarp}, {dev.map<std::uint64_t>(got, "out")});
  for (std::uint32_t l = 0; l < kWarp; ++l) {
    CHECK(got[l] == matrix_descriptor(l * 128 + 16, layout));  // 'tile' is the only shared array
  }
}

TEST_CASE("wgmma.fence in divergent code faults", "[executor][mma]") {
  Module m(Arch::Sm90a, {8, 0});
  Kernel& k = m.kernel("fence");
  k.if_(k.setp(Cmp::Lt, k.tid_x(), 8u), [&] { k.wgmma_fence(); });
  k.finalize();
  CpuDevice dev;
  CHECK_THROWS_WITH(dev.launch(k, {1, kWarp}, {}),
                    Contains("wgmma.fence.sync.aligned") && Contains("thread (8, 0, 0)"));
}
