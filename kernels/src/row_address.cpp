#include "row_address.hpp"

namespace ptxdsl::kernels::detail {

GlobalDPtr row_start(Kernel& k, const NormSpec& spec, GlobalDPtr p, Reg<U32> row, Reg<U32> stride) {
  if (spec.row_groups == 1) return row_of(k, p, row, stride);
  // The group count is a build-time constant: ptxas divides by multiplying.
  const Reg<U32> group = k.div(row, spec.row_groups);
  const Reg<U32> in_group = k.sub(row, k.mul(group, spec.row_groups));
  return at(k, row_of(k, p, group, stride), k.mul(in_group, spec.group_stride));
}

}  // namespace ptxdsl::kernels::detail
