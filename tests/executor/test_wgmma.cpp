// wgmma.mma_async on the executor: a warpgroup's 64×N×K tiles (tests/support/wgmma_kernels.hpp)
// against float64; and the faults of reading results early, a missing wgmma.fence, the async
// proxy and a partial warpgroup.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ptxdsl/dsl.hpp"
#include "ptxdsl/dsl/executor.hpp"
#include "ptxdsl/dsl/half.hpp"
#include "ptxdsl/dsl/narrow_float.hpp"
#include "wgmma_kernels.hpp"

using namespace ptxdsl;
using namespace ptxdsl::test::wgmma;
using Catch::Matchers::Contains;

namespace {

// Runs the case on the executor against float64 (exactly: see prepare).
template <WgmmaInputTag A, WgmmaInputTag B, int N>
void run_case(Case c, Elem ea, Elem eb, std::uint32_t instr_k, std::uint32_t seed) {
  const Prepared p = prepare<N>(c, ea, eb, seed);
  Module mod(Arch::Sm90a, {8, 0});
  Kernel& k = mod.kernel("wgmma");
  build_wgmma<A, B, N>(k, c, instr_k, p.b_base, static_cast<std::uint32_t>(p.image.size()));
  k.finalize();
  CpuDevice dev;
  std::vector<float> out(kThreads * N / 2, -1.0f);
  dev.launch(k, {1, kThreads},
             {dev.upload<std::uint32_t>(p.image, "image"), dev.upload<std::uint32_t>(p.a_frag, "a"),
              dev.upload<float>(p.d_in, "d_in"), dev.map<float>(out, "out")});
  CHECK(count_wrong(p, out, N) == 0);
}

template <int N>
void bf16_every_layout(std::uint32_t seed) {
  for (const std::uint32_t swizzle : {16u, 32u, 64u, 128u}) {
    for (const bool mn_major : {false, true}) {
      INFO("N " << N << ", swizzle " << swizzle << ", " << (mn_major ? "MN" : "K") << "-major");
      // B's major-ness differs from A's at 32 and 128 bytes. A K-major swizzled slice spans one
      // swizzle line (several products, each 32 bytes further); else two products of K 16.
      const bool b_mn_major = swizzle == 32 || swizzle == 128 ? !mn_major : mn_major;
      const std::uint32_t kt = swizzle > 16 && !(mn_major && b_mn_major) ? swizzle / 2 : 32;
      Case c;
      c.a = {mn_major, swizzle, 64, kt, 2};
      c.b = {b_mn_major, swizzle, N, kt, 2};
      c.accumulate = N == 64;
      run_case<BF16, BF16, N>(c, Elem::BF16, Elem::BF16, 16, seed + swizzle);
    }
  }
}

}  // namespace

TEST_CASE("wgmma.mma_async bf16 64xNx16 from shared memory: every swizzle, K- and MN-major",
          "[executor][wgmma]") {
  bf16_every_layout<8>(1);
  bf16_every_layout<64>(2);
  bf16_every_layout<256>(3);
}

TEST_CASE("wgmma.mma_async f16 with A from registers, negated operands", "[executor][wgmma]") {
  for (const std::uint32_t swizzle : {16u, 128u}) {
    Case c;
    c.a_in_registers = true;
    c.a = {false, 16, 64, 16, 2};
    c.b = {swizzle == 16, swizzle, 0, 16, 2};
    c.negate_b = true;
    run_case<F16, F16, 8>(c, Elem::F16, Elem::F16, 16, 10 + swizzle);
    c.accumulate = true;
    c.negate_a = true;
    run_case<F16, F16, 64>(c, Elem::F16, Elem::F16, 16, 11 + swizzle);
    run_case<F16, F16, 256>(c, Elem::F16, Elem::F16, 16, 12 + swizzle);
  }
}

TEST_CASE("wgmma.mma_async e4m3 x e5m2 (k32) and tf32 (k8)", "[executor][wgmma]") {
  Case fp8;
  fp8.a = {false, 64, 64, 64, 1};
  fp8.b = {false, 128, 0, 64, 1};
  run_case<E4M3, E5M2, 64>(fp8, Elem::E4M3, Elem::E5M2, 32, 20);
  fp8.a = {false, 16, 64, 32, 1};
  fp8.b.k = 32;
  fp8.a_in_registers = true;
  fp8.accumulate = true;
  run_case<E5M2, E4M3, 8>(fp8, Elem::E5M2, Elem::E4M3, 32, 21);
  Case tf32;
  tf32.a = {false, 128, 64, 32, 4};
  tf32.b = {false, 128, 0, 32, 4};
  run_case<TF32, TF32, 16>(tf32, Elem::TF32, Elem::TF32, 8, 22);
}

