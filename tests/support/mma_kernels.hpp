#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "ptxdsl/dsl.hpp"

// Tensor-core kernels and their host oracles, for the executor's tests and the GPU's: one warp, 32
// threads. The oracles state the PTX ISA's fragment tables in the ISA's own words (row = groupID
// for a0 and a2...), apart from the executor's maps, so that each checks the other.
namespace ptxdsl::test {

inline constexpr std::uint32_t kWarp = 32;

// ---- the ISA's fragment tables (groupID = lane / 4, threadID_in_group = lane % 4) ----

struct MatrixCell {
  std::uint32_t row = 0, col = 0;
};

// Element i of a lane's A fragment, for elements of `bits` (16: f16/bf16 m16n8k16; 32: tf32
// m16n8k8; 8: e4m3/e5m2/s8/u8 m16n8k32).
inline MatrixCell isa_a(std::uint32_t bits, std::uint32_t lane, std::uint32_t i) {
  const std::uint32_t g = lane / 4, q = lane % 4;
  if (bits == 16) {
    const bool low = i < 2 || (i >= 4 && i < 6);
    return {low ? g : g + 8, q * 2 + (i & 1) + (i < 4 ? 0 : 8)};
  }
  if (bits == 32) return {i == 0 || i == 2 ? g : g + 8, i < 2 ? q : q + 4};
  const bool low = i < 4 || (i >= 8 && i < 12);
  return {low ? g : g + 8, q * 4 + (i & 3) + (i < 8 ? 0 : 16)};
}
// Element i of a lane's B fragment: row k, column groupID.
inline MatrixCell isa_b(std::uint32_t bits, std::uint32_t lane, std::uint32_t i) {
  const std::uint32_t g = lane / 4, q = lane % 4;
  if (bits == 16) return {q * 2 + (i & 1) + (i < 2 ? 0 : 8), g};
  if (bits == 32) return {i == 0 ? q : q + 4, g};
  return {q * 4 + (i & 3) + (i < 4 ? 0 : 16), g};
}
// Element i (one a register) of a lane's C or D fragment.
inline MatrixCell isa_acc(std::uint32_t lane, std::uint32_t i) {
  const std::uint32_t g = lane / 4, q = lane % 4;
  return {i < 2 ? g : g + 8, q * 2 + (i & 1)};
}

// ---- mma.sync on fragments given lane by lane ----

// a[i·32 + lane] is the lane's A register i (four), b its B registers (two), c its C registers
// (four, f32 or s32); d gets D the same way.
template <MmaInputTag A, MmaInputTag B, bool kSatfinite = false>
void build_mma_fragments(Kernel& k) {
  using Acc = MmaAccOf<A>;
  k.require_threads(kWarp);
  const GlobalPtr<B32> a = k.param_ptr<B32>("a"), b = k.param_ptr<B32>("b");
  const GlobalPtr<Acc> c = k.param_ptr<Acc>("c"), d = k.param_ptr<Acc>("d");
  const Reg<U32> lane = k.tid_x();
  const auto at = [&]<class T>(GlobalPtr<T> p, std::uint32_t i) {
    return k.index(p, k.add(lane, i * kWarp));
  };
  MmaA<A> fa{};
  MmaB<B> fb{};
  MmaAcc<Acc> fc{};
  for (std::uint32_t i = 0; i < 4; ++i) fa.regs[i] = k.ld(at(a, i));
  for (std::uint32_t i = 0; i < 2; ++i) fb.regs[i] = k.ld(at(b, i));
  for (std::uint32_t i = 0; i < 4; ++i) fc.regs[i] = k.ld(at(c, i));
  MmaAcc<Acc> fd{};
  if constexpr (kSatfinite) {
    fd = k.mma_satfinite(fa, fb, fc);
  } else {
    fd = k.mma(fa, fb, fc);
  }
  for (std::uint32_t i = 0; i < 4; ++i) k.st(at(d, i), fd.regs[i]);
}

// One product's inputs: the matrices' element bits (A 16×K row-major, B K×8 row-major, C 16×8
// bits of f32 or s32) and the fragments packed from them by the ISA's tables.
struct MmaCase {
  std::uint32_t k = 0, bits = 0;
  std::vector<std::uint32_t> a, b, c;                 // element bits
  std::vector<std::uint32_t> a_frag, b_frag, c_frag;  // [register][lane]
};

inline MmaCase pack_mma_case(std::uint32_t bits, std::vector<std::uint32_t> a,
                             std::vector<std::uint32_t> b, std::vector<std::uint32_t> c) {
  MmaCase m;
  m.bits = bits;
  m.k = bits == 16 ? 16 : bits == 32 ? 8 : 32;
  m.a = std::move(a);
  m.b = std::move(b);
  m.c = std::move(c);
  m.a_frag.assign(4 * kWarp, 0);
  m.b_frag.assign(2 * kWarp, 0);
  m.c_frag.assign(4 * kWarp, 0);
  const std::uint32_t per_reg = 32 / bits;
  const std::uint32_t mask = bits == 32 ? 0xFFFFFFFFu : (1u << bits) - 1u;
  for (std::uint32_t lane = 0; lane < kWarp; ++lane) {
    for (std::uint32_t i = 0; i < 4 * per_reg; ++i) {
      const MatrixCell at = isa_a(bits, lane, i);
      m.a_frag[(i / per_reg) * kWarp + lane] |= (m.a[at.row * m.k + at.col] & mask)
                                                << ((i % per_reg) * bits);
    }
    for (std::uint32_t i = 0; i < 2 * per_reg; ++i) {
      const MatrixCell at = isa_b(bits, lane, i);
      m.b_frag[(i / per_reg) * kWarp + lane] |= (m.b[at.row * 8 + at.col] & mask)
                                                << ((i % per_reg) * bits);
    }
    for (std::uint32_t i = 0; i < 4; ++i) {
      const MatrixCell at = isa_acc(lane, i);
      m.c_frag[i * kWarp + lane] = m.c[at.row * 8 + at.col];
    }
  }
  return m;
}

// Random element bits of type t: 16-bit floats and tf32 in [-2, 2] (tf32 with its low bits set
// too), FP8 bytes of every finite value, any byte for s8/u8.
inline std::vector<std::uint32_t> random_mma_elements(std::mt19937& rng, std::size_t n,
                                                      MmaInput t) {
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<std::uint32_t> v(n);
  for (auto& e : v) {
    switch (t) {
      case MmaInput::F16:
        e = f32_to_f16_bits(u(rng));
        break;
      case MmaInput::BF16:
        e = f32_to_bf16_bits(u(rng));
        break;
      case MmaInput::TF32:
        e = std::bit_cast<std::uint32_t>(u(rng));
        break;
      case MmaInput::E4M3:
        do {
          e = rng() & 0xFFu;
        } while ((e & 0x7Fu) == 0x7Fu);  // NaN
        break;
      case MmaInput::E5M2:
        do {
          e = rng() & 0xFFu;
        } while ((e & 0x7Cu) == 0x7Cu);  // infinities and NaN
        break;
      default:
        e = rng() & 0xFFu;
        break;
    }
  }
  return v;
}

// f32 bits in [-4, 4]: a C.
inline std::vector<std::uint32_t> random_mma_f32(std::mt19937& rng, std::size_t n) {
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  std::vector<std::uint32_t> v(n);
  for (auto& e : v) e = std::bit_cast<std::uint32_t>(u(rng));
  return v;
}

// The bits of |x| for an element of `bits` (the sign is the top bit), or of an f32.
inline std::vector<std::uint32_t> magnitudes(const std::vector<std::uint32_t>& v,
                                             std::uint32_t bits) {
  std::vector<std::uint32_t> out(v.size());
  const std::uint32_t sign = bits == 32 ? 0x80000000u : 1u << (bits - 1);
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = v[i] & ~sign;
  return out;
}

// D (16×8, row-major) from the kernel's d, by the ISA's accumulator table.
inline std::vector<std::uint32_t> unpack_acc(const std::vector<std::uint32_t>& d_frag) {
  std::vector<std::uint32_t> d(16 * 8);
  for (std::uint32_t lane = 0; lane < kWarp; ++lane) {
    for (std::uint32_t i = 0; i < 4; ++i) {
      const MatrixCell at = isa_acc(lane, i);
      d[at.row * 8 + at.col] = d_frag[i * kWarp + lane];
    }
  }
  return d;
}

// ---- ldmatrix and stmatrix between a padded shared tile and registers ----

// The shared tile: 32 rows of 24 b16 (48 bytes, 16-byte aligned); lane l names row l at column
// 8, so matrix i of an .xN access is rows 8i..8i+7, columns 8..15.
inline constexpr std::uint32_t kTileRows = 32, kTileCols = 24, kTileCol0 = 8;

// x (kTileRows·kTileCols u16) into the tile; ldmatrix (.xN, `trans`); out[i·32 + lane] = the
// lane's register i.
template <int N>
void build_ldmatrix(Kernel& k, bool trans) {
  k.require_threads(kWarp);
  const GlobalPtr<U32> x = k.param_ptr<U32>("x"), out = k.param_ptr<U32>("out");
  const SharedPtr<U32> tile = k.shared_array<U32>("tile", kTileRows * kTileCols / 2);
  const Reg<U32> lane = k.tid_x();
  for (std::uint32_t j = 0; j < kTileRows * kTileCols / 2 / kWarp; ++j) {
    const Reg<U32> w = k.add(lane, j * kWarp);
    k.st(k.index(tile, w), k.ld(k.index(x, w)));
  }
  k.bar_sync();
  const SharedPtr<B16> row = k.index(tile.as<B16>(), k.mul(lane, kTileCols)) + kTileCol0;
  const Vec<B32, N> d = trans ? k.ldmatrix_trans<N>(row) : k.ldmatrix<N>(row);
  for (std::uint32_t i = 0; i < static_cast<std::uint32_t>(N); ++i) {
    k.st(k.index(out, k.add(lane, i * kWarp)), k.bitcast<U32>(d[i]));
  }
}

// The tile zeroed; registers x[i·32 + lane] stored by stmatrix (.xN, `trans`) at the rows lanes
// name; the tile (kTileRows·kTileCols u16) to out.
template <int N>
void build_stmatrix(Kernel& k, bool trans) {
  k.require_threads(kWarp);
  const GlobalPtr<U32> x = k.param_ptr<U32>("x"), out = k.param_ptr<U32>("out");
  const SharedPtr<U32> tile = k.shared_array<U32>("tile", kTileRows * kTileCols / 2);
  const Reg<U32> lane = k.tid_x();
  constexpr std::uint32_t kWordsPerLane = kTileRows * kTileCols / 2 / kWarp;
  for (std::uint32_t j = 0; j < kWordsPerLane; ++j) {
    k.st(k.index(tile, k.add(lane, j * kWarp)), 0u);
  }
  k.bar_sync();
  Vec<B32, N> v{};
  for (std::uint32_t i = 0; i < static_cast<std::uint32_t>(N); ++i) {
    v[i] = k.bitcast<B32>(k.ld(k.index(x, k.add(lane, i * kWarp))));
  }
  const SharedPtr<B16> row = k.index(tile.as<B16>(), k.mul(lane, kTileCols)) + kTileCol0;
  if (trans) {
    k.stmatrix_trans<N>(row, v);
  } else {
    k.stmatrix<N>(row, v);
  }
  k.bar_sync();
  for (std::uint32_t j = 0; j < kWordsPerLane; ++j) {
    const Reg<U32> w = k.add(lane, j * kWarp);
    k.st(k.index(out, w), k.ld(k.index(tile, w)));
  }
}

// What ldmatrix gives lane `lane` in register i, from the tile (u16, row-major), in the ISA's
// words: each lane a row's two consecutive elements (lane 4r + c/2 has row r, columns c, c+1);
// with .trans, the same of the transposed matrix.
inline std::uint32_t isa_ldmatrix(const std::vector<std::uint16_t>& tile, std::uint32_t i,
                                  std::uint32_t lane, bool trans) {
  const auto at = [&](std::uint32_t r, std::uint32_t c) -> std::uint32_t {
    return trans ? tile[(8 * i + c) * kTileCols + kTileCol0 + r]
                 : tile[(8 * i + r) * kTileCols + kTileCol0 + c];
  };
  const std::uint32_t r = lane / 4, c = 2 * (lane % 4);
  return at(r, c) | (at(r, c + 1) << 16);
}

// ---- a 16×8×16 bf16 tile product read through ldmatrix ----

// C = A·Bᵀ for A 16×16 and B 8×16 (row-major bf16, as torch.matmul(a, b.T)), f32 C 16×8: both
// tiles copied to shared memory, A's fragment by ldmatrix.x4, B's by ldmatrix.x2 (Bᵀ column-major
// is B row-major: its rows are the fragment's columns), one mma.sync from zero.
inline void build_bf16_tile(Kernel& k) {
  k.require_threads(kWarp);
  const GlobalPtr<U32> a = k.param_ptr<U32>("a"), b = k.param_ptr<U32>("b");
  const GlobalPtr<F32> c = k.param_ptr<F32>("c");
  const SharedPtr<U32> sa = k.shared_array<U32>("sa", 16 * 16 / 2);
  const SharedPtr<U32> sb = k.shared_array<U32>("sb", 8 * 16 / 2);
  const Reg<U32> lane = k.tid_x();
  for (std::uint32_t j = 0; j < 4; ++j) {
    const Reg<U32> w = k.add(lane, j * kWarp);
    k.st(k.index(sa, w), k.ld(k.index(a, w)));
  }
  for (std::uint32_t j = 0; j < 2; ++j) {
    const Reg<U32> w = k.add(lane, j * kWarp);
    k.st(k.index(sb, w), k.ld(k.index(b, w)));
  }
  k.bar_sync();
  // A: lane l names row l % 16 at column 8·(l / 16): matrices (rows 0-7, k 0-7), (8-15, 0-7),
  // (0-7, 8-15), (8-15, 8-15), the order of A's registers.
  const Reg<U32> a_row = k.and_(lane, 15u);
  const Reg<U32> a_col = k.mul(k.shr(lane, 4u), 8u);
  const SharedPtr<BF16> a_at = k.index(sa.as<BF16>(), k.mad(a_row, 16u, a_col));
  const MmaA<BF16> fa{k.ldmatrix<4>(a_at)};
  // B: lanes 0-15 name row l % 8 of B at column 8·(l / 8) % 16 (lanes 16-31 are not read).
  const Reg<U32> b_row = k.and_(lane, 7u);
  const Reg<U32> b_col = k.mul(k.and_(k.shr(lane, 3u), 1u), 8u);
  const SharedPtr<BF16> b_at = k.index(sb.as<BF16>(), k.mad(b_row, 16u, b_col));
  const MmaB<BF16> fb{k.ldmatrix<2>(b_at)};
  const MmaAcc<F32> d = k.mma(fa, fb, k.mma_zero<F32>());
  // D: lane l holds row l/4 (and + 8), columns 2(l%4) and 2(l%4)+1.
  const Reg<U32> g = k.shr(lane, 2u);
  const Reg<U32> col = k.shl(k.and_(lane, 3u), 1u);
  const Reg<U32> top = k.mad(g, 8u, col);
  k.st_v<2>(k.index(c, top), Vec<F32, 2>{d.regs[0], d.regs[1]});
  k.st_v<2>(k.index(c, k.add(top, 64u)), Vec<F32, 2>{d.regs[2], d.regs[3]});
}

// bf16 bits of values in [-1, 1) that are multiples of 2^-7: products and their sums are exact
// in f32 and in double.
inline std::vector<std::uint16_t> bf16_inputs(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint16_t> v(n);
  for (auto& e : v) {
    const auto q = static_cast<int>(rng() % 256) - 128;
    e = f32_to_bf16_bits(static_cast<float>(q) / 128.0f);
  }
  return v;
}

// Two u16 to one u32 word, the first in the low half (as memory holds them).
inline std::vector<std::uint32_t> as_words(const std::vector<std::uint16_t>& h) {
  std::vector<std::uint32_t> w(h.size() / 2);
  for (std::size_t i = 0; i < w.size(); ++i) {
    w[i] = h[2 * i] | (std::uint32_t{h[2 * i + 1]} << 16);
  }
  return w;
}

// C = A·Bᵀ in float64 (A m×k, B n×k, row-major bf16 bits).
inline std::vector<double> reference_abt(const std::vector<std::uint16_t>& a,
                                         const std::vector<std::uint16_t>& b, std::uint32_t m,
                                         std::uint32_t n, std::uint32_t kk) {
  std::vector<double> c(std::size_t{m} * n, 0.0);
  for (std::uint32_t i = 0; i < m; ++i) {
    for (std::uint32_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::uint32_t p = 0; p < kk; ++p) {
        s += double{bf16_bits_to_f32(a[i * kk + p])} * double{bf16_bits_to_f32(b[j * kk + p])};
      }
      c[i * n + j] = s;
    }
  }
  return c;
}

}  // namespace ptxdsl::test
