#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ptxdsl/kernels/inputs.hpp"
#include "ptxdsl/kernels/reference.hpp"
#include "ptxdsl/runtime.hpp"

// Runs a norm's forward and backward on the GPU through the host API and measures every output
// against the float64 reference: fresh inputs, outputs poisoned with NaN before each launch, the
// padding between rows checked untouched, dw/db compared bit for bit across two runs.
namespace ptxdsl::test {

using kernels::DType;

struct NormCase {
  bool layer = true;
  // dw and db bit for bit the same call after call (not with rows from a counter, row_order 2).
  bool same_sums = true;
  DType dtype = DType::F16;
  DType weight_dtype = DType::F16;
  std::uint32_t width = 0;
  std::uint32_t batch = 0;
  std::uint32_t stride = 0;  // 0: the width
  // Bytes added to device addresses (misalignment tests); row tensors x, y, dy, dx, weights w, dw.
  std::uint32_t x_offset = 0, y_offset = 0, dy_offset = 0, dx_offset = 0;
  std::uint32_t w_offset = 0, dw_offset = 0;
  std::uint64_t seed = 1;
  float eps = 1e-5f;

  std::uint32_t row_stride() const { return stride != 0 ? stride : width; }
  std::string describe() const {
    std::ostringstream s;
    s << (layer ? "layer norm " : "RMS norm ") << kernels::dtype_name(dtype) << " (weights "
      << kernels::dtype_name(weight_dtype) << "), width " << width << ", batch " << batch
      << ", stride " << row_stride();
    if (x_offset + y_offset + dy_offset + dx_offset + w_offset + dw_offset != 0) {
      s << ", byte offsets x " << x_offset << " y " << y_offset << " dy " << dy_offset << " dx "
        << dx_offset << " w " << w_offset << " dw/db " << dw_offset;
    }
    return s.str();
  }
};

// Inputs and references: CPU only, safe on any thread.
struct HostCase {
  kernels::NormInputs in;
  std::vector<double> y, mean, rstd, dx, dw, db;
  std::vector<float> mean_in, rstd_in;  // what the backward reads (f32, from the reference)
  // f32 cases: per element, the magnitude of what computing it in f32 rounds and cancels.
  std::vector<double> y_scale, dx_scale, dw_scale, db_scale;
};

// f32 outputs are held to 1e-5 of the largest |reference| or, where that is larger, 8 units of f32
// roundoff (2^-24) times the magnitude of what the element's computation rounds and cancels. The
// second bound takes over only where f32 itself cannot do better: a row whose variance is near eps
// (widths 1 to 3) amplifies the rounding of x − mean by rstd, and the terms of dx cancel to nearly
// nothing. dw and db add their rows' rounding in quadrature. A wrong index or a lost term is orders
// of magnitude above either bound.
inline void add_f32_scales(const NormCase& c, HostCase& h) {
  const std::uint32_t n = c.width, s = c.row_stride();
  const auto& x = h.in.x.values;
  const auto& w = h.in.w.values;
  const auto& dy = h.in.dy.values;
  h.y_scale.assign(static_cast<std::size_t>(c.batch) * n, 0);
  h.dx_scale.assign(h.y_scale.size(), 0);
  h.dw_scale.assign(n, 0);
  h.db_scale.assign(n, 0);
  std::vector<double> xhat(n), err(n), g(n);
  for (std::uint32_t row = 0; row < c.batch; ++row) {
    const double r = h.rstd[row];
    const double mu = c.layer ? h.mean[row] : 0.0;
    double c1 = 0, c2 = 0, mean_g_err = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      const double xi = x[static_cast<std::size_t>(row) * s + i];
      const double dyi = dy[static_cast<std::size_t>(row) * s + i];
      xhat[i] = (xi - mu) * r;
      err[i] =
          c.layer ? r * (std::abs(xi) + std::abs(mu)) + std::abs(xhat[i]) : 2 * std::abs(xhat[i]);
      g[i] = w[i] * dyi;
      c1 += xhat[i] * g[i] / n;
      c2 += c.layer ? g[i] / n : 0.0;
      mean_g_err += std::abs(g[i]) * err[i] / n;
      const double term = std::abs(dyi) * (err[i] + std::abs(xhat[i]));
      h.dw_scale[i] += term * term;
      h.db_scale[i] += dyi * dyi;
    }
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::size_t at = static_cast<std::size_t>(row) * n + i;
      h.y_scale[at] = std::abs(w[i]) * err[i] + std::abs(h.y[at]);
      h.dx_scale[at] = r * (std::abs(g[i]) + std::abs(xhat[i] * c1) + std::abs(c2)) +
                       r * std::abs(c1) * err[i] + r * std::abs(xhat[i]) * mean_g_err +
                       std::abs(h.dx[at]);
    }
  }
  for (double& v : h.dw_scale) v = std::sqrt(v);
  for (double& v : h.db_scale) v = std::sqrt(v);
}

