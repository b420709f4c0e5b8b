#pragma once

#include <cstdint>

// Exact host conversions between f32 and the 16-bit float formats (round to nearest even), shared
// by the emitter (immediates), the CPU executor, the references and the tests.
namespace ptxdsl {

std::uint16_t f32_to_f16_bits(float value);
float f16_bits_to_f32(std::uint16_t bits);
std::uint16_t f32_to_bf16_bits(float value);
float bf16_bits_to_f32(std::uint16_t bits);

}  // namespace ptxdsl
