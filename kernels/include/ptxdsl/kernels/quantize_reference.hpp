#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ptxdsl/kernels/spec.hpp"

// The quantized forward's model (NormSpec::quant), written from the formats' definitions: what
// the kernel writes given the row's y in f32.
namespace ptxdsl::kernels {

struct QuantizedRows {
  std::vector<std::uint8_t> q;  // batch × width codes (int8: two's complement)
  std::vector<float> scale;     // quant_scales_per_row(spec) a row, row-major (static: none)
};
// Per scale (a row, or a group of 128 of its elements, the last one ragged): a = max |y| (f32),
// scale = a / quant_max(quant) in f32; static: `static_scale` for every element. q = the format's
// code nearest y / scale (f32 division; y / 1 where a is 0), ties to the even code, saturated to
// the format's largest finite value (int8: [-127, 127]). mxfp8: per 32 elements, scale = 2^e, e =
// floor(log2(a)) − 8 within [−127, 127] (a = 0: −127), q = the e4m3 code of y·2^−e (exact), as
// above; `scale` holds 2^e (the kernel writes the byte e + 127).
QuantizedRows quantize_rows(const NormSpec& spec, std::span<const float> y, std::uint32_t batch,
                            float static_scale = 1.0f);
// The per-token scales of `quant` (the spec's other fields at their defaults).
QuantizedRows quantize_rows(Quant quant, std::span<const float> y, std::uint32_t batch,
                            std::uint32_t width);
// The value of a code of the format.
double quant_value(Quant quant, std::uint8_t code);
// The code of the format nearest v, ties to even, saturated.
std::uint8_t quant_code(Quant quant, float v);
// How many representable steps apart two codes are (0 and -0 the same).
int quant_steps(Quant quant, std::uint8_t a, std::uint8_t b);

}  // namespace ptxdsl::kernels
