#include <catch2/catch.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpu_support.hpp"
#include "ptxdsl/dsl.hpp"
#include "ptxdsl/runtime.hpp"
#include "wgmma_kernels.hpp"

// wgmma.mma_async on an sm_90a GPU (H100, H200) against float64: the tiles the executor's tests
// multiply (tests/support/wgmma_kernels.hpp), laid out by the ISA's canonical layouts at every
// swizzle, K- and MN-major, A from registers, FP8 and tf32. The inputs make every partial sum
// exact, so the tensor core's own adds give the float64 result exactly, as the executor does: a
// wrong layout, swizzle or fragment map on either side moves whole products.
using namespace ptxdsl;
using namespace ptxdsl::runtime;
using namespace ptxdsl::test::wgmma;

namespace {

template <WgmmaInputTag A, WgmmaInputTag B, int N>
void on_gpu(const Context& ctx, Case c, Elem ea, Elem eb, std::uint32_t instr_k,
            std::uint32_t seed) {
  const Prepared p = prepare<N>(c, ea, eb, seed);
  ptxdsl::Module mod(Arch::Sm90a, {8, 0});
  Kernel& k = mod.kernel("wgmma");
  build_wgmma<A, B, N>(k, c, instr_k, p.b_base, static_cast<std::uint32_t>(p.image.size()));
  const std::string ptx = mod.emit();
  const KernelContract contract = k.contract();
  const Function f(ModuleCache::global().get(ctx, ptx, contract.entry), contract);
  DeviceBuffer<std::uint32_t> image(ctx, std::span<const std::uint32_t>(p.image));
  DeviceBuffer<std::uint32_t> a(ctx, std::span<const std::uint32_t>(p.a_frag));
  DeviceBuffer<float> d_in(ctx, std::span<const float>(p.d_in));
  DeviceBuffer<float> out(ctx, kThreads * N / 2);
  Stream s(ctx);
  launch(f, 1, kThreads, 0, s, image, a, d_in, out);
  s.synchronize();
  CHECK(count_wrong(p, out.to_host(), N) == 0);
}

template <int N>
void bf16_layouts(const Context& ctx, std::uint32_t seed) {
  for (const std::uint32_t swizzle : {16u, 32u, 64u, 128u}) {
    for (const bool mn_major : {false, true}) {
      INFO("N " << N << ", swizzle " << swizzle << ", " << (mn_major ? "MN" : "K") << "-major");
      const bool b_mn_major = swizzle == 32 || swizzle == 128 ? !mn_major : mn_major;
      const std::uint32_t kt = swizzle > 16 && !(mn_major && b_mn_major) ? swizzle / 2 : 32;
      Case c;
      c.a = {mn_major, swizzle, 64, kt, 2};
      c.b = {b_mn_major, swizzle, N, kt, 2};
      c.accumulate = N == 64;
      on_gpu<BF16, BF16, N>(ctx, c, Elem::BF16, Elem::BF16, 16, seed + swizzle);
    }
  }
}

}  // namespace

TEST_CASE("wgmma.mma_async on the GPU: every swizzle and major-ness, A from registers, FP8, tf32",
          "[runtime][gpu]") {
  PTXDSL_REQUIRE_GPU(ctx);
  if (!ctx.info().model.runs(Arch::Sm90a)) PTXDSL_SKIP("wgmma needs an sm_90a device");
  bf16_layouts<8>(ctx, 1);
  bf16_layouts<64>(ctx, 2);
  bf16_layouts<256>(ctx, 3);
  Case regs;
  regs.a_in_registers = true;
  regs.a = {false, 16, 64, 16, 2};
  regs.b = {false, 128, 0, 16, 2};
  regs.accumulate = true;
  regs.negate_a = true;
  on_gpu<F16, F16, 64>(ctx, regs, Elem::F16, Elem::F16, 16, 11);
  Case fp8;
  fp8.a = {false, 64, 64, 64, 1};
  fp8.b = {false, 128, 0, 64, 1};
  on_gpu<E4M3, E5M2, 64>(ctx, fp8, Elem::E4M3, Elem::E5M2, 32, 20);
  fp8.a = {false, 16, 64, 32, 1};
  fp8.b.k = 32;
  fp8.a_in_registers = true;
  fp8.accumulate = true;
  on_gpu<E5M2, E4M3, 8>(ctx, fp8, Elem::E5M2, Elem::E4M3, 32, 21);
  Case tf32;
  tf32.a = {false, 128, 64, 32, 4};
  tf32.b = {false, 128, 0, 32, 4};
  on_gpu<TF32, TF32, 16>(ctx, tf32, Elem::TF32, Elem::TF32, 8, 22);
}
