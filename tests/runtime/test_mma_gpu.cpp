#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "gpu_support.hpp"
#include "mma_kernels.hpp"
#include "ptxdsl/dsl.hpp"
#include "ptxdsl/dsl/executor.hpp"
#include "ptxdsl/runtime.hpp"

// The tensor-core instructions on the GPU against the CPU executor: mma.sync of every input type
// (the fragment maps: a wrong one moves whole products), ldmatrix and stmatrix bit for bit, and a
// 16×8×16 bf16 tile read through ldmatrix against its float64 product.
using namespace ptxdsl;
using namespace ptxdsl::runtime;
using namespace ptxdsl::test;

namespace {

using Words = std::vector<std::uint32_t>;

// Launches one warp of the module's kernel on the GPU with `inputs` uploaded, then an output of
// `outputs` words (the kernel's last parameter), and returns the output.
Words on_gpu(const Context& ctx, Module& m, const Kernel& k, const std::vector<Words>& inputs,
             std::size_t outputs) {
  const std::string ptx = m.emit();
  const KernelContract contract = k.contract();
  const Function f(ModuleCache::global().get(ctx, ptx, contract.entry), contract);
  std::vector<DeviceBuffer<std::uint32_t>> in;
  in.reserve(inputs.size());
  for (const Words& w : inputs) in.emplace_back(ctx, std::span<const std::uint32_t>(w));
  DeviceBuffer<std::uint32_t> out(ctx, outputs);
  Stream s(ctx);
  if (in.size() == 1) launch(f, 1, kWarp, 0, s, in[0], out);
  if (in.size() == 2) launch(f, 1, kWarp, 0, s, in[0], in[1], out);
  if (in.size() == 3) launch(f, 1, kWarp, 0, s, in[0], in[1], in[2], out);
  s.synchronize();
  return out.to_host();
}

// The same launch on the executor.
Words on_cpu(const Kernel& k, const std::vector<Words>& inputs, std::size_t outputs,
             const std::vector<const char*>& names) {
  CpuDevice dev;
  Words out(outputs, 0);
  std::vector<Arg> args;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    args.emplace_back(dev.upload<std::uint32_t>(inputs[i], names[i]));
  }
  args.emplace_back(dev.map<std::uint32_t>(out, names.back()));
  dev.launch(k, {1, kWarp}, args);
  return out;
}

// One mma.sync of random fragments on both: s32 results equal; f32 results within 2^-17 of the
// sum of the terms' magnitudes (what the executor gives for |A|·|B| + |C|), the room the tensor
// core's own accumulation order and rounding take.
template <MmaInputTag A, MmaInputTag B, bool kSat = false>
void compare_mma(const Context& ctx, std::uint32_t seed, Arch arch, PtxVersion version) {
  std::mt19937 rng(seed);
  constexpr std::uint32_t kk = MmaElement<A>::kK;
  constexpr std::uint32_t bits = kk == 16 ? 16 : kk == 8 ? 32 : 8;
  constexpr bool integer = std::same_as<MmaAccOf<A>, S32>;
  Words c(16 * 8);
  if (integer) {  // within ±2^29: no wraparound (the case below checks that)
    for (auto& e : c)
      e = static_cast<std::uint32_t>(static_cast<std::int32_t>(rng() >> 2) - (1 << 29));
  } else {
    c = random_mma_f32(rng, c.size());
  }
  const MmaCase m = pack_mma_case(bits, random_mma_elements(rng, 16 * kk, MmaElement<A>::kInput),
                                  random_mma_elements(rng, kk * 8, MmaElement<B>::kInput), c);
  Module mod(arch, version);
  Kernel& k = mod.kernel("mma");
  build_mma_fragments<A, B, kSat>(k);
  k.finalize();
  const std::vector<Words> inputs = {m.a_frag, m.b_frag, m.c_frag};
  const Words cpu = unpack_acc(on_cpu(k, inputs, 4 * kWarp, {"a", "b", "c", "d"}));
  const Words gpu = unpack_acc(on_gpu(ctx, mod, k, inputs, 4 * kWarp));
  if constexpr (integer) {
    CHECK(gpu == cpu);
  } else {
    const MmaCase mag =
        pack_mma_case(bits, magnitudes(m.a, bits), magnitudes(m.b, bits), magnitudes(m.c, 32));
    const Words scale = unpack_acc(
        on_cpu(k, {mag.a_frag, mag.b_frag, mag.c_frag}, 4 * kWarp, {"a", "b", "c", "d"}));
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      const double g = std::bit_cast<float>(gpu[i]), e = std::bit_cast<float>(cpu[i]);
      INFO("D[" << i / 8 << "][" << i % 8 << "]: GPU " << g << ", executor " << e);
      CHECK(std::fabs(g - e) <= std::ldexp(double{std::bit_cast<float>(scale[i])}, -17));
    }
  }
}

}  // namespace

