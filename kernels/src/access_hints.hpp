#pragma once

#include "heuristics.hpp"
#include "ptxdsl/dsl.hpp"

// The cache hints of a norm kernel's global accesses, by role: the rows it streams through (x and
// dy read, read again where the plan keeps chunks nowhere, y and dx written) and the weights every
// row reads (w, b). With plan.l2_stream, made once at the top of the kernel (two createpolicy
// instructions): the weights evict_last; the row loads evict_first, except a read that a later
// pass repeats, evict_last until then (torch.compile's pair). With plan.l1_rereads, rows read
// again also carry L1 eviction priorities: evict_last until the last read, evict_first then.
// Otherwise the caller's hints.
namespace ptxdsl::kernels::detail {

struct AccessHints {
  MemHints row_loads, row_stores, weight_loads;
  // Chunks placed nowhere, on their last read (default: row_loads). A read between the first and
  // the last keeps row_loads.
  MemHints row_rereads;
};

AccessHints access_hints(Kernel& k, const Plan& plan, MemHints row_loads, MemHints row_stores,
                         MemHints weight_loads);

}  // namespace ptxdsl::kernels::detail