inline HostCase make_host_case(const NormCase& c) {
  HostCase h;
  const auto kind = c.layer ? kernels::NormKind::LayerNormFwd : kernels::NormKind::RmsNormFwd;
  h.in =
      kernels::make_inputs(kind, c.dtype, c.weight_dtype, c.batch, c.width, c.row_stride(), c.seed);
  const auto& x = h.in.x.values;
  const auto& w = h.in.w.values;
  const auto& dy = h.in.dy.values;
  const std::uint32_t s = c.row_stride();
  if (c.layer) {
    auto f = kernels::layer_norm_fwd_ref(x, w, h.in.b.values, c.batch, c.width, s, c.eps);
    auto b = kernels::layer_norm_bwd_ref(x, w, dy, c.batch, c.width, s, c.eps);
    h.y = std::move(f.y);
    h.mean = std::move(f.mean);
    h.rstd = std::move(f.rstd);
    h.dx = std::move(b.dx);
    h.dw = std::move(b.dw);
    h.db = std::move(b.db);
    h.mean_in = kernels::to_f32(h.mean);
  } else {
    auto f = kernels::rms_norm_fwd_ref(x, w, c.batch, c.width, s, c.eps);
    auto b = kernels::rms_norm_bwd_ref(x, w, dy, c.batch, c.width, s, c.eps);
    h.y = std::move(f.y);
    h.rstd = std::move(f.rstd);
    h.dx = std::move(b.dx);
    h.dw = std::move(b.dw);
  }
  h.rstd_in = kernels::to_f32(h.rstd);
  if (c.dtype == DType::F32) add_f32_scales(c, h);
  return h;
}

// One output measured: the reference's Deviation, allclose violations (16-bit y and dx), and
// values written into the padding between rows.
struct Measured {
  kernels::Deviation dev;
  std::size_t violations = 0;   // outside the bound
  std::size_t conditioned = 0;  // f32: beyond 1e-5 of the largest |reference|, within f32 reach
  std::size_t padding_written = 0;
  bool present = false;
};

struct CaseResult {
  Measured y, mean, rstd, dx, dw, db;
  Measured dx_again, dw_again, db_again;  // the second backward call
  bool dwdb_identical = true;
  std::uint32_t forward_vec = 0, backward_vec = 0;
};

// The seeds' allclose for 16-bit outputs: |got − want| ≤ atol + rtol·|want|, atol 1e-2, and rtol
// one ulp of the output format (2^-10 for f16, 2^-7 for bf16) rather than torch's 1e-5, which is
// meant for f32: a correctly rounded f16 above 16 (bf16 above 2) may already be 1e-2 away.
inline double allclose_rtol(DType d) {
  return d == DType::BF16 ? 0x1p-7 : 0x1p-10;
}
inline constexpr double kAtol = 1e-2;
inline constexpr double kF32Rel = 1e-5;
inline constexpr double kF32Roundoff = 8 * 0x1p-24;

// A device array at a byte offset inside its own allocation.
struct DeviceArray {
  runtime::DeviceBuffer<std::byte> buffer;
  std::uint64_t address = 0;
  std::size_t count = 0;
  DType dtype = DType::F32;

