#include "ptxdsl/kernels/check_outputs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ptxdsl/dsl/error.hpp"
#include "ptxdsl/kernels/row_blocks.hpp"

namespace ptxdsl::kernels {
namespace {

constexpr double kRel = 1e-5;              // f32: of the tensor's largest |reference|
constexpr double kRoundoff = 8 * 0x1p-24;  // f32: units of roundoff of the element's terms
constexpr double kAtol = 1e-2;             // 16-bit outputs, as the seeds' allclose
double output_ulp(DType d) {
  return d == DType::BF16 ? 0x1p-7 : 0x1p-10;
}

// Per element, the magnitude of what computing it in f32 rounds and cancels: the operands of
// x − mean (amplified by rstd), the terms of dx's difference, each row's terms of dw and db.
struct Scales {
  std::vector<double> y, mean, rstd, h, dx, dw, db;
};

// Rows are independent but for the column sums of dw and db, which each block of rows sums on its
// own and the blocks add in order; h's scales only where h is checked (a wide case's h alone
// would be 16 GB of doubles).
Scales term_scales(const NormProblem& p, std::span<const double> y_want,
                   std::span<const double> dx_want, bool with_h) {
  const std::uint32_t n = p.width, s = p.stride;
  const bool backward = !p.dy.empty();
  Scales out;
  if (!y_want.empty()) out.y.assign(std::size_t{p.batch} * n, 0);
  if (backward && !dx_want.empty()) out.dx.assign(std::size_t{p.batch} * n, 0);
  out.mean.assign(p.batch, 0);
  out.rstd.assign(p.batch, 0);
  if (with_h) out.h.assign(std::size_t{p.batch} * n, 0);
  const std::vector<RowBlock> blocks = row_blocks(p.batch, n);
  std::vector<std::vector<double>> dw(blocks.size()), db(blocks.size()), dw_flip(blocks.size());
  for_row_blocks(blocks, [&](std::size_t block, std::uint32_t first, std::uint32_t rows) {
    std::vector<double> xhat(n), err(n), g(n);
    std::vector<double>& dw_sum = dw[block];
    std::vector<double>& db_sum = db[block];
    std::vector<double>& flip = dw_flip[block];
    if (backward) {
      dw_sum.assign(n, 0);
      db_sum.assign(n, 0);
      flip.assign(n, 0);
    }
    for (std::uint32_t row = first; row < first + rows; ++row) {
      const float* x = p.x.data() + std::size_t{row} * s;
      double sum = 0, sum_abs = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        sum += x[i];
        sum_abs += std::abs(x[i]);
      }
      const double mu = p.layer ? sum / n : 0.0;
      double sq = 0;
      for (std::uint32_t i = 0; i < n; ++i) sq += (x[i] - mu) * (x[i] - mu);
      const double r = 1.0 / std::sqrt(sq / n + p.eps);
      out.mean[row] = sum_abs / n;
      out.rstd[row] = r;
      double c1 = 0, c2 = 0, mean_g_err = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        xhat[i] = (x[i] - mu) * r;
        err[i] = p.layer ? r * (std::abs(x[i]) + std::abs(mu)) + std::abs(xhat[i])
                         : 2 * std::abs(xhat[i]);
        if (!backward) continue;
        const double dy = p.dy[std::size_t{row} * s + i];
        g[i] = p.w[i] * dy;
        c1 += xhat[i] * g[i] / n;
        c2 += p.layer ? g[i] / n : 0.0;
        mean_g_err += std::abs(g[i]) * err[i] / n;
        const double term = std::abs(dy) * (err[i] + std::abs(xhat[i]));
        dw_sum[i] += term * term;
        db_sum[i] += dy * dy;
        if (p.xhat_dtype) {
          flip[i] = std::max(flip[i], std::abs(dy * xhat[i]) * output_ulp(*p.xhat_dtype));
        }
      }
      for (std::uint32_t i = 0; i < n; ++i) {
        const std::size_t at = std::size_t{row} * n + i;
        if (with_h) out.h[at] = std::abs(x[i]);  // x + residual: one rounding of h
        if (!out.y.empty()) out.y[at] = std::abs(p.w[i]) * err[i] + std::abs(y_want[at]);
        if (!out.dx.empty()) {
          out.dx[at] = r * (std::abs(g[i]) + std::abs(xhat[i] * c1) + std::abs(c2)) +
                       r * std::abs(c1) * err[i] + r * std::abs(xhat[i]) * mean_g_err +
                       std::abs(dx_want[at]);
          if (!p.dh.empty()) out.dx[at] += std::abs(p.dh[std::size_t{row} * s + i]);
        }
      }
    }
  });
  if (backward) {
    out.dw.assign(n, 0);
    out.db.assign(n, 0);
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      for (std::uint32_t i = 0; i < n; ++i) {
        out.dw[i] += dw[b][i];
        out.db[i] += db[b][i];
      }
    }
  }
  // The rows' roundings of a column sum add in quadrature; a rounded x̂ (Casting Llama) may round
  // the other way than the model's where f32 and float64 straddle a tie: one such term a column.
  for (double& v : out.dw) v = std::sqrt(v);
  if (backward && p.xhat_dtype) {
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      for (std::uint32_t i = 0; i < n; ++i) out.dw[i] += dw_flip[b][i] / kRoundoff;
    }
  }
  for (double& v : out.db) v = std::sqrt(v);
  return out;
}

