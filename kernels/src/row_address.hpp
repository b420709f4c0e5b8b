#pragma once

#include "element_io.hpp"

// Where a row of x, y, dy, dx, residual, h or dh starts: r·stride, or with row groups (per-head
// norms on a fused QKV buffer) (r / row_groups)·stride + (r % row_groups)·group_stride. The one
// place the builders turn a row index into an address.
namespace ptxdsl::kernels::detail {

GlobalDPtr row_start(Kernel& k, const NormSpec& spec, GlobalDPtr p, Reg<U32> row, Reg<U32> stride);

}  // namespace ptxdsl::kernels::detail
