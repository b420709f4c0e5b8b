#pragma once

#include <optional>

#include "row_map.hpp"

// Per-thread pieces of the row statistics; the group reduction (ptxdsl::group_reduce) completes
// them across the threads of a row.
namespace ptxdsl::kernels::detail {

// Σ v, pairwise (short dependency chains).
Reg<F32> tree_sum(Kernel& k, const Values& v);
// Σ v², pairwise.
Reg<F32> tree_sum_squares(Kernel& k, const Values& v);
// Σ (v − mean)² over chunk j, elements past the width excluded (they hold zeros, not the mean).
Reg<F32> centered_squares(Kernel& k, const RowLanes& lanes, std::uint32_t j, const Values& v,
                          Reg<F32> mean);
// Σ (v − shift) and Σ (v − shift)² over chunk j, elements past the width excluded.
struct ShiftedSums {
  Reg<F32> sum, squares;
};
ShiftedSums shifted_sums(Kernel& k, const RowLanes& lanes, std::uint32_t j, const Values& v,
                         Reg<F32> shift);

// A running f32 sum in one register, added to in place (so it also sums across a run-time loop).
class RunningSum {
 public:
  explicit RunningSum(Kernel& k) : sum_(k.mov<F32>(0.0f)) {}
  void add(Kernel& k, Reg<F32> term) { k.add(sum_, sum_, term); }
  Reg<F32> value() const { return sum_; }

 private:
  Reg<F32> sum_;
};

// 1 / sqrt(mean_square + eps), by rsqrt_rn (<ptxdsl/dsl/blocks/math.hpp>).
Reg<F32> reciprocal_std(Kernel& k, Reg<F32> mean_square, Reg<F32> eps);

}  // namespace ptxdsl::kernels::detail
