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

Reg<F32> sigmoid(Kernel& k, Reg<F32> x, bool ftz) {
  const MathMode exact{.ftz = ftz};
  const Reg<F32> e = exp_approx(k, k.neg(x, exact), ftz);
  return k.rcp(k.add(e, 1.0f, exact), ftz ? kApproxFtz : kApprox);
}

Reg<F32> silu(Kernel& k, Reg<F32> x, bool ftz) {
  return k.mul(x, sigmoid(k, x, ftz), MathMode{.ftz = ftz});
}

Reg<F32> gelu(Kernel& k, Reg<F32> x, bool ftz) {
  // 2·sqrt(2/pi) and 2·sqrt(2/pi)·0.044715: u = x·(c1 + c3·x²).
  constexpr float kLinear = 1.5957691216057308f;
  constexpr float kCubic = 0.0713548162726f;
  const MathMode exact{.ftz = ftz};
  const Reg<F32> x2 = k.mul(x, x, exact);
  const Reg<F32> u =
      k.mul(x, k.fma(x2, kCubic, kLinear, MathMode{.rounding = Rounding::Rn, .ftz = ftz}), exact);
  return k.mul(x, sigmoid(k, u, ftz), exact);
}

}  // namespace ptxdsl