  DeviceArray(const runtime::Context& ctx, std::size_t n, DType d, std::uint32_t offset = 0)
      : buffer(ctx, n * kernels::dtype_bytes(d) + offset + 16),
        address(buffer.address() + offset),
        count(n),
        dtype(d) {}
  std::size_t bytes() const {
    return count * static_cast<std::size_t>(kernels::dtype_bytes(dtype));
  }
  runtime::DeviceView view() const {
    runtime::DeviceView v(address);
    v.bytes = bytes();
    v.element_bytes = static_cast<std::uint32_t>(kernels::dtype_bytes(dtype));
    return v;
  }
  void upload(const runtime::Context& ctx, const std::vector<std::byte>& host) {
    REQUIRE(host.size() == bytes());
    runtime::copy_to_device(ctx, address, host.data(), host.size());
  }
  void upload_floats(const runtime::Context& ctx, const std::vector<float>& host) {
    upload(ctx, kernels::from_floats(host, dtype));
  }
  void poison(const runtime::Context& ctx, runtime::StreamRef stream) {
    if (dtype == DType::F32) {
      runtime::fill_u32(ctx, address, 0x7FC00000u, count, stream);
    } else {
      runtime::fill_u16(ctx, address, dtype == DType::F16 ? 0x7E00 : 0x7FC0, count, stream);
    }
  }
  std::vector<std::byte> download_bytes(const runtime::Context& ctx) const {
    std::vector<std::byte> host(bytes());
    runtime::copy_to_host(ctx, host.data(), address, host.size());
    return host;
  }
  std::vector<float> download(const runtime::Context& ctx) const {
    return kernels::to_floats(download_bytes(ctx), dtype, count);
  }
};

// `allclose`: the 16-bit rule above; else with `scale` the f32 rule, else only Deviation.
inline Measured measure(const std::vector<float>& got, const std::vector<double>& want, DType d,
                        bool allclose, const std::vector<double>* scale = nullptr) {
  Measured m;
  m.present = true;
  m.dev = kernels::deviation(got, want);
  double largest = 0;
  for (double v : want) largest = std::max(largest, std::abs(v));
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e = std::abs(static_cast<double>(got[i]) - want[i]);
    if (allclose) {
      if (!(e <= kAtol + allclose_rtol(d) * std::abs(want[i]))) ++m.violations;
    } else if (scale != nullptr) {
      if (!(e <= std::max(kF32Rel * largest, kF32Roundoff * (*scale)[i]))) ++m.violations;
      if (!(e <= kF32Rel * largest)) ++m.conditioned;
    }
  }
  if (scale != nullptr) m.conditioned -= std::min(m.conditioned, m.violations);
  return m;
}

// Rows of a strided output, measured; the padding must still hold the poison (NaN).
inline Measured measure_rows(const std::vector<float>& strided, const std::vector<double>& want,
                             const NormCase& c, const std::vector<double>* scale = nullptr) {
  const std::uint32_t s = c.row_stride();
  Measured m = measure(kernels::dense_rows(strided, c.batch, c.width, s), want, c.dtype,
                       c.dtype != DType::F32, scale);
  for (std::uint32_t row = 0; row + 1 < c.batch; ++row) {
    for (std::uint32_t i = c.width; i < s; ++i) {
      if (!std::isnan(strided[static_cast<std::size_t>(row) * s + i])) ++m.padding_written;
    }
  }
  return m;
}

