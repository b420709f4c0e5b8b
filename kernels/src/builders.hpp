#pragma once

#include <optional>
#include <string>
#include <vector>

#include "element_io.hpp"
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

// Column sums split over `slices` groups of `threads` threads, each thread summing `per_thread`
// consecutive columns of every tensor: sums[tensor][element].
struct SliceSums {
  SharedPtr<F32> table;  // slices × threads × per_thread floats per tensor
  Reg<U32> tid, slice;   // tid = slice · threads + the thread's place in its slice
  std::uint32_t threads, slices, per_thread;
  std::vector<std::vector<Reg<F32>>> sums;
  std::optional<Pred> holds;  // the threads that hold sums (all when unset)
};
// The last step of a column sum: the slices meet in shared memory and slice 0 adds them in slice
// order (the same bits every run), storing `outs[t]` at `column` as `dtype` where `column_ok`.
void store_slice_sums(Kernel& k, const SliceSums& s, const std::vector<GlobalDPtr>& outs,
                      Reg<U32> column, Pred column_ok, DType dtype);

// f32 elements between two partial rows in the workspace: the width rounded up to 16 bytes.
std::uint32_t partial_pitch(std::uint32_t width);
// Columns of a partial row that the backward writes by whole warps: 0, or the complete chunks
// where each lane holds 8 floats. In each block of 256 (a warp's 32 lanes × 8) the lane's first 4
// sit at 4·lane and its last 4 at 128 + 4·lane, so that every store instruction covers 512
// contiguous bytes; in lane order, each would write half of 32 sectors (docs/performance.md has
// what that cost).
std::uint32_t warp_blocked_columns(const Plan& plan);
// The column whose sums sit at `position` of a partial row, `blocked` = warp_blocked_columns.
Reg<U32> partial_column(Kernel& k, Reg<U32> position, std::uint32_t blocked, std::uint32_t width);

}  // namespace ptxdsl::kernels::detail
