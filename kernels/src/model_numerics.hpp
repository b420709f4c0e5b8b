#pragma once

#include "element_io.hpp"

// What a model's reference computes around the norm, as the spec asks for it: the weight offset
// (Gemma's 1 + w). Each a step the forward and the backward take alike; at the spec's defaults
// each emits nothing.
namespace ptxdsl::kernels::detail {

// w as the affine applies it: weight_offset + w, in f32 (in a 16-bit dtype 1 + 0.0039 would be 1).
Values applied_weights(Kernel& k, const NormSpec& spec, Values w);

}  // namespace ptxdsl::kernels::detail
