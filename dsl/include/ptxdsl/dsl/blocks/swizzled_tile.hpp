#pragma once

#include <cstdint>

#include "ptxdsl/dsl/mma.hpp"
#include "ptxdsl/dsl/tensor_map.hpp"
#include "ptxdsl/dsl/types.hpp"

// A K-major operand tile as TMA writes it with the 128-byte swizzle and wgmma reads it: `rows`
// rows (M or N) of 128 bytes of K (64 bf16), 8 rows a 1024-byte pattern, the tile's base on a
// 1024-byte boundary. One tensor map box fills it; each wgmma K step reads a 16- or 32-byte column
// of chunks of it through a descriptor.
namespace ptxdsl {

struct SwizzledTile {
  static constexpr std::uint32_t kRowBytes = 128;
  static constexpr std::uint32_t kAlign = 1024;  // the swizzle's 8-row atom

  std::uint32_t rows = 64;
  ScalarType element = ScalarType::BF16;

  constexpr std::uint32_t bytes() const { return rows * kRowBytes; }
  // Elements of K a row holds.
  constexpr std::uint32_t depth() const {
    return kRowBytes / static_cast<std::uint32_t>(size_bytes(element));
  }
  // The descriptor's layout: one 16-byte chunk between core matrices along K, 1024 bytes (8 rows)
  // between them along M or N.
  static constexpr MatrixLayout layout() { return {16, 8 * kRowBytes, Swizzle::B128}; }
  // The byte offset of the K slice that starts at element `k` (within the row: a multiple of 16
  // bytes, the swizzle applied by the hardware on the whole address); of row `row` (a multiple of
  // 8: whole patterns).
  constexpr std::uint32_t k_offset(std::uint32_t k) const {
    return k * static_cast<std::uint32_t>(size_bytes(element));
  }
  static constexpr std::uint32_t row_offset(std::uint32_t row) { return row * kRowBytes; }

  // The tensor map of a row-major matrix of `matrix_rows` × `cols` elements whose box is this
  // tile (global_address left for the caller): rows past the matrix and columns past `cols` read
  // as zero.
  TensorMapSpec map(std::uint64_t matrix_rows, std::uint64_t cols) const {
    return {.global_address = 0,
            .element = element,
            .dims = {cols, matrix_rows},
            .strides_bytes = {cols * static_cast<std::uint64_t>(size_bytes(element))},
            .box = {depth(), rows},
            .swizzle = Swizzle::B128,
            .nan_fill = false};
  }
};

}  // namespace ptxdsl