namespace {

// A warpgroup's N = 8 product of zeros, with `between` emitted after the commit and before the
// wait, and `before` before the fence; D stored to `out`. Returns the launch's error, or "".
std::string run_misuse(std::uint32_t threads,
                       const std::function<void(Kernel&, WgmmaAcc<8>&)>& before,
                       const std::function<void(Kernel&, WgmmaAcc<8>&)>& between, bool fence = true,
                       bool proxy_fence = true) {
  Module m(Arch::Sm90a, {8, 0});
  Kernel& k = m.kernel("misuse");
  const GlobalPtr<F32> out = k.param_ptr<F32>("out");
  const SharedPtr<U32> tile = k.shared_array<U32>("tile", 512, 1024);
  const Reg<U32> tid = k.tid_x();
  k.for_range(tid, 512u, threads, [&](Reg<U32> i) { k.st(k.index(tile, i), 0u); });
  if (proxy_fence) k.fence_proxy_async();
  k.bar_sync();
  WgmmaAcc<8> acc = k.wgmma_acc<8>();
  const MatrixDescriptor a = k.matrix_descriptor(tile, {128, 256, Swizzle::None});
  const MatrixDescriptor b = k.matrix_descriptor(tile + 256, {128, 256, Swizzle::None});
  before(k, acc);
  if (fence) k.wgmma_fence();
  k.wgmma_mma_async<BF16>(acc, a, b, {.accumulate = false});
  k.wgmma_commit_group();
  between(k, acc);
  k.wgmma_wait_group(0);
  for (std::size_t i = 0; i < acc.regs.size(); ++i) {
    k.st(k.index(out, k.add(k.mul(tid, 4u), static_cast<std::uint32_t>(i))), acc.regs[i]);
  }
  k.finalize();
  std::vector<float> got(4 * threads, -1.0f);
  CpuDevice dev;
  try {
    dev.launch(k, {1, threads}, {dev.map<float>(got, "out")});
  } catch (const Error& e) {
    return e.what();
  }
  for (float v : got) CHECK(v == 0.0f);
  return {};
}

void nothing(Kernel&, WgmmaAcc<8>&) {}

}  // namespace

TEST_CASE("wgmma: results are read after their wait_group; registers fenced; whole warpgroups",
          "[executor][wgmma]") {
  CHECK(run_misuse(kThreads, nothing, nothing).empty());
  CHECK_THAT(
      run_misuse(kThreads, nothing, [](Kernel& k, WgmmaAcc<8>& acc) { k.add(acc.regs[1], 1.0f); }),
      Contains("add.f32") && Contains("reads register %f2 (acc)") &&
          Contains("which the wgmma.mma_async in flight (instruction #") &&
          Contains("writes as its accumulator: a wgmma.wait_group that completes its "
                   "group must come first"));
  // wait_group 1 leaves the newest group in flight.
  CHECK_THAT(run_misuse(kThreads, nothing,
                        [](Kernel& k, WgmmaAcc<8>& acc) {
                          k.wgmma_wait_group(1);
                          k.mov(acc.regs[0], 0.0f);
                        }),
             Contains("writes register %f1 (acc)"));
  CHECK_THAT(run_misuse(kThreads, nothing, nothing, false),
             Contains("no wgmma.fence before the warp's first wgmma.mma_async"));
  CHECK_THAT(run_misuse(
                 kThreads,
                 [](Kernel& k, WgmmaAcc<8>& acc) {
                   k.wgmma_fence();
                   k.mov(acc.regs[3], 1.0f);
                   // no fence after this write: the product's D was written since
                   k.wgmma_mma_async<BF16>(acc, MatrixDescriptor{k.mov<U64>(0u)},
                                           MatrixDescriptor{k.mov<U64>(0u)});
                 },
                 nothing, false),
             Contains("register %f4 (acc) was written after the warp's last wgmma.fence"));
  // The tiles' ordinary stores reach the async proxy only through fence.proxy.async.
  CHECK_THAT(run_misuse(kThreads, nothing, nothing, true, false),
             Contains("wgmma.mma_async.sync.aligned.m64n8k16") &&
                 Contains("reads shared memory at 0x0 through the async proxy, which thread (0, "
                          "0, 0) wrote with an ordinary (generic-proxy) store and no "
                          "fence.proxy.async since"));
  CHECK_THAT(run_misuse(64, nothing, nothing),
             Contains("wgmma needs the four whole warps of warpgroup 0 (threads 0 to 127), but "
                      "the CTA has 64 threads"));
}

TEST_CASE("wgmma: every warp of a warpgroup issues each product", "[executor][wgmma]") {
  Module m(Arch::Sm90a, {8, 0});
  Kernel& k = m.kernel("skips");
  const SharedPtr<U32> tile = k.shared_array<U32>("tile", 512, 1024);
  const Reg<U32> tid = k.tid_x();
  k.for_range(tid, 512u, kThreads, [&](Reg<U32> i) { k.st(k.index(tile, i), 0u); });
  k.fence_proxy_async();
  k.bar_sync();
  WgmmaAcc<8> acc = k.wgmma_acc<8>();
  const MatrixDescriptor a = k.matrix_descriptor(tile, {128, 256, Swizzle::None});
  k.wgmma_fence();
  // Warp 1 skips the product (a branch uniform within each warp).
  k.if_(k.setp(Cmp::Ne, k.shr(tid, 5u), 1u),
        [&] { k.wgmma_mma_async<BF16>(acc, a, a, {.accumulate = false}); });
  k.wgmma_commit_group();
  k.wgmma_wait_group(0);
  k.finalize();
  CpuDevice dev;
  CHECK_THROWS_WITH(dev.launch(k, {1, kThreads}, {}),
                    Contains("warp 0 issued 1 wgmma.mma_async and warp 1 of the same warpgroup 0"));
}
