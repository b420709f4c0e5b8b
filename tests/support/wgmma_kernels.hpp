#pragma once

// A warpgroup's wgmma.mma_async tile, for the executor's tests and the GPU's: A and B laid out in
// shared memory by the ISA's canonical layouts (written here apart from the executor's, as the
// per-row XOR of 16-byte chunks that the swizzle figures draw) or A from registers, the kernel
// that copies them in and multiplies, and the float64 result by D's fragment map.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "ptxdsl/dsl.hpp"

namespace ptxdsl::test::wgmma {

inline constexpr std::uint32_t kThreads = 128;

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

enum class Elem : std::uint8_t { F16, BF16, TF32, E4M3, E5M2 };

inline std::uint32_t encode(Elem e, float v) {
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
inline std::uint32_t bytes_of(Elem e) {
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
inline std::pair<std::uint32_t, std::uint32_t> d_cell(std::uint32_t t, std::uint32_t i) {
  const std::uint32_t lane = t % 32;
  return {16 * (t / 32) + lane / 4 + 8 * (i / 2 % 2), 2 * (lane % 4) + 8 * (i / 4) + i % 2};
}

// Element i of thread t's A fragment in registers (16-bit: the mma.m16n8k16 A map of its warp's
// 16 rows; 8-bit: m16n8k32's).
inline std::pair<std::uint32_t, std::uint32_t> a_reg_cell(std::uint32_t t, std::uint32_t i,
                                                          std::uint32_t bytes) {
  const std::uint32_t lane = t % 32, g = lane / 4, q = lane % 4, row0 = 16 * (t / 32);
  if (bytes == 2) return {row0 + g + 8 * (i / 2 % 2), 2 * q + i % 2 + 8 * (i / 4)};
  return {row0 + g + 8 * (i / 4 % 2), 4 * q + i % 4 + 16 * (i / 8)};
}

template <WgmmaInputTag A, WgmmaInputTag B, int N>
void build_wgmma(Kernel& k, const Case& c, std::uint32_t instr_k, std::uint32_t b_base,
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

// A case's inputs (the shared tiles' image, A's fragments, D's initial fragments) and its float64
// result by D's fragment map, from random small values: multiples of 1/4 in [-2, 2], exact in
// every input type, so that every product and partial sum is exact in f32 as in float64 (the
// executor's one rounding, the tensor core's own adds and the reference then agree exactly).
struct Prepared {
  std::vector<std::uint32_t> image, a_frag;
  std::vector<float> d_in;
  std::vector<double> want;
  std::uint32_t b_base = 0;
};

template <int N>
Prepared prepare(Case& c, Elem ea, Elem eb, std::uint32_t seed) {
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

  Prepared p;
  p.b_base = (c.a.size() + 1023) / 1024 * 1024;
  const std::uint32_t bytes = p.b_base + (c.b.size() + 1023) / 1024 * 1024;
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
      put(p.b_base + c.b.offset(n, kk), encode(eb, b[n * kt + kk]), c.b.bytes);
    }
  }
  p.image.resize(bytes / 4);
  std::memcpy(p.image.data(), image.data(), bytes);
  p.a_frag.assign(kThreads * 4, 0);
  if (c.a_in_registers) {
    const std::uint32_t per_reg = 4 / c.a.bytes;
    for (std::uint32_t t = 0; t < kThreads; ++t) {
      for (std::uint32_t i = 0; i < 4 * per_reg; ++i) {
        const auto [m, kk] = a_reg_cell(t, i, c.a.bytes);
        p.a_frag[t * 4 + i / per_reg] |= encode(ea, a[m * kt + kk])
                                         << (i % per_reg * 8 * c.a.bytes);
      }
    }
  }
  const double sign = (c.negate_a ? -1.0 : 1.0) * (c.negate_b ? -1.0 : 1.0);
  p.d_in.resize(kThreads * N / 2);
  p.want.resize(kThreads * N / 2);
  for (std::uint32_t t = 0; t < kThreads; ++t) {
    for (std::uint32_t i = 0; i < N / 2; ++i) {
      const auto [m, n] = d_cell(t, i);
      p.d_in[t * N / 2 + i] = d0[m * N + n];
      double want = c.accumulate ? d0[m * N + n] : 0.0;
      for (std::uint32_t kk = 0; kk < kt; ++kk) {
        want += sign * static_cast<double>(a[m * kt + kk]) * b[n * kt + kk];
      }
      p.want[t * N / 2 + i] = want;
    }
  }
  return p;
}

// How many of `got` differ from `p.want` (the first few reported by their place in D).
inline std::uint32_t count_wrong(const Prepared& p, const std::vector<float>& got,
                                 std::uint32_t n) {
  std::uint32_t wrong = 0;
  for (std::uint32_t t = 0; t < kThreads; ++t) {
    for (std::uint32_t i = 0; i < n / 2; ++i) {
      const double g = got[t * n / 2 + i], w = p.want[t * n / 2 + i];
      if (g != w && ++wrong <= 4) {
        const auto [m, col] = d_cell(t, i);
        FAIL_CHECK("D(" << m << ", " << col << ") = " << g << ", want " << w);
      }
    }
  }
  return wrong;
}

}  // namespace ptxdsl::test::wgmma
