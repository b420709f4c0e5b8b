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
  std::vector<float> scale;     // one a row
};
// Per row: a = max |y| (f32), scale = a / quant_max(quant) in f32, q = the format's code nearest
// y / scale (f32 division; y / 1 for a row of zeros), ties to the even code, saturated to the
// format's largest finite value (int8: [-127, 127]).
QuantizedRows quantize_rows(Quant quant, std::span<const float> y, std::uint32_t batch,
                            std::uint32_t width);
// The value of a code of the format.
double quant_value(Quant quant, std::uint8_t code);
// The code of the format nearest v, ties to even, saturated.
std::uint8_t quant_code(Quant quant, float v);
// How many representable steps apart two codes are (0 and -0 the same).
int quant_steps(Quant quant, std::uint8_t a, std::uint8_t b);

}  // namespace ptxdsl::kernels
