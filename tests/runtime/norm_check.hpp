#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ptxdsl/kernels/check_outputs.hpp"
#include "ptxdsl/kernels/inputs.hpp"
#include "ptxdsl/kernels/reference.hpp"
#include "ptxdsl/runtime.hpp"
#include "ptxdsl/runtime/norms.hpp"

// Runs a norm's forward and backward on the GPU through the host API and judges every output
// against the float64 reference by check_outputs: fresh inputs, outputs poisoned with NaN before
// each launch, the padding between rows checked untouched, dw/db compared bit for bit across two
// runs.
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
  runtime::NormType type() const { return {layer, dtype, weight_dtype, width}; }
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
  kernels::NormProblem problem(const NormCase& c) const {
    return {.layer = c.layer,
            .batch = c.batch,
            .width = c.width,
            .stride = c.row_stride(),
            .eps = c.eps,
            .x = in.x.values,
            .w = in.w.values,
            .b = in.b.values,
            .dy = in.dy.values,
            .dh = {}};
  }
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

// One output measured: check_outputs' verdict and values written into the padding between rows.
struct Measured {
  kernels::OutputVerdict verdict;
  std::size_t padding_written = 0;
  bool present = false;
};

struct CaseResult {
  Measured y, mean, rstd, dx, dw, db;
  Measured dx_again, dw_again, db_again;  // the second backward call
  bool dwdb_identical = true;
  std::uint32_t forward_vec = 0, backward_vec = 0;
};

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

// One output against its reference, by the one accuracy rule.
inline Measured measure(const NormCase& c, const HostCase& h, const char* name, DType d,
                        const std::vector<float>& got, const std::vector<double>& want) {
  Measured m;
  m.present = true;
  const kernels::NormOutput out[] = {{name, d, got, want}};
  m.verdict = kernels::check_outputs(h.problem(c), out).outputs[0];
  return m;
}

// Rows of a strided output, measured; the padding must still hold the poison (NaN).
inline Measured measure_rows(const NormCase& c, const HostCase& h, const char* name,
                             const std::vector<float>& strided, const std::vector<double>& want) {
  const std::uint32_t s = c.row_stride();
  Measured m =
      measure(c, h, name, c.dtype, kernels::dense_rows(strided, c.batch, c.width, s), want);
  for (std::uint32_t row = 0; row + 1 < c.batch; ++row) {
    for (std::uint32_t i = c.width; i < s; ++i) {
      if (!std::isnan(strided[static_cast<std::size_t>(row) * s + i])) ++m.padding_written;
    }
  }
  return m;
}

// A case's device arrays at its byte offsets, inputs uploaded; mean_in and rstd_in are what the
// backward reads (the reference's, in f32), mean and rstd what the forward writes.
struct CaseBuffers {
  std::size_t rows;
  DeviceArray x, dy, y, dx, w, b, dw, db, mean, rstd, mean_in, rstd_in;

  CaseBuffers(const runtime::Context& ctx, const NormCase& c, const HostCase& h)
      : rows(static_cast<std::size_t>(c.batch - 1) * c.row_stride() + c.width),
        x(ctx, rows, c.dtype, c.x_offset),
        dy(ctx, rows, c.dtype, c.dy_offset),
        y(ctx, rows, c.dtype, c.y_offset),
        dx(ctx, rows, c.dtype, c.dx_offset),
        w(ctx, c.width, c.weight_dtype, c.w_offset),
        b(ctx, c.width, c.weight_dtype, c.w_offset),
        dw(ctx, c.width, c.weight_dtype, c.dw_offset),
        db(ctx, c.width, c.weight_dtype, c.dw_offset),
        mean(ctx, c.batch, DType::F32),
        rstd(ctx, c.batch, DType::F32),
        mean_in(ctx, c.batch, DType::F32),
        rstd_in(ctx, c.batch, DType::F32) {
    const auto prefix = [&](const std::vector<std::byte>& all) {
      return std::vector<std::byte>(all.begin(),
                                    all.begin() + static_cast<std::ptrdiff_t>(x.bytes()));
    };
    x.upload(ctx, prefix(h.in.x.bytes));
    dy.upload(ctx, prefix(h.in.dy.bytes));
    w.upload(ctx, h.in.w.bytes);
    if (c.layer) {
      b.upload(ctx, h.in.b.bytes);
      mean_in.upload_floats(ctx, h.mean_in);
    }
    rstd_in.upload_floats(ctx, h.rstd_in);
  }

  void poison_forward(const runtime::Context& ctx, runtime::StreamRef stream) {
    for (DeviceArray* a : {&y, &mean, &rstd}) a->poison(ctx, stream);
  }
  void poison_backward(const runtime::Context& ctx, runtime::StreamRef stream) {
    for (DeviceArray* a : {&dx, &dw, &db}) a->poison(ctx, stream);
  }

  // The calls of the case's norm (layer norm's b, mean and db are RMS norm's empty views).
  runtime::NormCall forward_call(const NormCase& c, runtime::StreamRef stream) const {
    return {.direction = runtime::Direction::Forward,
            .x = x.view(),
            .w = w.view(),
            .b = c.layer ? b.view() : runtime::DeviceView{},
            .y = y.view(),
            .mean = c.layer ? mean.view() : runtime::DeviceView{},
            .rstd = rstd.view(),
            .batch = c.batch,
            .stride = c.row_stride(),
            .eps = c.eps,
            .stream = stream};
  }
  runtime::NormCall backward_call(const NormCase& c, runtime::StreamRef stream) const {
    return {.direction = runtime::Direction::Backward,
            .x = x.view(),
            .w = w.view(),
            .mean = c.layer ? mean_in.view() : runtime::DeviceView{},
            .rstd = rstd_in.view(),
            .dy = dy.view(),
            .dx = dx.view(),
            .dw = dw.view(),
            .db = c.layer ? db.view() : runtime::DeviceView{},
            .batch = c.batch,
            .stride = c.row_stride(),
            .stream = stream};
  }
};

