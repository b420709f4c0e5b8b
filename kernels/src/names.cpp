#include <fmt/format.h>

#include "ptxdsl/dsl/error.hpp"
#include "ptxdsl/kernels/norm.hpp"

namespace ptxdsl::kernels {

std::string_view kind_name(NormKind k) {
  switch (k) {
    case NormKind::LayerNormFwd:
      return "ln_fwd";
    case NormKind::LayerNormBwd:
      return "ln_bwd";
    case NormKind::RmsNormFwd:
      return "rms_fwd";
    case NormKind::RmsNormBwd:
      return "rms_bwd";
  }
  return "?";
}

bool is_backward(NormKind k) {
  return k == NormKind::LayerNormBwd || k == NormKind::RmsNormBwd;
}

bool is_layer_norm(NormKind k) {
  return k == NormKind::LayerNormFwd || k == NormKind::LayerNormBwd;
}

NormKind parse_kind(std::string_view name) {
  for (NormKind k : {NormKind::LayerNormFwd, NormKind::LayerNormBwd, NormKind::RmsNormFwd,
                     NormKind::RmsNormBwd}) {
    if (kind_name(k) == name) return k;
  }
  throw Error(
      fmt::format("kernel must be one of ln_fwd, ln_bwd, rms_fwd, rms_bwd, got '{}'", name));
}

std::string_view dtype_name(DType d) {
  switch (d) {
    case DType::F32:
      return "f32";
    case DType::F16:
      return "f16";
    case DType::BF16:
      return "bf16";
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  for (DType d : {DType::F32, DType::F16, DType::BF16}) {
    if (dtype_name(d) == name) return d;
  }
  throw Error(fmt::format("dtype must be one of f32, f16, bf16, got '{}'", name));
}

int dtype_bytes(DType d) {
  return d == DType::F32 ? 4 : 2;
}

}  // namespace ptxdsl::kernels