std::span<const double> want_of(std::span<const NormOutput> outputs, std::string_view name) {
  for (const NormOutput& o : outputs) {
    if (o.name == name) return o.want;
  }
  return {};
}

const std::vector<double>& scale_of(const Scales& s, std::string_view name) {
  if (name == "y") return s.y;
  if (name == "mean") return s.mean;
  if (name == "rstd") return s.rstd;
  if (name == "h") return s.h;
  if (name == "dx") return s.dx;
  if (name == "dw") return s.dw;
  if (name == "db") return s.db;
  throw Error(
      fmt::format("check_outputs: no rule for output '{}' (y, mean, rstd, h, dx, dw, db)", name));
}

// One output against its bounds, over blocks of its elements on every core (per row where it
// has `batch` rows' worth), merged in order: the same verdict as one pass over it.
OutputVerdict judge(const NormOutput& o, const std::vector<double>& scale, std::uint32_t batch) {
  if (o.got.size() != o.want.size() || o.want.size() != scale.size()) {
    throw Error(
        fmt::format("check_outputs: output '{}' has {} values, its reference {}, its "
                    "problem {}",
                    o.name, o.got.size(), o.want.size(), scale.size()));
  }
  const std::size_t count = o.got.size();
  const bool by_rows = batch > 0 && count % batch == 0;
  const std::size_t per_row = by_rows ? count / batch : count;
  const std::vector<RowBlock> blocks = row_blocks(by_rows ? batch : 1, per_row);
  const auto range = [&](std::uint32_t first, std::uint32_t rows) {
    return std::pair{std::size_t{first} * per_row, std::size_t{first + rows} * per_row};
  };
  std::vector<double> largest_of(blocks.size(), 0);
  for_row_blocks(blocks, [&](std::size_t block, std::uint32_t first, std::uint32_t rows) {
    const auto [begin, end] = range(first, rows);
    for (std::size_t i = begin; i < end; ++i)
      largest_of[block] = std::max(largest_of[block], std::abs(o.want[i]));
  });
  const double largest = *std::max_element(largest_of.begin(), largest_of.end());
  const bool row_output = o.name == "y" || o.name == "h" || o.name == "dx";
  struct Part {
    OutputVerdict v;
    double worst_ratio = -1;
  };
  std::vector<Part> parts(blocks.size());
  for_row_blocks(blocks, [&](std::size_t block, std::uint32_t first, std::uint32_t rows) {
    const auto [begin, end] = range(first, rows);
    Part& part = parts[block];
    OutputVerdict& v = part.v;
    for (std::size_t i = begin; i < end; ++i) {
      double bound;
      if (o.dtype == DType::F32) {
        bound = std::max(kRel * largest, kRoundoff * scale[i]);
      } else if (row_output) {
        bound = kAtol + output_ulp(o.dtype) * std::abs(o.want[i]);
      } else {
        bound = kAtol * largest;
      }
      const bool finite = std::isfinite(o.got[i]);
      const double error = finite ? std::abs(static_cast<double>(o.got[i]) - o.want[i])
                                  : std::numeric_limits<double>::infinity();
      if (!finite) ++v.nonfinite;
      if (!(error <= bound)) ++v.failures;
      v.max_abs = std::max(v.max_abs, error);
      const double ratio = bound > 0 ? error / bound : (error > 0 ? 1e300 : 0);
      if (ratio > part.worst_ratio) {
        part.worst_ratio = ratio;
        v.worst = i;
        v.got = o.got[i];
        v.want = o.want[i];
        v.error = error;
        v.bound = bound;
      }
    }
  });
  OutputVerdict v = parts[0].v;
  double worst_ratio = parts[0].worst_ratio;
  for (std::size_t b = 1; b < parts.size(); ++b) {
    const OutputVerdict& p = parts[b].v;
    v.failures += p.failures;
    v.nonfinite += p.nonfinite;
    v.max_abs = std::max(v.max_abs, p.max_abs);
    if (parts[b].worst_ratio > worst_ratio) {  // the first block's on a tie, as one pass keeps
      worst_ratio = parts[b].worst_ratio;
      v.worst = p.worst;
      v.got = p.got;
      v.want = p.want;
      v.error = p.error;
      v.bound = p.bound;
    }
  }
  v.name = std::string(o.name);
  v.dtype = o.dtype;
  v.max_rel = largest > 0 ? v.max_abs / largest : v.max_abs;
  v.pass = v.failures == 0;
  return v;
}

}  // namespace

