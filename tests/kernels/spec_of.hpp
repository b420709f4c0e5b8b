#pragma once

#include <algorithm>
#include <vector>

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

// Every variant of `base`'s kind (affine, residual add, backward outputs) other than the default,
// on `base`'s other fields: what the variant tests cover at each of their shapes.
inline std::vector<ptxdsl::kernels::NormSpec> variants_of(const ptxdsl::kernels::NormSpec& base) {
  using namespace ptxdsl::kernels;
  const bool backward = is_backward(base.kind);
  std::vector<NormSpec> out;
  for (Residual r : {Residual::None, Residual::Add, Residual::AddF32}) {
    if (backward && r == Residual::AddF32) continue;
    for (Affine a : {Affine::Full, Affine::Weight, Affine::None}) {
      if (a == Affine::Weight && !is_layer_norm(base.kind)) continue;
      for (Outputs o : {Outputs::All, Outputs::Dx}) {
        // Without weights there is no dw to leave out.
        if (o == Outputs::Dx && (!backward || a == Affine::None)) continue;
        if (r == Residual::None && a == Affine::Full && o == Outputs::All) continue;
        NormSpec s = base;
        s.residual = r;
        s.affine = a;
        s.outputs = o;
        out.push_back(s);
      }
    }
  }
  return out;
}
