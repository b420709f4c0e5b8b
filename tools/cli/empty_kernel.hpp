#pragma once

#include "ptxdsl/runtime/module.hpp"

// A kernel that does nothing, one CTA of kEmptyKernelThreads: its launch-to-finish time is the
// floor of BENCHMARKS.md's target for cases that move ≤ 16 MB.
namespace ptxdsl::cli {

inline constexpr unsigned kEmptyKernelThreads = 32;

runtime::Function empty_kernel(const runtime::Context& ctx);

}  // namespace ptxdsl::cli