bool Verdict::pass() const {
  return std::all_of(outputs.begin(), outputs.end(), [](const OutputVerdict& o) { return o.pass; });
}

NormProblem norm_problem(const NormSpec& spec, const NormInputs& in, const NormReference& ref,
                         double eps) {
  NormProblem p;
  p.layer = is_layer_norm(spec.kind);
  p.batch = in.batch;
  p.width = in.width;
  p.stride = in.stride;
  p.eps = eps;
  p.x = ref.rows;
  p.w = ref.w;
  p.b = ref.b;
  p.xhat_dtype = rounded_xhat(spec);
  if (is_backward(spec.kind)) {
    p.dy = in.dy.values;
    if (has_residual(spec)) p.dh = in.dh.values;
  }
  return p;
}

Verdict check_outputs(const NormProblem& problem, std::span<const NormOutput> outputs) {
  check_batch(problem.batch);
  check_stride(problem.width, problem.stride);
  const std::size_t rows = (std::size_t{problem.batch} - 1) * problem.stride + problem.width;
  if (problem.x.size() < rows || problem.w.size() < problem.width ||
      (!problem.dy.empty() && problem.dy.size() < rows)) {
    throw Error(
        fmt::format("check_outputs: {} rows of stride {} need {} elements of x (and dy) "
                    "and {} weights, got {}, {} and {}",
                    problem.batch, problem.stride, rows, problem.width, problem.x.size(),
                    problem.dy.size(), problem.w.size()));
  }
  const bool with_h = std::any_of(outputs.begin(), outputs.end(),
                                  [](const NormOutput& o) { return o.name == "h"; });
  const Scales scales = term_scales(problem, want_of(outputs, "y"), want_of(outputs, "dx"), with_h);
  Verdict v;
  for (const NormOutput& o : outputs)
    v.outputs.push_back(judge(o, scale_of(scales, o.name), problem.batch));
  return v;
}

}  // namespace ptxdsl::kernels
