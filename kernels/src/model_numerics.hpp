#pragma once

#include <functional>

#include "element_io.hpp"

// What a model's reference computes around the norm, as the spec asks for it: the weight offset
// (Gemma's 1 + w) and where it rounds to the row dtype (Casting). Each a step the forward and the
// backward take alike; at the spec's defaults each emits nothing.
namespace ptxdsl::kernels::detail {

// w as the affine applies it: weight_offset + w, in f32 (in a 16-bit dtype 1 + 0.0039 would be 1).
Values applied_weights(Kernel& k, const NormSpec& spec, Values w);
// x̂ as the affine and dw's sums take it: rounded to the row dtype under Casting Llama.
Values cast_xhat(Kernel& k, const NormSpec& spec, Values xhat);
// use(e, x̂) for e in [0, count), x̂ = cast_xhat of normalized(e): a pair at a time where the
// casting rounds (one cvt a pair), else one at a time, each used as soon as it is made (as few
// values live at once as the plain affine has).
void for_each_xhat(Kernel& k, const NormSpec& spec, std::size_t count,
                   const std::function<Reg<F32>(std::size_t)>& normalized,
                   const std::function<void(std::size_t, Reg<F32>)>& use);
// The residual add's h as the forward normalizes it: rounded to its dtype, as stored, under
// Casting Llama and Gemma; else the f32 sum.
Values normalized_h(Kernel& k, const NormSpec& spec, Values h);

}  // namespace ptxdsl::kernels::detail
