#pragma once

#include "ptxdsl/dsl/kernel.hpp"

// Math helpers over the special-function unit, with their error (docs/dsl.md, "Building
// blocks"). `approx` instructions (ex2, lg2, rsqrt, rcp/sqrt/div .approx) are the hardware's fast
// approximations, not correctly rounded; `.ftz` flushes subnormal inputs and results to zero of
// the same sign. Without `ftz` these helpers keep subnormals.
namespace ptxdsl {

// e^x as 2^(x·log2 e): mul.f32 then ex2.approx.f32. Within 2 + floor(|1.173·x|) ulp (CUDA's
// __expf, the same two instructions): the rounding of x·log2 e grows with |x|. For softmax's
// x − max ≤ 0, exp_approx(−20) is within about 25 ulp; −inf gives +0.
Reg<F32> exp_approx(Kernel& k, Reg<F32> x, bool ftz = false);
// ln x as log2(x)·ln 2: lg2.approx.f32 then mul.f32. Absolute error within 2^-21.4 for x in
// [0.5, 2], 3 ulp elsewhere (CUDA's __logf); 0 gives −inf, negatives NaN.
Reg<F32> log_approx(Kernel& k, Reg<F32> x, bool ftz = false);
// 1 / sqrt(x) from sqrt.rn and rcp.rn: each step correctly rounded, so the result is within
// about one ulp (rsqrt.approx alone is not, for f32 outputs held to 1e-5).
Reg<F32> rsqrt_rn(Kernel& k, Reg<F32> x);
// The logistic function 1 / (1 + e^-x): exp_approx(-x), add.f32, rcp.approx.f32. Its relative
// error is exp_approx's at -x plus 2 ulp (e^-x / (1 + e^-x) < 1 scales the first); 0 past
// x = -88 (e^-x overflows), 1 for large x.
Reg<F32> sigmoid(Kernel& k, Reg<F32> x, bool ftz = false);
// SiLU (swish) x · sigmoid(x): sigmoid's error plus half an ulp for normal results (a subnormal
// sigmoid's rounding, below x ≈ -87, grows by |x|); -0 for large negative x, NaN at -inf.
Reg<F32> silu(Kernel& k, Reg<F32> x, bool ftz = false);
// GELU in its tanh form, 0.5·x·(1 + tanh(sqrt(2/pi)·(x + 0.044715·x^3))), computed as
// x · sigmoid(v), v = 2·sqrt(2/pi)·(x + 0.044715·x^3) (the same function): sigmoid's error at v
// plus v's own rounding carried through e^-v (about 1.5·|v| ulp), and one more for the product;
// both terms grow only where gelu is already near 0 or x; 0 where the result is subnormal (x
// below about -10.2). Not tanh.approx's 2^-11.
Reg<F32> gelu(Kernel& k, Reg<F32> x, bool ftz = false);

}  // namespace ptxdsl