// Forward, backward, backward again, through `norm` (of the case's type).
inline CaseResult run_case(const runtime::Context& ctx, runtime::Norm& norm, const NormCase& c,
                           const HostCase& h, runtime::StreamRef stream) {
  CaseBuffers d(ctx, c, h);
  DeviceArray &y = d.y, &mean = d.mean, &rstd = d.rstd, &dx = d.dx, &dw = d.dw, &db = d.db;
  CaseResult r;
  // Forward.
  d.poison_forward(ctx, stream);
  ctx.synchronize();
  norm.call(d.forward_call(c, stream));
  r.forward_vec = norm.last_vector_elems();
  ctx.synchronize();
  r.y = measure_rows(c, h, "y", y.download(ctx), h.y);
  r.rstd = measure(c, h, "rstd", DType::F32, rstd.download(ctx), h.rstd);
  if (c.layer) r.mean = measure(c, h, "mean", DType::F32, mean.download(ctx), h.mean);

  // Backward, twice.
  std::vector<std::byte> first_dw, first_db;
  for (int run = 0; run < 2; ++run) {
    d.poison_backward(ctx, stream);
    norm.call(d.backward_call(c, stream));
    r.backward_vec = norm.last_vector_elems();
    ctx.synchronize();
    if (run == 0) {
      r.dx = measure_rows(c, h, "dx", dx.download(ctx), h.dx);
      first_dw = dw.download_bytes(ctx);
      r.dw =
          measure(c, h, "dw", c.weight_dtype, kernels::to_floats(first_dw, c.weight_dtype), h.dw);
      if (c.layer) {
        first_db = db.download_bytes(ctx);
        r.db =
            measure(c, h, "db", c.weight_dtype, kernels::to_floats(first_db, c.weight_dtype), h.db);
      }
    } else {
      // The second call against the reference too: state one call leaves (a row counter) must
      // not spoil the next.
      r.dx_again = measure_rows(c, h, "dx", dx.download(ctx), h.dx);
      const std::vector<std::byte> second_dw = dw.download_bytes(ctx);
      r.dw_again =
          measure(c, h, "dw", c.weight_dtype, kernels::to_floats(second_dw, c.weight_dtype), h.dw);
      std::vector<std::byte> second_db;
      if (c.layer) {
        second_db = db.download_bytes(ctx);
        r.db_again = measure(c, h, "db", c.weight_dtype,
                             kernels::to_floats(second_db, c.weight_dtype), h.db);
      }
      r.dwdb_identical = second_dw == first_dw && (!c.layer || second_db == first_db);
    }
  }
  return r;
}

// Every output by the one accuracy rule (check_outputs), no padding written, and dw/db the same
// bits call after call.
inline bool passed(const CaseResult& r, bool same_sums) {
  for (const Measured* m :
       {&r.y, &r.mean, &r.rstd, &r.dx, &r.dw, &r.db, &r.dx_again, &r.dw_again, &r.db_again}) {
    if (m->present && (!m->verdict.pass || m->padding_written != 0)) return false;
  }
  return !same_sums || r.dwdb_identical;
}

inline void check_case(const NormCase& c, const CaseResult& r) {
  INFO(c.describe());
  for (const auto& [name, m] : {std::pair<const char*, const Measured&>{"y", r.y},
                                {"mean", r.mean},
                                {"rstd", r.rstd},
                                {"dx", r.dx},
                                {"dw", r.dw},
                                {"db", r.db},
                                {"dx (second call)", r.dx_again},
                                {"dw (second call)", r.dw_again},
                                {"db (second call)", r.db_again}}) {
    if (!m.present) continue;
    const kernels::OutputVerdict& v = m.verdict;
    INFO(name << ": " << v.failures << " over their bound, " << v.nonfinite
              << " non-finite; worst at " << v.worst << ": got " << v.got << ", want " << v.want
              << ", error " << v.error << ", bound " << v.bound << "; " << m.padding_written
              << " padding values written");
    CHECK(v.pass);
    CHECK(m.padding_written == 0);
  }
  if (c.same_sums) CHECK(r.dwdb_identical);
}

// The worst numbers seen per (norm, dtype, weight dtype), for the summary the sweep prints.
struct Worst {
  double y_abs = 0, y_rel = 0, dx_abs = 0, dx_rel = 0, dw_rel = 0, db_rel = 0, stats_rel = 0;
  std::size_t cases = 0;
  void add(const CaseResult& r) {
    ++cases;
    y_abs = std::max(y_abs, r.y.verdict.max_abs);
    y_rel = std::max(y_rel, r.y.verdict.max_rel);
    dx_abs = std::max(dx_abs, r.dx.verdict.max_abs);
    dx_rel = std::max(dx_rel, r.dx.verdict.max_rel);
    dw_rel = std::max(dw_rel, r.dw.verdict.max_rel);
    db_rel = std::max(db_rel, r.db.verdict.max_rel);
    stats_rel = std::max({stats_rel, r.mean.verdict.max_rel, r.rstd.verdict.max_rel});
  }
};

}  // namespace ptxdsl::test
