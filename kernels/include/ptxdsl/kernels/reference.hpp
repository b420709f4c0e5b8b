#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ptxdsl/kernels/norm.hpp"

// The norms in float64 on the CPU: what every kernel is checked against (tests, `ptxdsl run`, the
// GPU checks). Inputs are the values as stored (already rounded to their dtype), as floats; x and
// dy are `batch` rows `stride` elements apart, of which the first `width` count. Outputs are dense:
// `batch` × `width` row-major, mean and rstd one per row, dw and db one per column.
namespace ptxdsl::kernels {

struct LayerNormFwdRef {
  std::vector<double> y, mean, rstd;
};
struct LayerNormBwdRef {
  std::vector<double> dx, dw, db;
  // The size of the terms dx is the difference of: max of rstd·(|g| + |x̂·c1| + |c2|). dx can
  // cancel far below it (width 2 cancels to nearly 0), so measure dx's error against this.
  double dx_scale = 0;
};
struct RmsNormFwdRef {
  std::vector<double> y, rstd;
};
struct RmsNormBwdRef {
  std::vector<double> dx, dw;
  double dx_scale = 0;  // as LayerNormBwdRef::dx_scale
};

// y = (x − mean)·rstd·w + b, rstd = 1/sqrt(var + eps), var = mean((x − mean)²).
LayerNormFwdRef layer_norm_fwd_ref(std::span<const float> x, std::span<const float> w,
                                   std::span<const float> b, std::uint32_t batch,
                                   std::uint32_t width, std::uint32_t stride, double eps);
// dx = rstd·(g − (x̂·mean(x̂·g) + mean(g))), g = w·dy, x̂ = (x − mean)·rstd;
// dw = Σ_rows dy·x̂, db = Σ_rows dy. The statistics are recomputed from x in float64.
LayerNormBwdRef layer_norm_bwd_ref(std::span<const float> x, std::span<const float> w,
                                   std::span<const float> dy, std::uint32_t batch,
                                   std::uint32_t width, std::uint32_t stride, double eps);
// y = x·rstd·w, rstd = 1/sqrt(mean(x²) + eps).
RmsNormFwdRef rms_norm_fwd_ref(std::span<const float> x, std::span<const float> w,
                               std::uint32_t batch, std::uint32_t width, std::uint32_t stride,
                               double eps);
// dx = rstd·(g − x̂·mean(x̂·g)), g = w·dy, x̂ = x·rstd; dw = Σ_rows dy·x̂.
RmsNormBwdRef rms_norm_bwd_ref(std::span<const float> x, std::span<const float> w,
                               std::span<const float> dy, std::uint32_t batch, std::uint32_t width,
                               std::uint32_t stride, double eps);

// How far kernel outputs are from the reference: the largest absolute error, the largest error
// relative to the largest |reference| of the tensor (what the 1e-5 f32 bound is measured in), and
// where the worst one is.
struct Deviation {
  double max_abs = 0;
  double max_rel = 0;  // max_abs / max(|want|)
  std::size_t worst = 0;
  std::size_t nonfinite = 0;  // NaN or inf in `got`
};
Deviation deviation(std::span<const float> got, std::span<const double> want);
// The same, relative to max(max |want|, scale): for outputs that cancel (dx: pass dx_scale).
Deviation deviation(std::span<const float> got, std::span<const double> want, double scale);
// A bound on Deviation::max_rel that a correct kernel meets for outputs stored in `d`:
// 1e-5 for f32, a few ulps of the 16-bit formats otherwise.
double tolerance(DType d);

}  // namespace ptxdsl::kernels
