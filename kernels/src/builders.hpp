#pragma once

#include <string>

#include "heuristics.hpp"
#include "ptxdsl/kernels/norm.hpp"

// The kernel builders of the family; build_norm (build.cpp) picks and runs them.
namespace ptxdsl::kernels::detail {

// "ln_fwd_f16_wf32_n4096"; `step` names a second entry ("dwdb").
std::string entry_name(const NormSpec& spec, std::string_view step = {});

// Layer norm or RMS norm forward: one launch.
LaunchStep build_forward(Module& m, const NormSpec& spec, const Plan& plan);
// Layer norm or RMS norm backward: dx plus per-CTA partial rows of dw (and db), on a persistent
// grid.
LaunchStep build_backward(Module& m, const NormSpec& spec, const Plan& plan);
// Sums the partial rows in a fixed order into dw (and db).
LaunchStep build_column_reduce(Module& m, const NormSpec& spec, const Plan& plan);

// f32 elements between two partial rows in the workspace: the width rounded up to 16 bytes.
std::uint32_t partial_pitch(std::uint32_t width);

}  // namespace ptxdsl::kernels::detail
