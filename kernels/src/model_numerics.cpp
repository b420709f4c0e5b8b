#include "model_numerics.hpp"

namespace ptxdsl::kernels::detail {

Values applied_weights(Kernel& k, const NormSpec& spec, Values w) {
  if (spec.weight_offset == 0.0f) return w;
  for (Reg<F32>& v : w) v = k.add(v, spec.weight_offset);
  return w;
}

}  // namespace ptxdsl::kernels::detail
