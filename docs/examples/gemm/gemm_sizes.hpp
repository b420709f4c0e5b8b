#pragma once

// What the GEMM tool's kernels share: C = A·Bᵀ with bf16 A (m×k) and B (n×k), row-major, f32
// sums and bf16 C (m×n); the sizes, their seeded inputs, the float64 reference, its tolerance and
// the work a run does.
#include <ptxdsl/tool.hpp>

#include <string>
#include <vector>

namespace gemm {

using ptxdsl::tool::Params;

inline std::vector<ptxdsl::tool::Parameter> sizes() {
  const auto size = [](const char* name, const char* help, std::uint64_t fallback) {
    return ptxdsl::tool::Parameter::uint(name, help, 8, 1u << 16, fallback);
  };
  return {size("m", "rows of a and c (a multiple of 8)", 200),
          size("n", "rows of b, columns of c (a multiple of 8)", 264),
          size("k", "columns of a and b (a multiple of 8)", 136)};
}

// Rows of 16-byte multiples: what cp.async's chunks and TMA's strides need.
inline void check_sizes(const Params& p) {
  for (const char* name : {"m", "n", "k"}) {
    if (p.uint(name) % 8 != 0) {
      throw ptxdsl::Error(std::string(name) + " must be a multiple of 8, got " +
                          std::to_string(p.uint(name)));
    }
  }
}

// Elements in [-1, 1] (bf16 holds them to 2^-8): a sum of k products stays within a few units of
// sqrt(k).
inline ptxdsl::tool::RunData inputs(const Params& p, ptxdsl::tool::Random& random) {
  const std::size_t rows = p.uint("m"), cols = p.uint("n"), depth = p.uint("k");
  ptxdsl::tool::RunData data;
  data.input("a", random.uniform_values(rows * depth, -1, 1))
      .input("b", random.uniform_values(cols * depth, -1, 1))
      .output("c", rows * cols);
  return data;
}

inline ptxdsl::tool::Expected reference(const Params& p, const ptxdsl::tool::RunData& in) {
  const std::size_t rows = p.uint("m"), cols = p.uint("n"), depth = p.uint("k");
  const std::vector<double>& a = in.values("a");
  const std::vector<double>& b = in.values("b");
  std::vector<double> c(rows * cols);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      double sum = 0;
      for (std::size_t l = 0; l < depth; ++l) sum += a[i * depth + l] * b[j * depth + l];
      c[i * cols + j] = sum;
    }
  }
  return {{"c", c}};
}

// An f32 sum of k exact products of elements in [-1, 1] is within k·k·2^-24 of the float64 one;
// the one rounding to bf16 within 2^-8 of the value.
inline ptxdsl::tool::Tolerance tolerance(const Params& p, std::string_view) {
  const auto depth = static_cast<double>(p.uint("k"));
  return ptxdsl::tool::Tolerance{.abs = depth * depth * 0x1p-24, .rel = 0x1p-8};
}

// A multiply and an add per term.
inline double flops(const Params& p) {
  return 2.0 * static_cast<double>(p.uint("m")) * static_cast<double>(p.uint("n")) *
         static_cast<double>(p.uint("k"));
}

// The sm_90a kernel (gemm_sm90.cpp).
ptxdsl::tool::KernelDefinition sm90_definition();

}  // namespace gemm
