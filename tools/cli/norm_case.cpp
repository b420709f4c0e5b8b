#include "norm_case.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <thread>

#include "ptxdsl/dsl/executor.hpp"
#include "ptxdsl/kernels/check_outputs.hpp"
#include "ptxdsl/kernels/cpu_run.hpp"
#include "ptxdsl/runtime/stream.hpp"

namespace ptxdsl::cli {

using kernels::DType;
using kernels::NormKind;

namespace {

// Row ranges for the references, so that the float64 check of a large case uses every core.
std::vector<std::pair<std::uint32_t, std::uint32_t>> row_chunks(std::uint32_t batch,
                                                                std::uint32_t width) {
  const std::uint64_t elements = std::uint64_t{batch} * width;
  const unsigned cores = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  const auto n = static_cast<std::uint32_t>(
      std::clamp<std::uint64_t>(elements >> 20, 1, std::min<std::uint64_t>(cores, batch)));
  std::vector<std::pair<std::uint32_t, std::uint32_t>> chunks;
  const std::uint32_t per = (batch + n - 1) / n;
  for (std::uint32_t r = 0; r < batch; r += per) chunks.emplace_back(r, std::min(per, batch - r));
  return chunks;
}

template <class F>
void parallel_chunks(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& chunks, F&& f) {
  if (chunks.size() == 1) {
    f(0, chunks[0].first, chunks[0].second);
    return;
  }
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(chunks.size());
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    threads.emplace_back([&, i] {
      try {
        f(i, chunks[i].first, chunks[i].second);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

void copy_into(std::vector<double>& dst, std::size_t offset, const std::vector<double>& src) {
  std::copy(src.begin(), src.end(), dst.begin() + static_cast<std::ptrdiff_t>(offset));
}

void forward_reference(NormData& d) {
  const std::uint32_t width = d.spec.width, stride = width, batch = d.batch;
  const bool ln = is_layer_norm(d.spec.kind);
  d.y.assign(std::size_t{batch} * width, 0);
  if (ln) d.mean.assign(batch, 0);
  d.rstd.assign(batch, 0);
  const std::span<const float> x = d.in.x.values, w = d.in.w.values, b = d.in.b.values;
  parallel_chunks(row_chunks(batch, width), [&](std::size_t, std::uint32_t r0, std::uint32_t rows) {
    const auto xs = x.subspan(std::size_t{r0} * stride, std::size_t{rows} * stride);
    if (ln) {
      const kernels::LayerNormFwdRef r =
          kernels::layer_norm_fwd_ref(xs, w, b, rows, width, stride, kEps);
      copy_into(d.y, std::size_t{r0} * width, r.y);
      copy_into(d.mean, r0, r.mean);
      copy_into(d.rstd, r0, r.rstd);
    } else {
      const kernels::RmsNormFwdRef r = kernels::rms_norm_fwd_ref(xs, w, rows, width, stride, kEps);
      copy_into(d.y, std::size_t{r0} * width, r.y);
      copy_into(d.rstd, r0, r.rstd);
    }
  });
}

void backward_reference(NormData& d) {
  const std::uint32_t width = d.spec.width, stride = width, batch = d.batch;
  const bool ln = is_layer_norm(d.spec.kind);
  const auto chunks = row_chunks(batch, width);
  d.dx.assign(std::size_t{batch} * width, 0);
  std::vector<std::vector<double>> dw(chunks.size()), db(chunks.size());
  const std::span<const float> x = d.in.x.values, w = d.in.w.values, dy = d.in.dy.values;
  parallel_chunks(chunks, [&](std::size_t i, std::uint32_t r0, std::uint32_t rows) {
    const auto xs = x.subspan(std::size_t{r0} * stride, std::size_t{rows} * stride);
    const auto dys = dy.subspan(std::size_t{r0} * stride, std::size_t{rows} * stride);
    if (ln) {
      kernels::LayerNormBwdRef r =
          kernels::layer_norm_bwd_ref(xs, w, dys, rows, width, stride, kEps);
      copy_into(d.dx, std::size_t{r0} * width, r.dx);
      dw[i] = std::move(r.dw);
      db[i] = std::move(r.db);
    } else {
      kernels::RmsNormBwdRef r = kernels::rms_norm_bwd_ref(xs, w, dys, rows, width, stride, kEps);
      copy_into(d.dx, std::size_t{r0} * width, r.dx);
      dw[i] = std::move(r.dw);
    }
  });
  // Column sums over the chunks, in chunk order: the same numbers however many cores ran them.
  d.dw.assign(width, 0);
  if (ln) d.db.assign(width, 0);
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    for (std::uint32_t c = 0; c < width; ++c) {
      d.dw[c] += dw[i][c];
      if (ln) d.db[c] += db[i][c];
    }
  }
}

kernels::HostTensor f32_tensor(const std::vector<double>& values) {
  const std::vector<float> f = kernels::to_f32(values);
  return kernels::make_tensor(f, DType::F32);
}

// Output names, dtypes and element counts of a kernel.
struct OutputShape {
  const char* name;
  DType dtype;
  std::size_t count;
};
std::vector<OutputShape> output_shapes(const kernels::NormSpec& s, std::uint32_t batch) {
  const std::size_t rows = std::size_t{batch} * s.width;
  switch (s.kind) {
    case NormKind::LayerNormFwd:
      return {{"y", s.dtype, rows}, {"mean", DType::F32, batch}, {"rstd", DType::F32, batch}};
    case NormKind::RmsNormFwd:
      return {{"y", s.dtype, rows}, {"rstd", DType::F32, batch}};
    case NormKind::LayerNormBwd:
      return {
          {"dx", s.dtype, rows}, {"dw", s.weight_dtype, s.width}, {"db", s.weight_dtype, s.width}};
    case NormKind::RmsNormBwd:
      return {{"dx", s.dtype, rows}, {"dw", s.weight_dtype, s.width}};
  }
  return {};
}

const std::vector<double>& reference_of(const NormData& d, const std::string& name) {
  if (name == "y") return d.y;
  if (name == "mean") return d.mean;
  if (name == "rstd") return d.rstd;
  if (name == "dx") return d.dx;
  if (name == "dw") return d.dw;
  if (name == "db") return d.db;
  throw std::runtime_error(fmt::format("no reference for output '{}'", name));
}

}  // namespace

NormData make_norm_data(const kernels::NormSpec& spec, std::uint32_t batch, std::uint64_t seed,
                        bool with_backward) {
  NormData d;
  d.spec = spec;
  d.batch = batch;
  d.in = kernels::make_inputs(spec, batch, spec.width, seed);
  forward_reference(d);
  if (is_layer_norm(spec.kind)) d.mean_in = f32_tensor(d.mean);
  d.rstd_in = f32_tensor(d.rstd);
  if (with_backward || is_backward(spec.kind)) backward_reference(d);
  return d;
}

const kernels::OutputVerdict& CaseCheck::worst() const {
  const auto& o = verdict.outputs;
  return *std::max_element(o.begin(), o.end(),
                           [](const auto& a, const auto& b) { return a.ratio() < b.ratio(); });
}
double CaseCheck::max_abs() const {
  double m = 0;
  for (const kernels::OutputVerdict& o : verdict.outputs) m = std::max(m, o.max_abs);
  return m;
}
double CaseCheck::worst_ratio() const {
  return worst().ratio();
}
std::string CaseCheck::summary() const {
  const kernels::OutputVerdict& w = worst();
  std::string s = fmt::format("max abs err {:.3e}, worst {}[{}]: {:.3e} of its bound {:.3e}",
                              max_abs(), w.name, w.worst, w.ratio(), w.bound);
  for (const kernels::OutputVerdict& o : verdict.outputs) {
    if (o.nonfinite != 0)
      s += fmt::format("; {} has {} NaN or infinite values", o.name, o.nonfinite);
  }
  return s;
}

CaseCheck compare(NormKind kind, const NormData& data, const std::vector<Output>& got) {
  kernels::NormSpec spec = data.spec;
  spec.kind = kind;
  std::vector<kernels::NormOutput> outputs;
  for (const OutputShape& shape : output_shapes(spec, data.batch)) {
    const auto it =
        std::find_if(got.begin(), got.end(), [&](const Output& o) { return o.name == shape.name; });
    if (it == got.end()) throw std::runtime_error(fmt::format("output '{}' missing", shape.name));
    outputs.push_back({shape.name, shape.dtype, it->values, reference_of(data, shape.name)});
  }
  const kernels::NormProblem problem{.layer = is_layer_norm(kind),
                                     .batch = data.batch,
                                     .width = spec.width,
                                     .stride = spec.width,
                                     .eps = kEps,
                                     .x = data.in.x.values,
                                     .w = data.in.w.values,
                                     .b = data.in.b.values,
                                     .dy = is_backward(kind)
                                               ? std::span<const float>(data.in.dy.values)
                                               : std::span<const float>()};
  return {kernels::check_outputs(problem, outputs)};
}

// ---- GPU ----

struct GpuNorm::Buffers {
  runtime::DeviceBuffer<std::byte> x, w, b, dy, mean_in, rstd_in;
  std::map<std::string, runtime::DeviceBuffer<std::byte>> out;  // y, mean, rstd, dx, dw, db
};

namespace {

runtime::DeviceBuffer<std::byte> upload(const runtime::Context& ctx, const kernels::HostTensor& t) {
  if (t.bytes.empty()) return {};
  return runtime::DeviceBuffer<std::byte>(ctx, std::span<const std::byte>(t.bytes));
}

runtime::DeviceView view(const runtime::DeviceBuffer<std::byte>& buf, DType d) {
  runtime::DeviceView v;
  v.address = buf.address();
  v.bytes = buf.bytes();
  v.element_bytes = static_cast<std::uint32_t>(kernels::dtype_bytes(d));
  return v;
}

}  // namespace

GpuNorm::GpuNorm(const runtime::Context& ctx, const NormData& data,
                 const runtime::NormOptions& options)
    : ctx_(ctx), spec_(data.spec), batch_(data.batch), b_(std::make_unique<Buffers>()) {
  b_->x = upload(ctx, data.in.x);
  b_->w = upload(ctx, data.in.w);
  b_->b = upload(ctx, data.in.b);
  b_->dy = upload(ctx, data.in.dy);
  b_->mean_in = upload(ctx, data.mean_in);
  b_->rstd_in = upload(ctx, data.rstd_in);
  // Outputs of both directions: `bench` times the forward and the backward with one object.
  const bool ln = is_layer_norm(spec_.kind);
  for (NormKind k : ln ? std::vector{NormKind::LayerNormFwd, NormKind::LayerNormBwd}
                       : std::vector{NormKind::RmsNormFwd, NormKind::RmsNormBwd}) {
    kernels::NormSpec s = spec_;
    s.kind = k;
    for (const OutputShape& o : output_shapes(s, batch_)) {
      b_->out.emplace(o.name,
                      runtime::DeviceBuffer<std::byte>(
                          ctx, o.count * static_cast<std::size_t>(kernels::dtype_bytes(o.dtype))));
    }
  }
  if (ln) {
    ln_.emplace(ctx, spec_.dtype, spec_.weight_dtype, spec_.width, options);
  } else {
    rms_.emplace(ctx, spec_.dtype, spec_.weight_dtype, spec_.width, options);
  }
}

GpuNorm::~GpuNorm() = default;

void GpuNorm::poison(NormKind kind) {
  kernels::NormSpec s = spec_;
  s.kind = kind;
  for (const OutputShape& o : output_shapes(s, batch_)) {
    const auto& buf = b_->out.at(o.name);
    runtime::fill_u8(ctx_, buf.address(), 0xFF, buf.bytes());
  }
}

void GpuNorm::call(NormKind kind, runtime::StreamRef stream) {
  const DType d = spec_.dtype, wd = spec_.weight_dtype, f32 = DType::F32;
  const auto& o = b_->out;
  switch (kind) {
    case NormKind::LayerNormFwd:
      ln_->forward({.x = view(b_->x, d),
                    .w = view(b_->w, wd),
                    .b = view(b_->b, wd),
                    .y = view(o.at("y"), d),
                    .mean = view(o.at("mean"), f32),
                    .rstd = view(o.at("rstd"), f32),
                    .batch = batch_,
                    .eps = static_cast<float>(kEps),
                    .stream = stream});
      break;
    case NormKind::LayerNormBwd:
      ln_->backward({.dy = view(b_->dy, d),
                     .x = view(b_->x, d),
                     .w = view(b_->w, wd),
                     .mean = view(b_->mean_in, f32),
                     .rstd = view(b_->rstd_in, f32),
                     .dx = view(o.at("dx"), d),
                     .dw = view(o.at("dw"), wd),
                     .db = view(o.at("db"), wd),
                     .batch = batch_,
                     .stream = stream});
      break;
    case NormKind::RmsNormFwd:
      rms_->forward({.x = view(b_->x, d),
                     .w = view(b_->w, wd),
                     .y = view(o.at("y"), d),
                     .rstd = view(o.at("rstd"), f32),
                     .batch = batch_,
                     .eps = static_cast<float>(kEps),
                     .stream = stream});
      break;
    case NormKind::RmsNormBwd:
      rms_->backward({.dy = view(b_->dy, d),
                      .x = view(b_->x, d),
                      .w = view(b_->w, wd),
                      .rstd = view(b_->rstd_in, f32),
                      .dx = view(o.at("dx"), d),
                      .dw = view(o.at("dw"), wd),
                      .batch = batch_,
                      .stream = stream});
      break;
  }
}

std::vector<Output> GpuNorm::download(NormKind kind) const {
  kernels::NormSpec s = spec_;
  s.kind = kind;
  std::vector<Output> outs;
  for (const OutputShape& o : output_shapes(s, batch_)) {
    const std::vector<std::byte> bytes = b_->out.at(o.name).to_host();
    outs.push_back({o.name, o.dtype, kernels::to_floats(bytes, o.dtype, o.count)});
  }
  return outs;
}

// ---- CPU executor ----

std::vector<Output> run_on_cpu(const NormData& data) {
  kernels::NormSpec spec = data.spec;
  // As the runtime does on a GPU: no wider vectors than rows `width` apart allow.
  const std::uint32_t widest =
      kernels::vector_elems_for(spec.dtype, spec.weight_dtype, spec.width, 0, 0);
  if (!spec.knobs.vector_elems || *spec.knobs.vector_elems > widest) {
    spec.knobs.vector_elems = widest;
  }
  // And the variant it picks for the batch (the prefetching forward, the one-launch backward).
  spec = kernels::spec_for_batch(spec, data.batch);
  kernels::BuiltNorm built;
  try {
    built = kernels::build_norm(spec);
  } catch (const Error& e) {
    if (data.spec.knobs.vector_elems == spec.knobs.vector_elems) throw;
    const std::uint32_t vec = *spec.knobs.vector_elems;
    throw Error(
        fmt::format("with vectors of {} element{} (the widest that rows {} elements apart "
                    "allow): {}",
                    vec, vec == 1 ? "" : "s", spec.width, e.what()));
  }
  CpuDevice dev;
  std::map<std::string, ExecutorAddress> ptrs;
  const auto put = [&](const char* name, const kernels::HostTensor& t) {
    if (!t.bytes.empty()) ptrs[name] = dev.upload(std::span<const std::byte>(t.bytes), name);
  };
  put("x", data.in.x);
  put("w", data.in.w);
  put("b", data.in.b);
  put("dy", data.in.dy);
  if (is_backward(spec.kind)) {
    put("mean", data.mean_in);
    put("rstd", data.rstd_in);
  }
  const std::vector<OutputShape> shapes = output_shapes(spec, data.batch);
  for (const OutputShape& o : shapes) {
    ptrs[o.name] =
        dev.alloc(o.count * static_cast<std::size_t>(kernels::dtype_bytes(o.dtype)), o.name);
  }
  ExecOptions options;
  options.threads = std::max(1u, std::thread::hardware_concurrency());
  kernels::run_norm_on_cpu(built, dev, ptrs, data.batch, spec.width, static_cast<float>(kEps),
                           options);
  std::vector<Output> outs;
  for (const OutputShape& o : shapes) {
    const auto bytes = dev.download<std::byte>(
        ptrs.at(o.name), o.count * static_cast<std::size_t>(kernels::dtype_bytes(o.dtype)));
    outs.push_back({o.name, o.dtype, kernels::to_floats(bytes, o.dtype, o.count)});
  }
  return outs;
}

std::uint64_t floor_bytes(NormKind kind, DType dtype, std::uint32_t batch, std::uint32_t width) {
  // BENCHMARKS.md's formulas, with weights in the input's dtype as the suite has them.
  const std::uint64_t m = batch, n = width,
                      s = static_cast<std::uint64_t>(kernels::dtype_bytes(dtype));
  switch (kind) {
    case NormKind::LayerNormFwd:
      return 2 * m * n * s + 2 * n * s + 8 * m;
    case NormKind::LayerNormBwd:
      return 3 * m * n * s + 3 * n * s + 8 * m;
    case NormKind::RmsNormFwd:
      return 2 * m * n * s + n * s;
    case NormKind::RmsNormBwd:
      return 3 * m * n * s + 2 * n * s + 4 * m;
  }
  return 0;
}

}  // namespace ptxdsl::cli
