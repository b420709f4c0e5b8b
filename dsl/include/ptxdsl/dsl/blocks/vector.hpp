#pragma once

#include <cstdint>

#include "ptxdsl/dsl/types.hpp"

// Vector widths as build-time values: how many elements one access moves (1, 2, 4 or 8, at most
// 16 bytes), chosen by a builder from the data it is built for rather than fixed by a template
// argument. element_io and row_map take the width as a plain number.
namespace ptxdsl {

inline constexpr std::uint32_t kMaxVectorBytes = 16;

// The widest vector of `t`: 16 bytes' worth (f32 4, f16 and bf16 8).
std::uint32_t max_vector_elems(ScalarType t);
// Throws ptxdsl::Error unless `elems` is 1, 2, 4 or 8 and at most 16 bytes of `t`.
void check_vector_elems(ScalarType t, std::uint32_t elems);
// Whether accesses of `elems` elements of `t` at addresses whose OR is `address_bits` are aligned
// (each access of at most 16 bytes on its own size).
bool vector_aligned(ScalarType t, std::uint32_t elems, std::uint64_t address_bits);
// The widest vector for rows of `stride` elements of `t` starting at addresses whose OR is
// `address_bits` (0: aligned allocations, as the driver returns them): every row start aligned.
std::uint32_t vector_elems_for(ScalarType t, std::uint32_t stride, std::uint64_t address_bits = 0);

}  // namespace ptxdsl
