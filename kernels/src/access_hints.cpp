#include "access_hints.hpp"

#include <algorithm>

namespace ptxdsl::kernels::detail {

AccessHints access_hints(Kernel& k, const Plan& plan, MemHints row_loads, MemHints row_stores,
                         MemHints weight_loads) {
  if (!plan.row_nc) row_loads.nc = false;
  AccessHints base{row_loads, row_stores, weight_loads, row_loads};
  const bool read_again = std::count(plan.data.begin(), plan.data.end(), Place::Global) > 0;
  if (plan.l1_rereads && read_again) {
    base.row_loads.eviction = Eviction::L1EvictLast;
    base.row_rereads.eviction = Eviction::L1EvictFirst;
  }
  if (!plan.l2_stream) return base;
  const Reg<B64> stream = k.create_policy(L2Evict::First);
  const Reg<B64> keep = k.create_policy(L2Evict::Last);
  base.row_loads.l2_policy = read_again ? keep : stream;
  base.row_rereads.l2_policy = stream;
  base.weight_loads.l2_policy = keep;
  return base;
}

}  // namespace ptxdsl::kernels::detail
