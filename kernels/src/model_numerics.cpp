#include "model_numerics.hpp"

#include <algorithm>

namespace ptxdsl::kernels::detail {
namespace {

// To `d` and back, rounding to nearest even (pairs by one cvt.rn.{f16,bf16}x2.f32).
Values rounded_to(Kernel& k, const Values& v, DType d) {
  return decode(k, encode(k, v, element_type(d)));
}

}  // namespace

Values applied_weights(Kernel& k, const NormSpec& spec, Values w) {
  if (spec.weight_offset == 0.0f) return w;
  for (Reg<F32>& v : w) v = k.add(v, spec.weight_offset);
  return w;
}

Values cast_xhat(Kernel& k, const NormSpec& spec, Values xhat) {
  const std::optional<DType> d = rounded_xhat(spec);
  return d ? rounded_to(k, xhat, *d) : xhat;
}

void for_each_xhat(Kernel& k, const NormSpec& spec, std::size_t count,
                   const std::function<Reg<F32>(std::size_t)>& normalized,
                   const std::function<void(std::size_t, Reg<F32>)>& use) {
  const std::size_t group = rounded_xhat(spec) ? 2 : 1;
  for (std::size_t first = 0; first < count; first += group) {
    Values xhat;
    for (std::size_t e = first; e < std::min(first + group, count); ++e) {
      xhat.push_back(normalized(e));
    }
    xhat = cast_xhat(k, spec, std::move(xhat));
    for (std::size_t i = 0; i < xhat.size(); ++i) use(first + i, xhat[i]);
  }
}

Values normalized_h(Kernel& k, const NormSpec& spec, Values h) {
  return normalizes_stored_h(spec) ? rounded_to(k, h, residual_dtype(spec)) : h;
}

}  // namespace ptxdsl::kernels::detail
