#pragma once

#include <bit>
#include <cstdint>

#include "../instruction_table.hpp"
#include "ptxdsl/dsl/half.hpp"
#include "ptxdsl/dsl/narrow_float.hpp"

// The register fragments one warp's tensor-core instructions share: mma.sync's A fragment is
// also each warp's 16 rows of a wgmma.mma_async A in registers. The maps are the PTX ISA's
// ("Matrix Fragments for mma.m16n8k16" and its siblings).
namespace ptxdsl::detail {

// A matrix element's place: row and column.
struct Cell {
  std::uint32_t row = 0, col = 0;
};

// groupID and threadID_in_group of the ISA's fragment tables.
constexpr std::uint32_t group_of(std::uint32_t lane) {
  return lane >> 2;
}
constexpr std::uint32_t thread_in_group(std::uint32_t lane) {
  return lane & 3;
}

constexpr std::uint32_t element_bits(MmaInput t) {
  return mma_form(t).element_bits();
}

// Element i of lane `lane`'s A fragment (16×K): the i-th element of its registers, low bits
// first (register i / (32 / bits)).
constexpr Cell a_cell(MmaInput t, std::uint32_t lane, std::uint32_t i) {
  const std::uint32_t g = group_of(lane), q = thread_in_group(lane);
  switch (element_bits(t)) {
    case 16:  // a0..a7: rows g, g+8, g, g+8 by register; columns 2q, 2q+1, then + 8
      return {g + 8 * ((i >> 1) & 1), 2 * q + (i & 1) + (i >= 4 ? 8 : 0)};
    case 32:  // a0..a3: rows g, g+8, g, g+8; columns q, q, q+4, q+4
      return {g + 8 * (i & 1), q + (i >= 2 ? 4 : 0)};
    default:  // a0..a15: rows g, g+8, g, g+8 by register; columns 4q..4q+3, then + 16
      return {g + 8 * ((i >> 2) & 1), 4 * q + (i & 3) + (i >= 8 ? 16 : 0)};
  }
}

// The value of one A or B element's bits. tf32: the tensor core reads the sign, the exponent and
// the top 10 mantissa bits of the f32 pattern; the low 13 are not read.
template <MmaInput T>
double element_value(std::uint32_t bits) {
  if constexpr (T == MmaInput::F16) return f16_bits_to_f32(static_cast<std::uint16_t>(bits));
  if constexpr (T == MmaInput::BF16) return bf16_bits_to_f32(static_cast<std::uint16_t>(bits));
  if constexpr (T == MmaInput::TF32) return std::bit_cast<float>(bits & ~0x1FFFu);
  if constexpr (T == MmaInput::E4M3) return e4m3_bits_to_f32(static_cast<std::uint8_t>(bits));
  if constexpr (T == MmaInput::E5M2) return e5m2_bits_to_f32(static_cast<std::uint8_t>(bits));
  if constexpr (T == MmaInput::S8) return static_cast<std::int8_t>(bits);
  if constexpr (T == MmaInput::U8) return static_cast<std::uint8_t>(bits);
}

}  // namespace ptxdsl::detail
