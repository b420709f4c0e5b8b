#pragma once

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
