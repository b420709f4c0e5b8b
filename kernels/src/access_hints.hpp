#pragma once

#include "heuristics.hpp"
#include "ptxdsl/dsl.hpp"

// The cache hints of a norm kernel's global accesses, by role: the rows it streams through (x and
// dy read, y and dx written) and the weights every row reads again (w, b). With plan.l2_stream
// the rows carry an L2 evict_first policy and the weights an evict_last one, made once at the top
// of the kernel (two createpolicy instructions); otherwise the hints are the caller's as given.
namespace ptxdsl::kernels::detail {

struct AccessHints {
  MemHints row_loads, row_stores, weight_loads;
};

AccessHints access_hints(Kernel& k, const Plan& plan, AccessHints base);

}  // namespace ptxdsl::kernels::detail
