#pragma once

#include <algorithm>

#include "ptxdsl/kernels/norm.hpp"

// A spec with weights in the input's dtype and every knob left to the heuristics.
inline ptxdsl::kernels::NormSpec spec_of(ptxdsl::kernels::NormKind kind,
                                         ptxdsl::kernels::DType dtype, std::uint32_t width) {
  ptxdsl::kernels::NormSpec s;
  s.kind = kind;
  s.dtype = dtype;
  s.weight_dtype = dtype;
  s.width = width;
  return s;
}

// The same with weights in `weights`, planned for `device` in its own arch (at the PTX version
// that arch needs at least).
inline ptxdsl::kernels::NormSpec spec_for_device(ptxdsl::kernels::NormKind kind,
                                                 ptxdsl::kernels::DType dtype,
                                                 ptxdsl::kernels::DType weights,
                                                 std::uint32_t width,
                                                 const ptxdsl::DeviceModel& device) {
  ptxdsl::kernels::NormSpec s = spec_of(kind, dtype, width);
  s.weight_dtype = weights;
  s.device = device;
  s.arch = device.arch();
  s.ptx_version = std::max(s.ptx_version, ptxdsl::min_ptx_version(s.arch));
  return s;
}
