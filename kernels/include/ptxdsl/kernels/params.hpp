#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "ptxdsl/dsl/contract.hpp"

// The norm kernels' parameters, each defined once: its name in the PTX, and whether it is a
// pointer or which scalar. The builders declare parameters by it; a built step lists its
// parameters' NormArg in the contract's order (LaunchStep::args), by which a host binds them.
namespace ptxdsl::kernels {

// Pointers first (x, ..., row_counter), then the scalars.
enum class NormArg : std::uint8_t {
  X,
  W,
  B,
  Y,
  Mean,
  Rstd,
  Dy,
  Dx,
  Dw,
  Db,
  Residual,
  H,
  Dh,
  PartialDw,
  PartialDb,
  YScale,        // a quantized y's scales, written (QuantScale PerToken, Group128)
  QuantScaleIn,  // the caller's per-tensor scale, read (QuantScale Static)
  RowCounter,
  Batch,
  Stride,
  PartialRows,
  Eps,
};
inline constexpr int kNormArgCount = static_cast<int>(NormArg::Eps) + 1;
inline constexpr int kNormPointerArgs = static_cast<int>(NormArg::RowCounter) + 1;

std::string_view arg_name(NormArg a);  // "x", "partial_dw", "batch", ...
inline bool arg_is_pointer(NormArg a) {
  return static_cast<int>(a) < kNormPointerArgs;
}
// A scalar's type (eps: f32, the rest u32); pointers: u64.
ScalarType arg_type(NormArg a);
// Each parameter of `contract` as a NormArg, in order; throws ptxdsl::Error naming a parameter
// that is none of them, or one whose type is not the argument's.
std::vector<NormArg> args_of(const KernelContract& contract);

}  // namespace ptxdsl::kernels
