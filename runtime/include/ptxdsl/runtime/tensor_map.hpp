#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ptxdsl/dsl/contract.hpp"
#include "ptxdsl/dsl/tensor_map.hpp"

// Tensor maps on a GPU: the CUtensorMap a kernel's tensor map parameter (Kernel::param_tensor_map)
// takes, encoded by the driver's cuTensorMapEncodeTiled from the description the CPU executor
// models (ptxdsl::TensorMapSpec), so that one description serves both.
namespace ptxdsl::runtime {

// How far past each box the L2 cache fetches (CU_TENSOR_MAP_L2_PROMOTION_*).
enum class L2Promotion : std::uint8_t { None, B64, B128, B256 };
// Interleaved layouts (NC/8HWC8, NC/16HWC16: CU_TENSOR_MAP_INTERLEAVE_*): the innermost dimension
// is a 16- or 32-byte unit. The executor does not model them; they are for GPU-only kernels.
enum class Interleave : std::uint8_t { None, B16, B32 };

// What the tiled mode takes beyond the spec.
struct TensorMapOptions {
  L2Promotion l2_promotion = L2Promotion::None;
  Interleave interleave = Interleave::None;
  // Elements between the box's consecutive elements along each dimension, each in [1, 8]; empty:
  // 1 along every dimension (a dense box, as the executor models it).
  std::vector<std::uint32_t> element_strides{};
};

// The tensor map `spec` describes (its global_address a device address), as a kernel parameter:
// 128 bytes (a 64-byte aligned .param), passed to `launch` like a buffer (the contract's tensor map
// parameter takes only a TensorMap, and a pointer parameter never takes one).
class TensorMap {
 public:
  // Checks every argument (check_tensor_map_arguments) before the driver sees them, then encodes;
  // the driver's refusal is reported with the arguments. Needs the driver, not a context.
  static TensorMap tiled(const TensorMapSpec& spec, const TensorMapOptions& options = {});

  const TensorMapSpec& spec() const { return spec_; }
  const TensorMapOptions& options() const { return options_; }
  // The CUtensorMap's bytes, what the kernel parameter receives.
  const std::byte* bytes() const { return bytes_.data(); }

 private:
  TensorMap() = default;

  // As cuda.h aligns CUtensorMap (64 bytes before CUDA 13, 128 since), which the encoding writes.
  alignas(128) std::array<std::byte, kTensorMapBytes> bytes_{};
  TensorMapSpec spec_;
  TensorMapOptions options_;
};

// Throws ptxdsl::Error naming the first argument cuTensorMapEncodeTiled's tiled mode does not
// allow, and what it allows: the spec's rules (check_tensor_map: rank 1-5, dimensions in [1,
// 2^32], strides multiples of 16 below 2^40, boxes in [1, 256], the inner box a multiple of 16
// bytes equal to the swizzle's width, the address 16-byte aligned, a NaN fill of floats only), an
// element type the driver has, element strides in [1, 8], and an interleave's rank (3-5), swizzle
// (none or 32 bytes) and alignment (32 bytes for the 32-byte one). No driver needed.
void check_tensor_map_arguments(const TensorMapSpec& spec, const TensorMapOptions& options);

// "bf16 [520, 1000] strides [1040] box [64, 128] swizzle 128B l2 none oob zero at 0x7f...": what
// an error reports of the arguments.
std::string describe(const TensorMapSpec& spec, const TensorMapOptions& options);

}  // namespace ptxdsl::runtime
