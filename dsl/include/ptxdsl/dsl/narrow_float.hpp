#pragma once

#include <cstdint>

// Exact host conversions between f32 and the narrow formats PTX converts to with cvt: FP8 (e4m3,
// e5m2), FP4 (e2m1) and ue8m0 scales, one element a byte. Shared by the CPU executor, the kernel
// tools' comparisons and the references. Encoding follows PTX's `.satfinite` conversions: round
// to nearest even, results beyond the largest finite value (infinities included) saturate to it
// with their sign, NaN stays NaN (0x7F: e4m3 and e5m2 have no other canonical NaN).
namespace ptxdsl {

// e4m3: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinity, NaN is S.1111.111; largest
// finite 448, smallest subnormal 2^-9.
std::uint8_t f32_to_e4m3_bits(float value);
float e4m3_bits_to_f32(std::uint8_t bits);
// e5m2: 1 sign, 5 exponent (bias 15), 2 mantissa bits, IEEE-like (inf 0x7C); largest finite
// 57344, smallest subnormal 2^-16.
std::uint8_t f32_to_e5m2_bits(float value);
float e5m2_bits_to_f32(std::uint8_t bits);
// e2m1 (in the low 4 bits): 1 sign, 2 exponent (bias 1), 1 mantissa bit; values 0, 0.5, 1, 1.5,
// 2, 3, 4, 6 and their negatives, no infinity and no NaN: NaN converts to +6 (0x7).
std::uint8_t f32_to_e2m1_bits(float value);
float e2m1_bits_to_f32(std::uint8_t bits);
// ue8m0: an unsigned power of two 2^(bits - 127), 0xFF is NaN. Converting takes the magnitude,
// rounded toward zero or up (`round_up`) to a power of two in [2^-127, 2^127]; larger values and
// infinities give 0xFE with `satfinite`, else NaN.
std::uint8_t f32_to_ue8m0_bits(float value, bool round_up, bool satfinite);
float ue8m0_bits_to_f32(std::uint8_t bits);

}  // namespace ptxdsl
