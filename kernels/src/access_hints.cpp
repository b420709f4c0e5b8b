#include "access_hints.hpp"

namespace ptxdsl::kernels::detail {

AccessHints access_hints(Kernel& k, const Plan& plan, AccessHints base) {
  if (!plan.l2_stream) return base;
  const Reg<B64> stream = k.create_policy(L2Evict::First);
  const Reg<B64> keep = k.create_policy(L2Evict::Last);
  base.row_loads.l2_policy = stream;
  base.row_stores.l2_policy = stream;
  base.weight_loads.l2_policy = keep;
  return base;
}

}  // namespace ptxdsl::kernels::detail
