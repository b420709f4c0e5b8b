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
};

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
  return h;
}

// One output measured: the reference's Deviation, allclose violations (16-bit y and dx), and
// values written into the padding between rows.
struct Measured {
  kernels::Deviation dev;
  std::size_t violations = 0;
  std::size_t padding_written = 0;
  bool present = false;
};

struct CaseResult {
  Measured y, mean, rstd, dx, dw, db;
  bool dwdb_identical = true;
  std::uint32_t forward_vec = 0, backward_vec = 0;
};

// The seeds' allclose for 16-bit outputs: |got − want| ≤ atol + rtol·|want|, atol 1e-2; rtol is
// torch's 1e-5 for f16 and 2^-8 (one bf16 rounding) for bf16, whose spacing above 2 exceeds 1e-2.
inline double allclose_rtol(DType d) {
  return d == DType::BF16 ? 0x1p-8 : 1e-5;
}
inline constexpr double kAtol = 1e-2;

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

inline Measured measure(const std::vector<float>& got, const std::vector<double>& want, DType d,
                        bool allclose) {
  Measured m;
  m.present = true;
  m.dev = kernels::deviation(got, want);
  if (allclose) {
    const double rtol = allclose_rtol(d);
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (!(std::abs(static_cast<double>(got[i]) - want[i]) <= kAtol + rtol * std::abs(want[i]))) {
        ++m.violations;
      }
    }
  }
  return m;
}

// Rows of a strided output, measured; the padding must still hold the poison (NaN).
inline Measured measure_rows(const std::vector<float>& strided, const std::vector<double>& want,
                             const NormCase& c) {
  const std::uint32_t s = c.row_stride();
  Measured m = measure(kernels::dense_rows(strided, c.batch, c.width, s), want, c.dtype,
                       c.dtype != DType::F32);
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
  r.y = measure_rows(y.download(ctx), h.y, c);
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
      r.dx = measure_rows(dx.download(ctx), h.dx, c);
      first_dw = dw.download_bytes(ctx);
      r.dw = measure(kernels::to_floats(first_dw, c.weight_dtype), h.dw, c.weight_dtype, false);
      if (c.layer) {
        first_db = db.download_bytes(ctx);
        r.db = measure(kernels::to_floats(first_db, c.weight_dtype), h.db, c.weight_dtype, false);
      }
    } else {
      r.dwdb_identical =
          dw.download_bytes(ctx) == first_dw && (!c.layer || db.download_bytes(ctx) == first_db);
    }
  }
  return r;
}

// The bounds of the issue: f32 outputs ≤ 1e-5 relative max error; 16-bit y and dx allclose;
// 16-bit dw/db within 1e-2 of their largest magnitude; mean/rstd (f32) ≤ 1e-5 relative.
inline void check_case(const NormCase& c, const CaseResult& r) {
  INFO(c.describe());
  const bool f32 = c.dtype == DType::F32;
  for (const auto& [name, m] : {std::pair<const char*, const Measured&>{"y", r.y}, {"dx", r.dx}}) {
    INFO(name << ": max abs error " << m.dev.max_abs << ", max rel error " << m.dev.max_rel
              << " at " << m.dev.worst << ", " << m.violations << " allclose violations, "
              << m.dev.nonfinite << " non-finite, " << m.padding_written
              << " padding values written");
    CHECK(m.dev.nonfinite == 0);
    CHECK(m.padding_written == 0);
    if (f32) {
      CHECK(m.dev.max_rel <= 1e-5);
    } else {
      CHECK(m.violations == 0);
    }
  }
  for (const auto& [name, m] :
       {std::pair<const char*, const Measured&>{"mean", r.mean}, {"rstd", r.rstd}}) {
    if (!m.present) continue;
    INFO(name << ": max rel error " << m.dev.max_rel << ", " << m.dev.nonfinite << " non-finite");
    CHECK(m.dev.nonfinite == 0);
    CHECK(m.dev.max_rel <= 1e-5);
  }
  const double dw_bound = f32 && c.weight_dtype == DType::F32 ? 1e-5 : 1e-2;
  for (const auto& [name, m] :
       {std::pair<const char*, const Measured&>{"dw", r.dw}, {"db", r.db}}) {
    if (!m.present) continue;
    INFO(name << ": max rel error " << m.dev.max_rel << " (bound " << dw_bound << "), "
              << m.dev.nonfinite << " non-finite");
    CHECK(m.dev.nonfinite == 0);
    CHECK(m.dev.max_rel <= dw_bound);
  }
  CHECK(r.dwdb_identical);
}

// The worst numbers seen per (norm, dtype, weight dtype), for the summary the sweep prints.
struct Worst {
  double y_abs = 0, y_rel = 0, dx_abs = 0, dx_rel = 0, dw_rel = 0, db_rel = 0, stats_rel = 0;
  std::size_t cases = 0;
  void add(const CaseResult& r) {
    ++cases;
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
