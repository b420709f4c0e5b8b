// wgmma.mma_async on the executor: a warpgroup's 64×N×K tiles, A and B laid out in shared memory
// by the ISA's canonical layouts (written here apart from the executor's, as the per-row XOR of
// 16-byte chunks that the swizzle figures draw) or A from registers, against float64; and the
// faults of reading results early, a missing wgmma.fence and a partial warpgroup.
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

using namespace ptxdsl;
using Catch::Matchers::Contains;

namespace {

constexpr std::uint32_t kThreads = 128;

// How one operand lies in shared memory: K-major or MN-major, the swizzle's width in bytes (16:
// none), its MN and K extents in elements, of `bytes` bytes each.
struct TileLayout {
  bool mn_major = false;
  std::uint32_t swizzle = 16;
  std::uint32_t mn = 64, k = 16, bytes = 2;

  Swizzle swizzle_mode() const {
    return swizzle == 128  ? Swizzle::B128
           : swizzle == 64 ? Swizzle::B64
           : swizzle == 32 ? Swizzle::B32
                           : Swizzle::None;
  }
  // The 16-byte chunk a line's chunk `c` moves to: XORed with the line's place in its 8-line
  // pattern, shifted to the swizzle's 1, 2 or 3 bits (no bits without a swizzle).
  std::uint32_t chunk(std::uint32_t c, std::uint32_t line) const {
    if (swizzle == 16) return c;
    const std::uint32_t shift = swizzle == 128 ? 0 : swizzle == 64 ? 1 : 2;
    return c ^ (line % 8 >> shift);
  }
  std::uint32_t t() const { return 16 / bytes; }
  // Lines of `swizzle` bytes, 8 to a pattern: K-major lines run along K (one MN index each),
  // MN-major lines along MN (one K index each). Without a swizzle, core matrices of 8 lines of
  // 16 bytes, numbered along K first (K-major) or along MN first (MN-major).
  std::uint32_t offset(std::uint32_t m, std::uint32_t kk) const {
    const std::uint32_t line_elems = swizzle / bytes;
    if (!mn_major) {
      if (swizzle == 16) {
        return (m / 8 * (k / t()) + kk / t()) * 128 + m % 8 * 16 + kk % t() * bytes;
      }
      return m / 8 * 8 * swizzle + m % 8 * swizzle + chunk(kk * bytes / 16, m) * 16 +
             kk * bytes % 16;
    }
    if (swizzle == 16) {
      return (kk / 8 * (mn / t()) + m / t()) * 128 + kk % 8 * 16 + m % t() * bytes;
    }
    const std::uint32_t atom = m / line_elems, within = m % line_elems * bytes;
    return (atom * (k / 8) + kk / 8) * 8 * swizzle + kk % 8 * swizzle +
           chunk(within / 16, kk) * 16 + within % 16;
  }
  // The bytes the tile spans (a line or atom part-filled when MN is below its width).
  std::uint32_t size() const {
    std::uint32_t end = 0;
    for (std::uint32_t m = 0; m < mn; ++m) {
      for (std::uint32_t kk = 0; kk < k; ++kk) end = std::max(end, offset(m, kk) + bytes);
    }
    return end;
  }
  // The descriptor's offsets for the layout above (ISA: LBO and SBO per major-ness).
  MatrixLayout layout() const {
    if (!mn_major) {
      if (swizzle == 16) return {128, 128 * (k / t()), Swizzle::None};
      return {16, 8 * swizzle, swizzle_mode()};
    }
    if (swizzle == 16) return {128 * (mn / t()), 128, Swizzle::None};
    return {8 * swizzle * (k / 8), 8 * swizzle, swizzle_mode()};
  }
  // Where the K slice of product `step` starts (instr_k elements of K each).
  std::uint32_t step_offset(std::uint32_t step, std::uint32_t instr_k) const {
    return offset(0, step * instr_k);
  }
};

enum class Elem { F16, BF16, TF32, E4M3, E5M2 };

std::uint32_t encode(Elem e, float v) {
  switch (e) {
    case Elem::F16:
      return f32_to_f16_bits(v);
    case Elem::BF16:
      return f32_to_bf16_bits(v);
    case Elem::TF32:
      return std::bit_cast<std::uint32_t>(v);
    case Elem::E4M3:
      return f32_to_e4m3_bits(v);
    case Elem::E5M2:
      return f32_to_e5m2_bits(v);
  }
  return 0;
}
std::uint32_t bytes_of(Elem e) {
  return e == Elem::TF32 ? 4 : e == Elem::E4M3 || e == Elem::E5M2 ? 1 : 2;
}

// One product's setup: the tiles, A from registers or not, the options, the initial D.
struct Case {
  std::uint32_t n = 8;
  TileLayout a, b;
  bool a_in_registers = false;
  bool accumulate = false;
  bool negate_a = false, negate_b = false;
};

// The D element thread t's register i holds (the ISA's "WGMMA .m64nNk16 register fragment
// layout for accumulator matrix D").
std::pair<std::uint32_t, std::uint32_t> d_cell(std::uint32_t t, std::uint32_t i) {
  const std::uint32_t lane = t % 32;
  return {16 * (t / 32) + lane / 4 + 8 * (i / 2 % 2), 2 * (lane % 4) + 8 * (i / 4) + i % 2};
}

// Element i of thread t's A fragment in registers (16-bit: the mma.m16n8k16 A map of its warp's
// 16 rows; 8-bit: m16n8k32's).
std::pair<std::uint32_t, std::uint32_t> a_reg_cell(std::uint32_t t, std::uint32_t i,
                                                   std::uint32_t bytes) {
  const std::uint32_t lane = t % 32, g = lane / 4, q = lane % 4, row0 = 16 * (t / 32);
  if (bytes == 2) return {row0 + g + 8 * (i / 2 % 2), 2 * q + i % 2 + 8 * (i / 4)};
  return {row0 + g + 8 * (i / 4 % 2), 4 * q + i % 4 + 16 * (i / 8)};
}

template <WgmmaInputTag A, WgmmaInputTag B, int N>
void build(Kernel& k, const Case& c, std::uint32_t instr_k, std::uint32_t b_base,
           std::uint32_t image_words) {
  k.require_threads(kThreads);
  const GlobalPtr<U32> image = k.param_ptr<U32>("image");
  const GlobalPtr<U32> a_frag = k.param_ptr<U32>("a_frag");
  const GlobalPtr<F32> d_in = k.param_ptr<F32>("d_in");
  const GlobalPtr<F32> out = k.param_ptr<F32>("out");
  const SharedPtr<U32> tile = k.shared_array<U32>("tile", image_words, 1024);
  const Reg<U32> tid = k.tid_x();
  k.for_range(tid, image_words, kThreads,
              [&](Reg<U32> i) { k.st(k.index(tile, i), k.ld(k.index(image, i))); });
  k.fence_proxy_async();  // the tiles' stores, before the async proxy reads them
  k.bar_sync();
  WgmmaAcc<N> acc = k.wgmma_acc<N>();
  const Reg<U32> first = k.mul(tid, static_cast<std::uint32_t>(N / 2));
  if (c.accumulate) {
    for (std::size_t i = 0; i < acc.regs.size(); ++i) {
      acc.regs[i] = k.ld(k.index(d_in, k.add(first, static_cast<std::uint32_t>(i))));
    }
  }
  MmaA<A> a_regs{};
  if (c.a_in_registers) {
    for (std::uint32_t i = 0; i < 4; ++i) {
      a_regs.regs[i] = k.bitcast<B32>(k.ld(k.index(a_frag, k.add(k.mul(tid, 4u), i))));
    }
  }
  k.wgmma_fence();
  const std::uint32_t steps = c.a.k / instr_k;
  for (std::uint32_t s = 0; s < steps; ++s) {
    const WgmmaOptions o{.accumulate = c.accumulate || s > 0,
                         .negate_a = c.negate_a,
                         .negate_b = c.negate_b,
                         .transpose_a = c.a.mn_major,
                         .transpose_b = c.b.mn_major};
    const MatrixDescriptor bd =
        k.matrix_descriptor(tile + (b_base + c.b.step_offset(s, instr_k)) / 4, c.b.layout());
    if (c.a_in_registers) {
      k.wgmma_mma_async<A, B>(acc, a_regs, bd, o);
    } else {
      const MatrixDescriptor ad =
          k.matrix_descriptor(tile + c.a.step_offset(s, instr_k) / 4, c.a.layout());
      k.wgmma_mma_async<A, B>(acc, ad, bd, o);
    }
  }
  k.wgmma_commit_group();
  k.wgmma_wait_group(0);
  for (std::size_t i = 0; i < acc.regs.size(); ++i) {
    k.st(k.index(out, k.add(first, static_cast<std::uint32_t>(i))), acc.regs[i]);
  }
}

// Runs the case with random small values (multiples of 1/4 in [-2, 2], exact in every input type,
// so that every product and partial sum is exact in f32 as in float64: the executor's one
// rounding and the float64 reference then agree exactly).
template <WgmmaInputTag A, WgmmaInputTag B, int N>
void run_case(Case c, Elem ea, Elem eb, std::uint32_t instr_k, std::uint32_t seed) {
  c.n = N;
  c.a.mn = 64;
  c.b.mn = N;
  c.a.bytes = bytes_of(ea);
  c.b.bytes = bytes_of(eb);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pick(-8, 8);
  const std::uint32_t kt = c.a.k;
  std::vector<float> a(64 * kt), b(std::size_t{N} * kt), d0(64 * N);
  for (float& v : a) v = static_cast<float>(pick(rng)) / 4;
  for (float& v : b) v = static_cast<float>(pick(rng)) / 4;
  for (float& v : d0) v = static_cast<float>(pick(rng));

  const std::uint32_t b_base = (c.a.size() + 1023) / 1024 * 1024;
  const std::uint32_t bytes = b_base + (c.b.size() + 1023) / 1024 * 1024;
  std::vector<std::uint8_t> image(bytes, 0);
  const auto put = [&](std::uint32_t at, std::uint32_t bits, std::uint32_t size) {
    std::memcpy(image.data() + at, &bits, size);
  };
  for (std::uint32_t m = 0; m < 64; ++m) {
    for (std::uint32_t kk = 0; kk < kt; ++kk) {
      put(c.a.offset(m, kk), encode(ea, a[m * kt + kk]), c.a.bytes);
    }
  }
  for (std::uint32_t n = 0; n < N; ++n) {
    for (std::uint32_t kk = 0; kk < kt; ++kk) {
      put(b_base + c.b.offset(n, kk), encode(eb, b[n * kt + kk]), c.b.bytes);
    }
  }
  std::vector<std::uint32_t> words(bytes / 4);
  std::memcpy(words.data(), image.data(), bytes);
  std::vector<std::uint32_t> a_frag(kThreads * 4, 0);
  if (c.a_in_registers) {
    const std::uint32_t per_reg = 4 / c.a.bytes;
    for (std::uint32_t t = 0; t < kThreads; ++t) {
      for (std::uint32_t i = 0; i < 4 * per_reg; ++i) {
        const auto [m, kk] = a_reg_cell(t, i, c.a.bytes);
        a_frag[t * 4 + i / per_reg] |= encode(ea, a[m * kt + kk]) << (i % per_reg * 8 * c.a.bytes);
      }
    }
  }
  std::vector<float> d_in(kThreads * N / 2), out(kThreads * N / 2, -1.0f);
  for (std::uint32_t t = 0; t < kThreads; ++t) {
    for (std::uint32_t i = 0; i < N / 2; ++i) {
      const auto [m, n] = d_cell(t, i);
      d_in[t * N / 2 + i] = d0[m * N + n];
    }
  }

  Module mod(Arch::Sm90a, {8, 0});
  Kernel& k = mod.kernel("wgmma");
  build<A, B, N>(k, c, instr_k, b_base, bytes / 4);
  k.finalize();
  CpuDevice dev;
  dev.launch(k, {1, kThreads},
             {dev.upload<std::uint32_t>(words, "image"), dev.upload<std::uint32_t>(a_frag, "a"),
              dev.upload<float>(d_in, "d_in"), dev.map<float>(out, "out")});
  const double sign = (c.negate_a ? -1.0 : 1.0) * (c.negate_b ? -1.0 : 1.0);
  std::uint32_t wrong = 0;
  for (std::uint32_t t = 0; t < kThreads; ++t) {
    for (std::uint32_t i = 0; i < N / 2; ++i) {
      const auto [m, n] = d_cell(t, i);
      double want = c.accumulate ? d0[m * N + n] : 0.0;
      for (std::uint32_t kk = 0; kk < kt; ++kk) {
        want += sign * static_cast<double>(a[m * kt + kk]) * b[n * kt + kk];
      }
      if (static_cast<double>(out[t * N / 2 + i]) != want && ++wrong <= 4) {
        FAIL_CHECK("D(" << m << ", " << n << ") = " << out[t * N / 2 + i] << ", want " << want);
      }
    }
  }
  CHECK(wrong == 0);
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
