#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ptxdsl/kernels/norm.hpp"

// Deterministic inputs for the norms, as the seeds' checks make them, stored in their dtypes, plus
// the conversions between dtype buffers and floats. Used by the tests, `ptxdsl run`/`bench` and
// the GPU checks, so every consumer sees the same numbers for the same seed.
namespace ptxdsl::kernels {

// A tensor in memory: raw little-endian bytes of `count` elements of `dtype` (f16/bf16 as their
// 16-bit patterns), and the same values as floats (exactly what the bytes hold).
struct HostTensor {
  DType dtype = DType::F32;
  std::vector<std::byte> bytes;
  std::vector<float> values;
  std::size_t count() const { return values.size(); }
};

// Rounds each value to `d` (nearest even) and stores it.
HostTensor make_tensor(std::span<const float> values, DType d);
// Reads `count` elements of `d` from raw bytes as floats.
std::vector<float> to_floats(std::span<const std::byte> bytes, DType d, std::size_t count);
std::vector<float> to_floats(std::span<const std::byte> bytes, DType d);  // all of them
// Writes floats as `d`.
std::vector<std::byte> from_floats(std::span<const float> values, DType d);
// A strided buffer's rows packed densely: `batch` rows of `width` out of rows `stride` apart.
std::vector<float> dense_rows(std::span<const float> strided, std::uint32_t batch,
                              std::uint32_t width, std::uint32_t stride);

// Everything any norm of `kind` reads, for `batch` rows of `width` elements `stride` apart:
// - layer norm: x = −2.3 + 0.5·randn, w = rand, b = rand, dy = 0.1·randn;
// - RMS norm: x = 0.3·randn, w = 1 + 0.1·randn, dy = 0.1·randn (b empty);
// - with the residual add (`residual` not None): residual = 0.5·randn and dh = 0.1·randn, rows
//   like x's in the residual's dtype (f32 for add_f32), empty otherwise.
// - with a weight offset F, w less F, so that the weights applied (F + w) are as above (RMS: w
//   zero-centred for Gemma's F = 1).
// x and dy hold batch × stride elements; the padding between rows (stride > width) holds NaN, so a
// kernel that reads it shows. w and b hold `width` elements in the weight dtype. The same seed
// gives the same values on every platform (own generator, no std:: distributions).
struct NormInputs {
  std::uint32_t batch = 0;
  std::uint32_t width = 0;
  std::uint32_t stride = 0;
  HostTensor x, w, b, dy;
  HostTensor residual, dh;
};
NormInputs make_inputs(NormKind kind, DType dtype, DType weight_dtype, std::uint32_t batch,
                       std::uint32_t width, std::uint32_t stride, std::uint64_t seed = 0,
                       Residual residual = Residual::None, float weight_offset = 0.0f);
inline NormInputs make_inputs(const NormSpec& spec, std::uint32_t batch, std::uint32_t stride,
                              std::uint64_t seed = 0) {
  return make_inputs(spec.kind, spec.dtype, spec.weight_dtype, batch, spec.width, stride, seed,
                     spec.residual, spec.weight_offset);
}

// mean/rstd as the backward kernels take them (f32 per row), from a reference's doubles.
std::vector<float> to_f32(std::span<const double> values);

}  // namespace ptxdsl::kernels
