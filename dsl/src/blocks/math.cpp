#include "ptxdsl/dsl/blocks/math.hpp"

#include <numbers>

namespace ptxdsl {

Reg<F32> exp_approx(Kernel& k, Reg<F32> x, bool ftz) {
  const MathMode mode = ftz ? kApproxFtz : kApprox;
  return k.ex2(k.mul(x, std::numbers::log2e_v<float>, MathMode{.ftz = ftz}), mode);
}

Reg<F32> log_approx(Kernel& k, Reg<F32> x, bool ftz) {
  const MathMode mode = ftz ? kApproxFtz : kApprox;
  return k.mul(k.lg2(x, mode), std::numbers::ln2_v<float>, MathMode{.ftz = ftz});
}

Reg<F32> rsqrt_rn(Kernel& k, Reg<F32> x) {
  return k.rcp(k.sqrt(x));
}

}  // namespace ptxdsl
