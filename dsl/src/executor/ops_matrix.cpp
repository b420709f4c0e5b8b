#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "../instruction_table.hpp"
#include "mma_fragments.hpp"
#include "numeric.hpp"
#include "program.hpp"
#include "ptxdsl/dsl/half.hpp"
#include "ptxdsl/dsl/narrow_float.hpp"

// The tensor-core instructions of one warp: mma.sync on register fragments, and ldmatrix /
// stmatrix between fragments and 8×8 matrices in shared memory. Which matrix element each lane's
// register holds is the PTX ISA's ("Matrix Fragments for mma.m16n8k16", "... m16n8k8",
// "... m16n8k32", and ldmatrix's figure); the maps below state them once.
namespace ptxdsl::detail {
namespace {

// Element i of lane `lane`'s B fragment (K×8): row k, column n = groupID.
constexpr Cell b_cell(MmaInput t, std::uint32_t lane, std::uint32_t i) {
  const std::uint32_t g = group_of(lane), q = thread_in_group(lane);
  switch (element_bits(t)) {
    case 16:  // b0..b3: rows 2q, 2q+1, 2q+8, 2q+9
      return {2 * q + (i & 1) + (i >= 2 ? 8 : 0), g};
    case 32:  // b0, b1: rows q, q+4
      return {q + 4 * i, g};
    default:  // b0..b7: rows 4q..4q+3, then + 16
      return {4 * q + (i & 3) + (i >= 4 ? 16 : 0), g};
  }
}

// Element i (0..3) of lane `lane`'s C or D fragment (16×8), one a register.
constexpr Cell acc_cell(std::uint32_t lane, std::uint32_t i) {
  return {group_of(lane) + (i >= 2 ? 8 : 0), 2 * thread_in_group(lane) + (i & 1)};
}

// Every thread of the warp executes the instruction together, and all 32 lanes are threads.
void check_whole_warp(Ctx& c, const DInstr& in, std::uint32_t exec) {
  check_aligned(c, in, exec);
  const Warp& w = *c.w;
  if ((w.exists & ~w.exited) != kFullMask) {
    const std::uint32_t missing = ~(w.exists & ~w.exited);
    fault(c, in, static_cast<std::uint32_t>(std::countr_zero(exec)),
          fmt::format("needs all 32 lanes of its warp, but lane {} {}", std::countr_zero(missing),
                      (w.exists >> std::countr_zero(missing)) & 1u
                          ? "has exited"
                          : "is not a thread of the CTA (the block is not a multiple of 32)"));
  }
}

// Fills `m` (row-major, `cols` wide) from the fragment registers src[first...] of every lane.
template <MmaInput T, class Place>
void gather(Ctx& c, const DInstr& in, std::uint32_t first, std::uint32_t elements, Place place,
            double* m, std::uint32_t cols) {
  constexpr std::uint32_t bits = element_bits(T);
  constexpr std::uint32_t per_reg = 32 / bits;
  constexpr std::uint32_t mask = bits == 32 ? 0xFFFFFFFFu : (1u << bits) - 1u;
  for (std::uint32_t i = 0; i < elements; ++i) {
    const std::uint64_t* r = c.row(in.src[first + i / per_reg]);
    const std::uint32_t shift = (i % per_reg) * bits;
    for (std::uint32_t lane = 0; lane < kLanes; ++lane) {
      const Cell at = place(lane, i);
      m[at.row * cols + at.col] =
          element_value<T>((static_cast<std::uint32_t>(r[lane]) >> shift) & mask);
    }
  }
}

// mma.sync: D = A·B + C. f32: the products are exact in double and summed there with C, then
// rounded once to f32 (NaN as the GPU writes it); s32: exact, then wrapped to 32 bits or, with
// .satfinite, clamped.
template <MmaInput A, MmaInput B>
void mma(Ctx& c, const DInstr& in, std::uint32_t exec) {
  check_whole_warp(c, in, exec);
  constexpr std::uint32_t k = mma_form(A).k;
  constexpr std::uint32_t a_elements = 4 * 32 / element_bits(A);
  constexpr std::uint32_t b_elements = 2 * 32 / element_bits(B);
  std::array<double, 16 * k> a{};
  std::array<double, k * 8> b{};
  gather<A>(
      c, in, 0, a_elements, [](std::uint32_t l, std::uint32_t i) { return a_cell(A, l, i); },
      a.data(), k);
  gather<B>(
      c, in, 4, b_elements, [](std::uint32_t l, std::uint32_t i) { return b_cell(B, l, i); },
      b.data(), 8);
  constexpr bool integer = A == MmaInput::S8 || A == MmaInput::U8;
  std::array<std::array<std::uint32_t, kLanes>, 4> out{};  // D may be C's registers
  for (std::uint32_t i = 0; i < 4; ++i) {
    const std::uint64_t* acc = c.row(in.src[6 + i]);
    std::uint32_t* d = out[i].data();
    for (std::uint32_t lane = 0; lane < kLanes; ++lane) {
      const Cell at = acc_cell(lane, i);
      if constexpr (integer) {
        std::int64_t sum = static_cast<std::int32_t>(acc[lane]);
        for (std::uint32_t j = 0; j < k; ++j) {
          sum += static_cast<std::int64_t>(a[at.row * k + j]) *
                 static_cast<std::int64_t>(b[j * 8 + at.col]);
        }
        if (in.sat) {
          sum = std::clamp<std::int64_t>(sum, std::numeric_limits<std::int32_t>::min(),
                                         std::numeric_limits<std::int32_t>::max());
        }
        d[lane] = static_cast<std::uint32_t>(static_cast<std::uint64_t>(sum));
      } else {
        double sum = f32_of(acc[lane]);
        for (std::uint32_t j = 0; j < k; ++j) sum += a[at.row * k + j] * b[j * 8 + at.col];
        const auto f = static_cast<float>(sum);
        d[lane] = std::isnan(f) ? kCanonicalNanF32 : static_cast<std::uint32_t>(bits_of(f));
      }
    }
  }
  for (std::uint32_t i = 0; i < 4; ++i) {
    std::uint64_t* d = c.row(in.dst[i]);
    for (std::uint32_t lane = 0; lane < kLanes; ++lane) d[lane] = out[i][lane];
  }
}

// The shared-memory address lane `lane` gives: its register src[0] plus the constant offset.
std::int64_t row_address(Ctx& c, const DInstr& in, std::uint32_t lane) {
  return static_cast<std::int64_t>(static_cast<std::uint32_t>(c.row(in.src[0])[lane])) + in.offset;
}

// The 16-bit element (row, col) of an 8×8 matrix whose rows are `rows`.
std::uint16_t element(const std::array<const std::byte*, 8>& rows, std::uint32_t row,
                      std::uint32_t col) {
  std::uint16_t v;
  std::memcpy(&v, rows[row] + 2 * col, 2);
  return v;
}

// ldmatrix: lane 8i + r gives row r of matrix i (16 bytes, 16-byte aligned); lane l receives row
// l/4's elements 2(l%4), 2(l%4)+1 of each matrix, or with .trans column l/4's.
template <bool kTrans>
void ldmatrix(Ctx& c, const DInstr& in, std::uint32_t exec) {
  check_whole_warp(c, in, exec);
  const std::uint32_t matrices = in.vec;
  std::array<std::array<std::uint32_t, kLanes>, 4> got{};
  for (std::uint32_t m = 0; m < matrices; ++m) {
    std::array<const std::byte*, 8> rows{};
    for (std::uint32_t r = 0; r < 8; ++r) {
      const std::uint32_t giver = 8 * m + r;
      rows[r] = shared_bytes(c, c, in, giver, row_address(c, in, giver), 16, false);
    }
    for (std::uint32_t lane = 0; lane < kLanes; ++lane) {
      const std::uint32_t g = group_of(lane), q = thread_in_group(lane);
      const std::uint16_t lo = kTrans ? element(rows, 2 * q, g) : element(rows, g, 2 * q);
      const std::uint16_t hi = kTrans ? element(rows, 2 * q + 1, g) : element(rows, g, 2 * q + 1);
      got[m][lane] = lo | (std::uint32_t{hi} << 16);
    }
  }
  for (std::uint32_t m = 0; m < matrices; ++m) {
    std::uint64_t* d = c.row(in.dst[m]);
    for (std::uint32_t lane = 0; lane < kLanes; ++lane) d[lane] = got[m][lane];
  }
}

// stmatrix: ldmatrix's inverse; src[0] is the row address, src[1 + i] matrix i's register.
template <bool kTrans>
void stmatrix(Ctx& c, const DInstr& in, std::uint32_t exec) {
  check_whole_warp(c, in, exec);
  for (std::uint32_t m = 0; m < in.vec; ++m) {
    const std::uint64_t* v = c.row(in.src[1 + m]);
    // The 16-bit element (row, col) of matrix m: the half of the register of the lane holding it.
    const auto value = [&](std::uint32_t row, std::uint32_t col) {
      const std::uint32_t lane = kTrans ? 4 * col + row / 2 : 4 * row + col / 2;
      const std::uint32_t half = kTrans ? row % 2 : col % 2;
      return static_cast<std::uint16_t>(static_cast<std::uint32_t>(v[lane]) >> (16 * half));
    };
    for (std::uint32_t r = 0; r < 8; ++r) {
      const std::uint32_t giver = 8 * m + r;
      std::byte* row = shared_bytes(c, c, in, giver, row_address(c, in, giver), 16, true);
      for (std::uint32_t col = 0; col < 8; ++col) {
        const std::uint16_t e = value(r, col);
        std::memcpy(row + 2 * col, &e, 2);
      }
    }
  }
}

template <MmaInput A>
Handler mma_pair(MmaInput b) {
  if constexpr (A == MmaInput::E4M3 || A == MmaInput::E5M2) {
    return b == MmaInput::E4M3 ? &mma<A, MmaInput::E4M3> : &mma<A, MmaInput::E5M2>;
  } else if constexpr (A == MmaInput::S8 || A == MmaInput::U8) {
    return b == MmaInput::S8 ? &mma<A, MmaInput::S8> : &mma<A, MmaInput::U8>;
  } else {
    return &mma<A, A>;
  }
}

}  // namespace

// The semantics the instruction table names (A and B of one family: the table's check).
Handler select_mma(const Instr& in) {
  switch (in.mma_a) {
    case MmaInput::F16:
      return mma_pair<MmaInput::F16>(in.mma_b);
    case MmaInput::BF16:
      return mma_pair<MmaInput::BF16>(in.mma_b);
    case MmaInput::TF32:
      return mma_pair<MmaInput::TF32>(in.mma_b);
    case MmaInput::E4M3:
      return mma_pair<MmaInput::E4M3>(in.mma_b);
    case MmaInput::E5M2:
      return mma_pair<MmaInput::E5M2>(in.mma_b);
    case MmaInput::S8:
      return mma_pair<MmaInput::S8>(in.mma_b);
    case MmaInput::U8:
      return mma_pair<MmaInput::U8>(in.mma_b);
  }
  return nullptr;
}
Handler select_ldmatrix(const Instr& in) {
  return in.transpose ? &ldmatrix<true> : &ldmatrix<false>;
}
Handler select_stmatrix(const Instr& in) {
  return in.transpose ? &stmatrix<true> : &stmatrix<false>;
}

}  // namespace ptxdsl::detail
