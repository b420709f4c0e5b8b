#include "ptxdsl/kernels/reference.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "ptxdsl/dsl/error.hpp"
#include "ptxdsl/dsl/half.hpp"

namespace ptxdsl::kernels {
namespace {

void check_sizes(std::span<const float> rows, std::span<const float> w, std::uint32_t batch,
                 std::uint32_t width, std::uint32_t stride, const char* what) {
  check_batch(batch);
  check_stride(width, stride);
  const std::size_t need = (static_cast<std::size_t>(batch) - 1) * stride + width;
  if (rows.size() < need) {
    throw Error(fmt::format("{}: {} rows of stride {} need {} elements, got {}", what, batch,
                            stride, need, rows.size()));
  }
  if (w.size() < width) {
    throw Error(fmt::format("{}: weights need {} elements, got {}", what, width, w.size()));
  }
}

// Mean and 1/sqrt(var + eps) of one row, two passes.
std::pair<double, double> ln_stats(const float* x, std::uint32_t width, double eps) {
  double sum = 0;
  for (std::uint32_t i = 0; i < width; ++i) sum += x[i];
  const double mean = sum / width;
  double sq = 0;
  for (std::uint32_t i = 0; i < width; ++i) sq += (x[i] - mean) * (x[i] - mean);
  return {mean, 1.0 / std::sqrt(sq / width + eps)};
}

// x̂ as the model's affine and dw take it: rounded to `d` (through f32, as the model rounds its
// f32 x̂), or as is.
double cast_xhat(double xhat, std::optional<DType> d) {
  if (!d) return xhat;
  const auto f = static_cast<float>(xhat);
  return *d == DType::F16    ? f16_bits_to_f32(f32_to_f16_bits(f))
         : *d == DType::BF16 ? bf16_bits_to_f32(f32_to_bf16_bits(f))
                             : f;
}

double rms_rstd(const float* x, std::uint32_t width, double eps) {
  double sq = 0;
  for (std::uint32_t i = 0; i < width; ++i) sq += static_cast<double>(x[i]) * x[i];
  return 1.0 / std::sqrt(sq / width + eps);
}

}  // namespace

LayerNormFwdRef layer_norm_fwd_ref(std::span<const float> x, std::span<const float> w,
                                   std::span<const float> b, std::uint32_t batch,
                                   std::uint32_t width, std::uint32_t stride, double eps,
                                   std::optional<DType> xhat_dtype) {
  check_sizes(x, w, batch, width, stride, "layer_norm_fwd_ref");
  if (b.size() < width)
    throw Error(fmt::format("layer_norm_fwd_ref: bias needs {} elements, got {}", width, b.size()));
  LayerNormFwdRef r;
  r.y.resize(static_cast<std::size_t>(batch) * width);
  r.mean.resize(batch);
  r.rstd.resize(batch);
  for (std::uint32_t row = 0; row < batch; ++row) {
    const float* xr = x.data() + static_cast<std::size_t>(row) * stride;
    const auto [mean, rstd] = ln_stats(xr, width, eps);
    r.mean[row] = mean;
    r.rstd[row] = rstd;
    for (std::uint32_t i = 0; i < width; ++i) {
      r.y[static_cast<std::size_t>(row) * width + i] =
          cast_xhat((xr[i] - mean) * rstd, xhat_dtype) * w[i] + b[i];
    }
  }
  return r;
}

LayerNormBwdRef layer_norm_bwd_ref(std::span<const float> x, std::span<const float> w,
                                   std::span<const float> dy, std::uint32_t batch,
                                   std::uint32_t width, std::uint32_t stride, double eps,
                                   std::optional<DType> xhat_dtype) {
  check_sizes(x, w, batch, width, stride, "layer_norm_bwd_ref");
  check_sizes(dy, w, batch, width, stride, "layer_norm_bwd_ref (dy)");
  LayerNormBwdRef r;
  r.dx.resize(static_cast<std::size_t>(batch) * width);
  r.dw.assign(width, 0.0);
  r.db.assign(width, 0.0);
  std::vector<double> xhat(width), g(width);
  for (std::uint32_t row = 0; row < batch; ++row) {
    const float* xr = x.data() + static_cast<std::size_t>(row) * stride;
    const float* dyr = dy.data() + static_cast<std::size_t>(row) * stride;
    const auto [mean, rstd] = ln_stats(xr, width, eps);
    double sum_xg = 0, sum_g = 0;
    for (std::uint32_t i = 0; i < width; ++i) {
      xhat[i] = (xr[i] - mean) * rstd;
      g[i] = static_cast<double>(w[i]) * dyr[i];
      sum_xg += xhat[i] * g[i];
      sum_g += g[i];
      r.dw[i] += dyr[i] * cast_xhat(xhat[i], xhat_dtype);
      r.db[i] += dyr[i];
    }
    const double c1 = sum_xg / width, c2 = sum_g / width;
    for (std::uint32_t i = 0; i < width; ++i) {
      r.dx[static_cast<std::size_t>(row) * width + i] = (g[i] - (xhat[i] * c1 + c2)) * rstd;
    }
  }
  return r;
}

RmsNormFwdRef rms_norm_fwd_ref(std::span<const float> x, std::span<const float> w,
                               std::uint32_t batch, std::uint32_t width, std::uint32_t stride,
                               double eps, std::optional<DType> xhat_dtype) {
  check_sizes(x, w, batch, width, stride, "rms_norm_fwd_ref");
  RmsNormFwdRef r;
  r.y.resize(static_cast<std::size_t>(batch) * width);
  r.rstd.resize(batch);
  for (std::uint32_t row = 0; row < batch; ++row) {
    const float* xr = x.data() + static_cast<std::size_t>(row) * stride;
    const double rstd = rms_rstd(xr, width, eps);
    r.rstd[row] = rstd;
    for (std::uint32_t i = 0; i < width; ++i) {
      r.y[static_cast<std::size_t>(row) * width + i] = cast_xhat(xr[i] * rstd, xhat_dtype) * w[i];
    }
  }
  return r;
}

RmsNormBwdRef rms_norm_bwd_ref(std::span<const float> x, std::span<const float> w,
                               std::span<const float> dy, std::uint32_t batch, std::uint32_t width,
                               std::uint32_t stride, double eps, std::optional<DType> xhat_dtype) {
  check_sizes(x, w, batch, width, stride, "rms_norm_bwd_ref");
  check_sizes(dy, w, batch, width, stride, "rms_norm_bwd_ref (dy)");
  RmsNormBwdRef r;
  r.dx.resize(static_cast<std::size_t>(batch) * width);
  r.dw.assign(width, 0.0);
  std::vector<double> xhat(width), g(width);
  for (std::uint32_t row = 0; row < batch; ++row) {
    const float* xr = x.data() + static_cast<std::size_t>(row) * stride;
    const float* dyr = dy.data() + static_cast<std::size_t>(row) * stride;
    const double rstd = rms_rstd(xr, width, eps);
    double sum_xg = 0;
    for (std::uint32_t i = 0; i < width; ++i) {
      xhat[i] = xr[i] * rstd;
      g[i] = static_cast<double>(w[i]) * dyr[i];
      sum_xg += xhat[i] * g[i];
      r.dw[i] += dyr[i] * cast_xhat(xhat[i], xhat_dtype);
    }
    const double c1 = sum_xg / width;
    for (std::uint32_t i = 0; i < width; ++i) {
      r.dx[static_cast<std::size_t>(row) * width + i] = (g[i] - xhat[i] * c1) * rstd;
    }
  }
  return r;
}

NormReference norm_reference(const NormSpec& spec, const NormInputs& in, double eps,
                             std::uint32_t first_row, std::uint32_t rows) {
  const bool ln = is_layer_norm(spec.kind);
  const std::uint32_t width = in.width, stride = in.stride;
  if (first_row >= in.batch || rows > in.batch - first_row) {
    throw Error(
        fmt::format("norm_reference: rows [{}, +{}) of a batch of {}", first_row, rows, in.batch));
  }
  const std::uint32_t batch = rows == 0 ? in.batch - first_row : rows;
  // The rows' elements of a strided tensor (the last row without its padding).
  const auto part = [&](const HostTensor& t, const char* what) {
    const std::size_t begin = std::size_t{first_row} * stride;
    const std::size_t count = (std::size_t{batch} - 1) * stride + width;
    if (t.values.size() < begin + count) {
      throw Error(fmt::format("norm_reference: {} has {} elements, rows [{}, +{}) need {}", what,
                              t.values.size(), first_row, batch, begin + count));
    }
    return std::vector<float>(t.values.begin() + static_cast<std::ptrdiff_t>(begin),
                              t.values.begin() + static_cast<std::ptrdiff_t>(begin + count));
  };
  NormReference r;
  r.rows = part(in.x, "x");
  const bool adds = has_residual(spec) && !is_backward(spec.kind);
  if (adds) {
    const std::vector<float> residual = part(in.residual, "residual");
    for (std::size_t i = 0; i < r.rows.size(); ++i) r.rows[i] += residual[i];
    // As the model adds them (in the dtype) and normalizes the stored h.
    if (normalizes_stored_h(spec)) r.rows = make_tensor(r.rows, residual_dtype(spec)).values;
  }
  r.w = has_weight(spec) ? in.w.values : std::vector<float>(width, 1.0f);
  for (float& v : r.w) v += spec.weight_offset;  // in f32, as the model has it
  r.b = has_bias(spec) ? in.b.values : std::vector<float>(width, 0.0f);
  // The forward's statistics of the rows (the backward's mean and rstd inputs too); a backward
  // needs them alone, not y, whose doubles would be the largest array of the reference.
  if (is_backward(spec.kind)) {
    r.rstd.resize(batch);
    if (ln) r.mean.resize(batch);
    for (std::uint32_t row = 0; row < batch; ++row) {
      const float* xr = r.rows.data() + static_cast<std::size_t>(row) * stride;
      if (ln) {
        std::tie(r.mean[row], r.rstd[row]) = ln_stats(xr, width, eps);
      } else {
        r.rstd[row] = rms_rstd(xr, width, eps);
      }
    }
  } else if (ln) {
    LayerNormFwdRef f =
        layer_norm_fwd_ref(r.rows, r.w, r.b, batch, width, stride, eps, rounded_xhat(spec));
    r.y = std::move(f.y);
    r.mean = std::move(f.mean);
    r.rstd = std::move(f.rstd);
  } else {
    RmsNormFwdRef f = rms_norm_fwd_ref(r.rows, r.w, batch, width, stride, eps, rounded_xhat(spec));
    r.y = std::move(f.y);
    r.rstd = std::move(f.rstd);
  }
  if (adds) {
    const std::vector<float> h = dense_rows(r.rows, batch, width, stride);
    r.h.assign(h.begin(), h.end());
  }
  if (!is_backward(spec.kind)) return r;
  const std::vector<float> dy = part(in.dy, "dy");
  if (ln) {
    LayerNormBwdRef b =
        layer_norm_bwd_ref(r.rows, r.w, dy, batch, width, stride, eps, rounded_xhat(spec));
    r.dx = std::move(b.dx);
    r.dw = std::move(b.dw);
    r.db = std::move(b.db);
  } else {
    RmsNormBwdRef b =
        rms_norm_bwd_ref(r.rows, r.w, dy, batch, width, stride, eps, rounded_xhat(spec));
    r.dx = std::move(b.dx);
    r.dw = std::move(b.dw);
  }
  if (has_residual(spec)) {
    const std::vector<float> dh = dense_rows(part(in.dh, "dh"), batch, width, stride);
    for (std::size_t i = 0; i < r.dx.size(); ++i) r.dx[i] += dh[i];
  }
  if (!has_weight_grads(spec)) r.dw.clear();
  if (!has_weight_grads(spec) || !has_bias(spec)) r.db.clear();
  return r;
}

ColumnSums backward_column_sums(const NormSpec& spec, const NormInputs& in, double eps,
                                std::uint32_t first_row, std::uint32_t rows) {
  if (!is_backward(spec.kind)) {
    throw Error(fmt::format("backward_column_sums: {} is a forward", kind_name(spec.kind)));
  }
  const bool ln = is_layer_norm(spec.kind);
  const std::uint32_t width = in.width, stride = in.stride;
  if (first_row >= in.batch || rows > in.batch - first_row) {
    throw Error(fmt::format("backward_column_sums: rows [{}, +{}) of a batch of {}", first_row,
                            rows, in.batch));
  }
  const std::uint32_t batch = rows == 0 ? in.batch - first_row : rows;
  const std::size_t need = (std::size_t{first_row} + batch - 1) * stride + width;
  if (in.x.values.size() < need || in.dy.values.size() < need) {
    throw Error(
        fmt::format("backward_column_sums: rows [{}, +{}) need {} elements of x and dy, "
                    "got {} and {}",
                    first_row, batch, need, in.x.values.size(), in.dy.values.size()));
  }
  const std::optional<DType> xhat_dtype = rounded_xhat(spec);
  ColumnSums c;
  c.rstd.resize(batch);
  if (ln) c.mean.resize(batch);
  c.dw.assign(width, 0.0);
  c.db.assign(ln ? width : 0, 0.0);
  for (std::uint32_t row = 0; row < batch; ++row) {
    const std::size_t start = (std::size_t{first_row} + row) * stride;
    const float* xr = in.x.values.data() + start;
    const float* dyr = in.dy.values.data() + start;
    double mean = 0, rstd;
    if (ln) {
      std::tie(mean, rstd) = ln_stats(xr, width, eps);
      c.mean[row] = mean;
    } else {
      rstd = rms_rstd(xr, width, eps);
    }
    c.rstd[row] = rstd;
    // As layer_norm_bwd_ref and rms_norm_bwd_ref sum them, row by row.
    for (std::uint32_t i = 0; i < width; ++i) {
      const double xhat = ln ? (xr[i] - mean) * rstd : xr[i] * rstd;
      c.dw[i] += dyr[i] * cast_xhat(xhat, xhat_dtype);
    }
    if (ln) {
      for (std::uint32_t i = 0; i < width; ++i) c.db[i] += dyr[i];
    }
  }
  if (!has_weight_grads(spec)) c.dw.clear();
  if (!has_weight_grads(spec) || !has_bias(spec)) c.db.clear();
  return c;
}

Deviation deviation(std::span<const float> got, std::span<const double> want) {
  if (got.size() != want.size()) {
    throw Error(
        fmt::format("deviation: {} values against {} reference values", got.size(), want.size()));
  }
  Deviation d;
  double scale = 0;
  for (double v : want) scale = std::max(scale, std::abs(v));
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) {
      if (d.nonfinite++ == 0) d.worst = i;
      d.max_abs = std::numeric_limits<double>::infinity();
      continue;
    }
    const double e = std::abs(static_cast<double>(got[i]) - want[i]);
    if (e > d.max_abs) {
      d.max_abs = e;
      d.worst = i;
    }
  }
  d.max_rel = scale > 0 ? d.max_abs / scale : d.max_abs;
  return d;
}

}  // namespace ptxdsl::kernels