// Forward, backward, backward again, through `ln` or `rms` (whichever is set).
inline CaseResult run_case(const runtime::Context& ctx, runtime::LayerNorm* ln,
                           runtime::RmsNorm* rms, const NormCase& c, const HostCase& h,
                           runtime::StreamRef stream) {
  const std::size_t rows = static_cast<std::size_t>(c.batch - 1) * c.row_stride() + c.width;
  DeviceArray x(ctx, rows, c.dtype, c.x_offset), dy(ctx, rows, c.dtype, c.dy_offset);
  DeviceArray y(ctx, rows, c.dtype, c.y_offset), dx(ctx, rows, c.dtype, c.dx_offset);
  DeviceArray w(ctx, c.width, c.weight_dtype, c.w_offset),
      b(ctx, c.width, c.weight_dtype, c.w_offset);
  DeviceArray dw(ctx, c.width, c.weight_dtype, c.dw_offset),
      db(ctx, c.width, c.weight_dtype, c.dw_offset);
  DeviceArray mean(ctx, c.batch, DType::F32), rstd(ctx, c.batch, DType::F32);
  DeviceArray mean_in(ctx, c.batch, DType::F32), rstd_in(ctx, c.batch, DType::F32);
  const auto prefix = [&](const std::vector<std::byte>& all, DType d) {
    return std::vector<std::byte>(
        all.begin(), all.begin() + static_cast<std::ptrdiff_t>(
                                       rows * static_cast<std::size_t>(kernels::dtype_bytes(d))));
  };
  x.upload(ctx, prefix(h.in.x.bytes, c.dtype));
  dy.upload(ctx, prefix(h.in.dy.bytes, c.dtype));
  w.upload(ctx, h.in.w.bytes);
  if (c.layer) {
    b.upload(ctx, h.in.b.bytes);
    mean_in.upload_floats(ctx, h.mean_in);
  }
  rstd_in.upload_floats(ctx, h.rstd_in);

  CaseResult r;
  // Forward.
  for (DeviceArray* a : {&y, &mean, &rstd}) a->poison(ctx, stream);
  ctx.synchronize();
  if (c.layer) {
    ln->forward({.x = x.view(),
                 .w = w.view(),
                 .b = b.view(),
                 .y = y.view(),
                 .mean = mean.view(),
                 .rstd = rstd.view(),
                 .batch = c.batch,
                 .stride = c.row_stride(),
                 .eps = c.eps,
                 .stream = stream});
    r.forward_vec = ln->last_vector_elems();
  } else {
    rms->forward({.x = x.view(),
                  .w = w.view(),
                  .y = y.view(),
                  .rstd = rstd.view(),
                  .batch = c.batch,
                  .stride = c.row_stride(),
                  .eps = c.eps,
                  .stream = stream});
    r.forward_vec = rms->last_vector_elems();
  }
  ctx.synchronize();
  const bool f32 = c.dtype == DType::F32;
  r.y = measure_rows(y.download(ctx), h.y, c, f32 ? &h.y_scale : nullptr);
  r.rstd = measure(rstd.download(ctx), h.rstd, DType::F32, false);
  if (c.layer) r.mean = measure(mean.download(ctx), h.mean, DType::F32, false);

  // Backward, twice.
  std::vector<std::byte> first_dw, first_db;
  for (int run = 0; run < 2; ++run) {
    for (DeviceArray* a : {&dx, &dw, &db}) a->poison(ctx, stream);
    if (c.layer) {
      ln->backward({.dy = dy.view(),
                    .x = x.view(),
                    .w = w.view(),
                    .mean = mean_in.view(),
                    .rstd = rstd_in.view(),
                    .dx = dx.view(),
                    .dw = dw.view(),
                    .db = db.view(),
                    .batch = c.batch,
                    .stride = c.row_stride(),
                    .stream = stream});
      r.backward_vec = ln->last_vector_elems();
    } else {
      rms->backward({.dy = dy.view(),
                     .x = x.view(),
                     .w = w.view(),
                     .rstd = rstd_in.view(),
                     .dx = dx.view(),
                     .dw = dw.view(),
                     .batch = c.batch,
                     .stride = c.row_stride(),
                     .stream = stream});
      r.backward_vec = rms->last_vector_elems();
    }
    ctx.synchronize();
    if (run == 0) {
      r.dx = measure_rows(dx.download(ctx), h.dx, c, f32 ? &h.dx_scale : nullptr);
      first_dw = dw.download_bytes(ctx);
      r.dw = measure(kernels::to_floats(first_dw, c.weight_dtype), h.dw, c.weight_dtype, false,
                     f32 ? &h.dw_scale : nullptr);
      if (c.layer) {
        first_db = db.download_bytes(ctx);
        r.db = measure(kernels::to_floats(first_db, c.weight_dtype), h.db, c.weight_dtype, false,
                       f32 ? &h.db_scale : nullptr);
      }
    } else {
      // The second call against the reference too: state one call leaves (a row counter) must
      // not spoil the next.
      r.dx_again = measure_rows(dx.download(ctx), h.dx, c, f32 ? &h.dx_scale : nullptr);
      const std::vector<std::byte> second_dw = dw.download_bytes(ctx);
      r.dw_again = measure(kernels::to_floats(second_dw, c.weight_dtype), h.dw, c.weight_dtype,
                           false, f32 ? &h.dw_scale : nullptr);
      std::vector<std::byte> second_db;
      if (c.layer) {
        second_db = db.download_bytes(ctx);
        r.db_again = measure(kernels::to_floats(second_db, c.weight_dtype), h.db, c.weight_dtype,
                             false, f32 ? &h.db_scale : nullptr);
      }
      r.dwdb_identical = second_dw == first_dw && (!c.layer || second_db == first_db);
    }
  }
  return r;
}

