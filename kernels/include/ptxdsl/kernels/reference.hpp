#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "ptxdsl/kernels/inputs.hpp"
#include "ptxdsl/kernels/norm.hpp"

// The norms in float64 on the CPU: what every kernel is checked against (by check_outputs, in
// check_outputs.hpp). Inputs are the values as stored (already rounded to their dtype), as floats;
// x and dy are `batch` rows `stride` elements apart, of which the first `width` count. Outputs are
// dense: `batch` × `width` row-major, mean and rstd one per row, dw and db one per column.
namespace ptxdsl::kernels {

struct LayerNormFwdRef {
  std::vector<double> y, mean, rstd;
};
struct LayerNormBwdRef {
  std::vector<double> dx, dw, db;
};
struct RmsNormFwdRef {
  std::vector<double> y, rstd;
};
struct RmsNormBwdRef {
  std::vector<double> dx, dw;
};

// y = (x − mean)·rstd·w + b, rstd = 1/sqrt(var + eps), var = mean((x − mean)²). With
// `xhat_dtype` (Casting Llama), x̂ = (x − mean)·rstd is rounded to it (through f32) before ×w, and
// the backwards' dw sums dy·x̂ rounded so.
LayerNormFwdRef layer_norm_fwd_ref(std::span<const float> x, std::span<const float> w,
                                   std::span<const float> b, std::uint32_t batch,
                                   std::uint32_t width, std::uint32_t stride, double eps,
                                   std::optional<DType> xhat_dtype = std::nullopt);
// dx = rstd·(g − (x̂·mean(x̂·g) + mean(g))), g = w·dy, x̂ = (x − mean)·rstd;
// dw = Σ_rows dy·x̂, db = Σ_rows dy. The statistics are recomputed from x in float64.
LayerNormBwdRef layer_norm_bwd_ref(std::span<const float> x, std::span<const float> w,
                                   std::span<const float> dy, std::uint32_t batch,
                                   std::uint32_t width, std::uint32_t stride, double eps,
                                   std::optional<DType> xhat_dtype = std::nullopt);
// y = x·rstd·w, rstd = 1/sqrt(mean(x²) + eps).
RmsNormFwdRef rms_norm_fwd_ref(std::span<const float> x, std::span<const float> w,
                               std::uint32_t batch, std::uint32_t width, std::uint32_t stride,
                               double eps, std::optional<DType> xhat_dtype = std::nullopt);
// dx = rstd·(g − x̂·mean(x̂·g)), g = w·dy, x̂ = x·rstd; dw = Σ_rows dy·x̂.
RmsNormBwdRef rms_norm_bwd_ref(std::span<const float> x, std::span<const float> w,
                               std::span<const float> dy, std::uint32_t batch, std::uint32_t width,
                               std::uint32_t stride, double eps,
                               std::optional<DType> xhat_dtype = std::nullopt);

// The answers for a spec's variant from its inputs (make_inputs): the norm above on the rows it
// normalizes (x, or h = x + residual added in f32 as the kernel adds them, rounded to h's dtype
// where the casting normalizes h as stored), with w = 1 and b = 0 where the variant has none, the
// weight offset added to w, and x̂ rounded where the casting says (rounded_xhat). A backward's x is
// the forward's stored h where it has the residual add; its dx has dh added, and mean and rstd are
// the statistics of x (the backward's inputs). `first_row` and `rows` (0: to the last) take a part
// of the batch: every output is of those rows alone (dw, db summed over them), so that parts can
// run on several threads.
struct NormReference {
  std::vector<float> rows;  // what is normalized: the rows asked for, `stride` apart, as x
  // The weights applied: weight_offset + w (formed in f32, as the model has it), and b; ones and
  // zeros where the variant has none.
  std::vector<float> w, b;
  std::vector<double> y, mean, rstd, h;  // forward (h with the residual add); backward: mean, rstd
  std::vector<double> dx, dw, db;        // backward (dw and db where it writes them)
};
NormReference norm_reference(const NormSpec& spec, const NormInputs& in, double eps,
                             std::uint32_t first_row = 0, std::uint32_t rows = 0);

// A backward's row statistics (mean where layer norm, rstd) and dw, db (where it writes them) of
// rows [first_row, +rows) (0: to the last), the numbers norm_reference gives, without dx: the
// rows are read in place and nothing a row long is kept, so that a huge batch's column sums cost
// a read of its rows (the sampled check of `ptxdsl bench`).
struct ColumnSums {
  std::vector<double> mean, rstd, dw, db;
};
ColumnSums backward_column_sums(const NormSpec& spec, const NormInputs& in, double eps,
                                std::uint32_t first_row = 0, std::uint32_t rows = 0);

// How far outputs are from the reference, for reports (whether they pass is check_outputs'
// verdict): the largest absolute error, it relative to the largest |reference|, and where it is.
struct Deviation {
  double max_abs = 0;
  double max_rel = 0;  // max_abs / max(|want|)
  std::size_t worst = 0;
  std::size_t nonfinite = 0;  // NaN or inf in `got`
};
Deviation deviation(std::span<const float> got, std::span<const double> want);

}  // namespace ptxdsl::kernels