TEST_CASE("mma.sync of every input type: the GPU computes what the executor computes",
          "[runtime][gpu][executor]") {
  PTXDSL_REQUIRE_GPU(ctx);
  for (std::uint32_t seed = 1; seed <= 2; ++seed) {
    INFO("seed " << seed);
    compare_mma<F16, F16>(ctx, seed, Arch::Sm80, {7, 8});
    compare_mma<BF16, BF16>(ctx, seed, Arch::Sm80, {7, 8});
    compare_mma<TF32, TF32>(ctx, seed, Arch::Sm80, {7, 8});
    compare_mma<S8, S8>(ctx, seed, Arch::Sm80, {7, 8});
    compare_mma<U8, S8>(ctx, seed, Arch::Sm80, {7, 8});
    compare_mma<S8, U8, true>(ctx, seed, Arch::Sm80, {7, 8});
    compare_mma<E4M3, E4M3>(ctx, seed, Arch::Sm89, {8, 4});
    compare_mma<E5M2, E4M3>(ctx, seed, Arch::Sm89, {8, 4});
    compare_mma<E4M3, E5M2>(ctx, seed, Arch::Sm89, {8, 4});
  }
}

// The executor wraps s32 sums past 2^31 - 1 and clamps them with .satfinite: so does the GPU.
TEST_CASE("mma.sync s32 sums past 2^31 - 1 on the GPU: wrapped, or clamped with .satfinite",
          "[runtime][gpu][executor]") {
  PTXDSL_REQUIRE_GPU(ctx);
  const MmaCase big = pack_mma_case(8, Words(16 * 32, 0xFFu), Words(32 * 8, 0xFFu),
                                    Words(16 * 8, 0x7FFFFFFFu - 999u));
  const std::vector<Words> inputs = {big.a_frag, big.b_frag, big.c_frag};
  const auto run = [&]<bool kSat>() {
    Module m(Arch::Sm80);
    Kernel& k = m.kernel("mma_big");
    build_mma_fragments<U8, U8, kSat>(k);
    k.finalize();
    const Words gpu = unpack_acc(on_gpu(ctx, m, k, inputs, 4 * kWarp));
    CHECK(gpu == unpack_acc(on_cpu(k, inputs, 4 * kWarp, {"a", "b", "c", "d"})));
    return gpu;
  };
  CHECK(run.operator()<false>()[0] == 0x7FFFFFFFu - 999u + 32u * 255u * 255u);
  CHECK(run.operator()<true>()[0] == 0x7FFFFFFFu);
}

TEST_CASE("ldmatrix and stmatrix x1/x2/x4 (.trans) on the GPU: the executor's bits and the ISA's",
          "[runtime][gpu][executor]") {
  PTXDSL_REQUIRE_GPU(ctx);
  std::vector<std::uint16_t> tile(kTileRows * kTileCols);
  for (std::size_t i = 0; i < tile.size(); ++i) tile[i] = static_cast<std::uint16_t>(i * 37 + 5);
  const Words words = as_words(tile);
  Words regs(4 * kWarp);
  for (std::uint32_t i = 0; i < regs.size(); ++i) regs[i] = i * 0x00030001u + 0x00100000u;
  const auto check = [&]<int N>(bool trans) {
    INFO("x" << N << (trans ? ".trans" : ""));
    {
      Module m(Arch::Sm80);
      Kernel& k = m.kernel("ld");
      build_ldmatrix<N>(k, trans);
      k.finalize();
      const Words gpu = on_gpu(ctx, m, k, {words}, N * kWarp);
      CHECK(gpu == on_cpu(k, {words}, N * kWarp, {"x", "out"}));
      for (std::uint32_t i = 0; i < N; ++i) {
        for (std::uint32_t lane = 0; lane < kWarp; ++lane) {
          INFO("ldmatrix register " << i << ", lane " << lane);
          CHECK(gpu[i * kWarp + lane] == isa_ldmatrix(tile, i, lane, trans));
        }
      }
    }
    Module m(Arch::Sm90);
    Kernel& k = m.kernel("st");
    build_stmatrix<N>(k, trans);
    k.finalize();
    const std::size_t tile_words = kTileRows * kTileCols / 2;
    const Words gpu = on_gpu(ctx, m, k, {regs}, tile_words);
    CHECK(gpu == on_cpu(k, {regs}, tile_words, {"x", "out"}));
  };
  for (bool trans : {false, true}) {
    check.operator()<1>(trans);
    check.operator()<2>(trans);
    check.operator()<4>(trans);
  }
}

TEST_CASE("a 16x8x16 bf16 tile through ldmatrix and mma.sync on the GPU equals float64",
          "[runtime][gpu][executor]") {
  PTXDSL_REQUIRE_GPU(ctx);
  const auto a = bf16_inputs(16 * 16, 11), b = bf16_inputs(8 * 16, 12);
  Module m(Arch::Sm80);
  Kernel& k = m.kernel("tile");
  build_bf16_tile(k);
  k.finalize();
  const std::vector<Words> inputs = {as_words(a), as_words(b)};
  const Words gpu = on_gpu(ctx, m, k, inputs, 16 * 8);
  const Words cpu = on_cpu(k, inputs, 16 * 8, {"a", "b", "c"});
  const std::vector<double> ref = reference_abt(a, b, 16, 8, 16);
  for (std::size_t i = 0; i < ref.size(); ++i) {
    INFO("C[" << i / 8 << "][" << i % 8 << "]");
    CHECK(std::fabs(double{std::bit_cast<float>(gpu[i])} - ref[i]) <= 1e-6);
    CHECK(double{std::bit_cast<float>(cpu[i])} == ref[i]);
  }
}