// The bounds of the issue: f32 outputs within 1e-5 of the largest |reference| (plus f32's own
// roundoff, above); 16-bit y and dx allclose; 16-bit dw/db within 1e-2 of their largest magnitude;
// mean/rstd (always f32) within 1e-5 relative.
inline void check_case(const NormCase& c, const CaseResult& r) {
  INFO(c.describe());
  const bool f32 = c.dtype == DType::F32;
  for (const auto& [name, m] : {std::pair<const char*, const Measured&>{"y", r.y},
                                {"dx", r.dx},
                                {"dx (second call)", r.dx_again}}) {
    INFO(name << ": max abs error " << m.dev.max_abs << ", max rel error " << m.dev.max_rel
              << " at " << m.dev.worst << ", " << m.violations << " outside the bound, "
              << m.dev.nonfinite << " non-finite, " << m.padding_written
              << " padding values written");
    CHECK(m.dev.nonfinite == 0);
    CHECK(m.padding_written == 0);
    CHECK(m.violations == 0);
  }
  for (const auto& [name, m] :
       {std::pair<const char*, const Measured&>{"mean", r.mean}, {"rstd", r.rstd}}) {
    if (!m.present) continue;
    INFO(name << ": max rel error " << m.dev.max_rel << ", " << m.dev.nonfinite << " non-finite");
    CHECK(m.dev.nonfinite == 0);
    CHECK(m.dev.max_rel <= 1e-5);
  }
  for (const auto& [name, m] : {std::pair<const char*, const Measured&>{"dw", r.dw},
                                {"db", r.db},
                                {"dw (second call)", r.dw_again},
                                {"db (second call)", r.db_again}}) {
    if (!m.present) continue;
    INFO(name << ": max rel error " << m.dev.max_rel << ", " << m.violations
              << " outside the f32 bound, " << m.dev.nonfinite << " non-finite");
    CHECK(m.dev.nonfinite == 0);
    if (f32) {
      CHECK(m.violations == 0);
    } else {
      CHECK(m.dev.max_rel <= 1e-2);
    }
  }
  if (c.same_sums) CHECK(r.dwdb_identical);
}

// The worst numbers seen per (norm, dtype, weight dtype), for the summary the sweep prints.
struct Worst {
  double y_abs = 0, y_rel = 0, dx_abs = 0, dx_rel = 0, dw_rel = 0, db_rel = 0, stats_rel = 0;
  std::size_t cases = 0;
  std::size_t conditioned = 0;  // f32 elements beyond 1e-5 but within f32's roundoff
  void add(const CaseResult& r) {
    ++cases;
    conditioned += r.y.conditioned + r.dx.conditioned + r.dw.conditioned + r.db.conditioned;
    y_abs = std::max(y_abs, r.y.dev.max_abs);
    y_rel = std::max(y_rel, r.y.dev.max_rel);
    dx_abs = std::max(dx_abs, r.dx.dev.max_abs);
    dx_rel = std::max(dx_rel, r.dx.dev.max_rel);
    dw_rel = std::max(dw_rel, r.dw.dev.max_rel);
    db_rel = std::max(db_rel, r.db.dev.max_rel);
    stats_rel = std::max({stats_rel, r.mean.dev.max_rel, r.rstd.dev.max_rel});
  }
};

}  // namespace ptxdsl::test
