#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ptxdsl/dsl/mma.hpp"
#include "ptxdsl/dsl/reg.hpp"
#include "ptxdsl/dsl/types.hpp"

// Tensor maps: what the TMA unit's tensor copies (cp.async.bulk.tensor) read a global tensor by.
// A kernel takes one as a 128-byte parameter (Kernel::param_tensor_map); on a GPU its bytes are a
// CUtensorMap that cuTensorMapEncodeTiled writes, on the CPU executor the bytes
// executor_tensor_map encodes from the same description.
namespace ptxdsl {

// A tensor map parameter's generic address in a register: what the copies name.
struct TensorMap {
  Reg<U64> address;
};

// The box the tensor copies move, by the tiled mode of cuTensorMapEncodeTiled: a tensor of `rank`
// (1-5) dimensions, innermost first, at `global_address` (16-byte aligned); `dims` elements along
// each, `strides_bytes` between consecutive indices of dimensions 1... (multiples of 16, rank - 1
// of them; dimension 0 is dense); a box of `box` elements (1-256 each; the innermost
// box[0] · element bytes a multiple of 16, equal to the swizzle's width where there is one),
// written into shared memory densely, innermost first, then swizzled as wgmma reads it
// (swizzled_address on the whole shared address). Elements outside the tensor read as zero or,
// with `nan_fill` (float elements only), NaN, and are not written by a store.
struct TensorMapSpec {
  std::uint64_t global_address = 0;
  ScalarType element = ScalarType::BF16;
  std::vector<std::uint64_t> dims;
  std::vector<std::uint64_t> strides_bytes;
  std::vector<std::uint32_t> box;
  Swizzle swizzle = Swizzle::None;
  bool nan_fill = false;
};

inline constexpr std::uint32_t kTensorMapMaxRank = 5;
inline constexpr std::uint32_t kTensorMapMaxBox = 256;

// Throws naming the first value of `spec` the tiled mode does not allow (what executor_tensor_map
// and the runtime's TensorMap both check before encoding).
void check_tensor_map(const TensorMapSpec& spec);

// The 128 bytes the CPU executor reads as the tensor map `spec` describes (not a CUtensorMap).
// Throws naming a value the tiled mode does not allow.
std::array<std::byte, 128> executor_tensor_map(const TensorMapSpec& spec);

}  // namespace ptxdsl
