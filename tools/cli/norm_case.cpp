#include "norm_case.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <thread>

#include "ptxdsl/cli/app.hpp"
#include "ptxdsl/dsl/executor.hpp"
#include "ptxdsl/kernels/check_outputs.hpp"
#include "ptxdsl/kernels/cpu_run.hpp"
#include "ptxdsl/kernels/row_blocks.hpp"
#include "ptxdsl/runtime/stream.hpp"

namespace ptxdsl::cli {

using kernels::DType;
using kernels::NormKind;

namespace {

void append(std::vector<double>& dst, const std::vector<double>& src) {
  dst.insert(dst.end(), src.begin(), src.end());
}

// kernels::norm_reference over blocks of rows on every core: the blocks' rows in order, dw and db
// summed in block order (the same numbers however many cores ran them). Rows are `in.stride`
// apart; each block's rows end without their last padding, which the next block's start restores.
kernels::NormReference reference(const kernels::NormSpec& spec, const kernels::NormInputs& in) {
  const std::vector<kernels::RowBlock> blocks = kernels::row_blocks(in.batch, in.width);
  std::vector<kernels::NormReference> parts(blocks.size());
  kernels::for_row_blocks(blocks, [&](std::size_t i, std::uint32_t r0, std::uint32_t rows) {
    parts[i] = kernels::norm_reference(spec, in, kEps, r0, rows);
  });
  kernels::NormReference r;
  r.w = parts[0].w;
  r.b = parts[0].b;
  r.dw.assign(parts[0].dw.size(), 0);
  r.db.assign(parts[0].db.size(), 0);
  // Each part is freed once appended, so that a 4 GB case holds its reference about once, not
  // twice.
  const auto reserve = [&](auto member) {
    std::size_t n = 0;
    for (const kernels::NormReference& p : parts) n += (p.*member).size();
    (r.*member).reserve(n);
  };
  r.rows.reserve((std::size_t{in.batch} - 1) * in.stride + in.width);
  reserve(&kernels::NormReference::y);
  reserve(&kernels::NormReference::h);
  reserve(&kernels::NormReference::dx);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    kernels::NormReference& p = parts[i];
    r.rows.resize(std::size_t{blocks[i].first} * in.stride,
                  std::numeric_limits<float>::quiet_NaN());
    r.rows.insert(r.rows.end(), p.rows.begin(), p.rows.end());
    append(r.y, p.y);
    append(r.mean, p.mean);
    append(r.rstd, p.rstd);
    append(r.h, p.h);
    append(r.dx, p.dx);
    for (std::size_t c = 0; c < r.dw.size(); ++c) r.dw[c] += p.dw[c];
    for (std::size_t c = 0; c < r.db.size(); ++c) r.db[c] += p.db[c];
    p = {};
  }
  return r;
}

kernels::HostTensor f32_tensor(const std::vector<double>& values) {
  const std::vector<float> f = kernels::to_f32(values);
  return kernels::make_tensor(f, DType::F32);
}

// Output names, dtypes and element counts of a kernel, as its variant writes them: row tensors
// (`rows`) hold `batch` rows `stride` elements apart.
struct OutputShape {
  const char* name;
  DType dtype;
  std::size_t count;
  bool rows;
};
std::vector<OutputShape> output_shapes(const kernels::NormSpec& s, std::uint32_t batch,
                                       std::uint32_t stride) {
  const std::size_t rows = std::size_t{batch} * stride;
  std::vector<OutputShape> out;
  if (!is_backward(s.kind)) {
    out.push_back({"y", s.dtype, rows, true});
    if (is_layer_norm(s.kind)) out.push_back({"mean", DType::F32, batch, false});
    out.push_back({"rstd", DType::F32, batch, false});
    if (kernels::has_residual(s)) out.push_back({"h", kernels::residual_dtype(s), rows, true});
    return out;
  }
  out.push_back({"dx", s.dtype, rows, true});
  if (kernels::has_weight_grads(s)) {
    out.push_back({"dw", s.weight_dtype, s.width, false});
    if (kernels::has_bias(s)) out.push_back({"db", s.weight_dtype, s.width, false});
  }
  return out;
}

// One output as the kernel left it (its buffer poisoned with 0xFF bytes first), its rows packed
// densely; an element written between rows is a failure, named.
Output unpack(const OutputShape& o, std::span<const std::byte> bytes, std::uint32_t batch,
              std::uint32_t width, std::uint32_t stride) {
  std::vector<float> values = kernels::to_floats(bytes, o.dtype, o.count);
  if (!o.rows || stride == width) return {o.name, o.dtype, std::move(values)};
  const std::size_t e = static_cast<std::size_t>(kernels::dtype_bytes(o.dtype));
  std::size_t written = 0;
  for (std::size_t r = 0; r < batch; ++r) {
    const auto gap = bytes.subspan((r * stride + width) * e, std::size_t{stride - width} * e);
    written += static_cast<std::size_t>(
        std::count_if(gap.begin(), gap.end(), [](std::byte b) { return b != std::byte{0xFF}; }));
  }
  if (written > 0) {
    throw std::runtime_error(fmt::format(
        "{} has {} bytes written between its rows (width {}, stride {}), which it must not touch",
        o.name, written, width, stride));
  }
  return {o.name, o.dtype, kernels::dense_rows(values, batch, width, stride)};
}

const std::vector<double>& reference_of(const NormData& d, const std::string& name) {
  if (name == "y") return d.forward.y;
  if (name == "mean") return d.forward.mean;
  if (name == "rstd") return d.forward.rstd;
  if (name == "h") return d.forward.h;
  if (name == "dx") return d.backward.dx;
  if (name == "dw") return d.backward.dw;
  if (name == "db") return d.backward.db;
  throw std::runtime_error(fmt::format("no reference for output '{}'", name));
}

}  // namespace

NormData make_norm_data(const kernels::NormSpec& spec, std::uint32_t batch, std::uint64_t seed,
                        bool with_backward, std::uint32_t stride) {
  NormData d;
  d.spec = spec;
  d.batch = batch;
  d.stride = stride == 0 ? spec.width : stride;
  const NormKind forward = is_layer_norm(spec.kind) ? NormKind::LayerNormFwd : NormKind::RmsNormFwd;
  const NormKind backward =
      is_layer_norm(spec.kind) ? NormKind::LayerNormBwd : NormKind::RmsNormBwd;
  const bool backward_too = with_backward || is_backward(spec.kind);
  // The backward's spec first: it refuses what it cannot take before the references run.
  const kernels::NormSpec backward_spec = backward_too ? direction_spec(spec, backward) : spec;
  d.in = kernels::make_inputs(spec, batch, d.stride, seed);
  d.forward = reference(direction_spec(spec, forward), d.in);
  if (!backward_too) return d;
  d.backward = reference(backward_spec, d.in);
  if (is_layer_norm(spec.kind)) d.mean_in = f32_tensor(d.backward.mean);
  d.rstd_in = f32_tensor(d.backward.rstd);
  return d;
}

kernels::NormSpec direction_spec(kernels::NormSpec spec, NormKind kind) {
  spec.kind = kind;
  if (!is_backward(kind)) spec.outputs = kernels::Outputs::All;
  if (is_backward(kind) && spec.residual == kernels::Residual::AddF32) {
    throw UsageError(
        "--residual add_f32 is a forward's: the backward takes h in the dtype (--residual add)");
  }
  return spec;
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
  const kernels::NormSpec spec = direction_spec(data.spec, kind);
  std::vector<kernels::NormOutput> outputs;
  for (const OutputShape& shape : output_shapes(spec, data.batch, data.stride)) {
    const auto it =
        std::find_if(got.begin(), got.end(), [&](const Output& o) { return o.name == shape.name; });
    if (it == got.end()) throw std::runtime_error(fmt::format("output '{}' missing", shape.name));
    outputs.push_back({shape.name, shape.dtype, it->values, reference_of(data, shape.name)});
  }
  const kernels::NormReference& ref = is_backward(kind) ? data.backward : data.forward;
  return {kernels::check_outputs(kernels::norm_problem(spec, data.in, ref, kEps), outputs)};
}

// ---- GPU ----

struct GpuNorm::Buffers {
  runtime::DeviceBuffer<std::byte> x, w, b, dy, mean_in, rstd_in, residual, dh;
  std::map<std::string, runtime::DeviceBuffer<std::byte>> out;  // y, mean, rstd, h, dx, dw, db
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
    : ctx_(ctx),
      spec_(data.spec),
      batch_(data.batch),
      stride_(data.stride),
      b_(std::make_unique<Buffers>()) {
  b_->x = upload(ctx, data.in.x);
  b_->w = upload(ctx, data.in.w);
  b_->b = upload(ctx, data.in.b);
  b_->dy = upload(ctx, data.in.dy);
  b_->mean_in = upload(ctx, data.mean_in);
  b_->rstd_in = upload(ctx, data.rstd_in);
  b_->residual = upload(ctx, data.in.residual);
  b_->dh = upload(ctx, data.in.dh);
  // Outputs of both directions: `bench` times the forward and the backward with one object (the
  // backward where its direction has a spec).
  const bool ln = is_layer_norm(spec_.kind);
  for (NormKind k : ln ? std::vector{NormKind::LayerNormFwd, NormKind::LayerNormBwd}
                       : std::vector{NormKind::RmsNormFwd, NormKind::RmsNormBwd}) {
    if (is_backward(k) && spec_.residual == kernels::Residual::AddF32) continue;
    const kernels::NormSpec s = direction_spec(spec_, k);
    for (const OutputShape& o : output_shapes(s, batch_, stride_)) {
      b_->out.emplace(o.name,
                      runtime::DeviceBuffer<std::byte>(
                          ctx, o.count * static_cast<std::size_t>(kernels::dtype_bytes(o.dtype))));
    }
  }
  const runtime::NormModelOptions model{.weight_offset = spec_.weight_offset,
                                        .casting = spec_.casting,
                                        .row_groups = spec_.row_groups,
                                        .group_stride = spec_.group_stride};
  norm_.emplace(ctx, runtime::NormType{ln, spec_.dtype, spec_.weight_dtype, spec_.width, model},
                options);
}

GpuNorm::~GpuNorm() = default;

void GpuNorm::poison(NormKind kind) {
  const kernels::NormSpec s = direction_spec(spec_, kind);
  for (const OutputShape& o : output_shapes(s, batch_, stride_)) {
    const auto& buf = b_->out.at(o.name);
    runtime::fill_u8(ctx_, buf.address(), 0xFF, buf.bytes());
  }
}

void GpuNorm::call(NormKind kind, runtime::StreamRef stream) {
  const kernels::NormSpec s = direction_spec(spec_, kind);
  const DType d = s.dtype, wd = s.weight_dtype, rd = kernels::residual_dtype(s), f32 = DType::F32;
  // The variant's tensors; the others stay empty views.
  const auto& o = b_->out;
  const auto out = [&](const char* name, DType dtype) {
    const auto it = o.find(name);
    return it == o.end() ? runtime::DeviceView{} : view(it->second, dtype);
  };
  const auto in_if = [&](bool has, const runtime::DeviceBuffer<std::byte>& buf, DType dtype) {
    return has ? view(buf, dtype) : runtime::DeviceView{};
  };
  const bool residual = kernels::has_residual(s);
  runtime::NormCall c{.x = view(b_->x, d),
                      .w = in_if(kernels::has_weight(s), b_->w, wd),
                      .batch = batch_,
                      .stride = stride_,
                      .stream = stream};
  if (is_backward(kind)) {
    c.direction = runtime::Direction::Backward;
    c.dy = view(b_->dy, d);
    c.mean = in_if(is_layer_norm(kind), b_->mean_in, f32);
    c.rstd = view(b_->rstd_in, f32);
    c.dh = in_if(residual, b_->dh, rd);
    c.dx = out("dx", d);
    c.dw = out("dw", wd);
    c.db = out("db", wd);
  } else {
    c.b = in_if(kernels::has_bias(s), b_->b, wd);
    c.residual = in_if(residual, b_->residual, rd);
    c.residual_in_f32 = s.residual == kernels::Residual::AddF32;
    c.y = out("y", d);
    c.h = out("h", rd);
    c.mean = out("mean", f32);
    c.rstd = out("rstd", f32);
    c.eps = static_cast<float>(kEps);
  }
  norm_->call(c);
}

std::vector<Output> GpuNorm::download(NormKind kind) const {
  const kernels::NormSpec s = direction_spec(spec_, kind);
  std::vector<Output> outs;
  for (const OutputShape& o : output_shapes(s, batch_, stride_)) {
    const std::vector<std::byte> bytes = b_->out.at(o.name).to_host();
    outs.push_back(unpack(o, bytes, batch_, s.width, stride_));
  }
  return outs;
}

// ---- CPU executor ----

std::vector<Output> run_on_cpu(const NormData& data) {
  kernels::NormSpec spec = data.spec;
  // As the runtime does on a GPU: no wider vectors than rows `stride` apart allow.
  const std::uint32_t widest =
      kernels::vector_elems_for(spec.dtype, spec.weight_dtype, data.stride, 0, 0);
  if (!spec.knobs.vector_elems || *spec.knobs.vector_elems > widest) {
    spec.knobs.vector_elems = widest;
  }
  // And the variant it picks for the batch (the prefetching forward, the one-launch backward).
  spec = kernels::spec_for_batch(spec, data.batch);
  // The preset is the device here: knobs its plan cannot take are bad input (exit 2).
  kernels::BuiltNorm built;
  try {
    built = kernels::build_norm(spec);
  } catch (const Error& e) {
    if (data.spec.knobs.vector_elems == spec.knobs.vector_elems) throw UsageError(e.what());
    const std::uint32_t vec = *spec.knobs.vector_elems;
    throw UsageError(
        fmt::format("with vectors of {} element{} (the widest that rows {} elements apart "
                    "allow): {}",
                    vec, vec == 1 ? "" : "s", data.stride, e.what()));
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
  put("residual", data.in.residual);
  put("dh", data.in.dh);
  if (is_backward(spec.kind)) {
    put("mean", data.mean_in);
    put("rstd", data.rstd_in);
  }
  const std::vector<OutputShape> shapes = output_shapes(spec, data.batch, data.stride);
  for (const OutputShape& o : shapes) {
    ptrs[o.name] =
        dev.alloc(o.count * static_cast<std::size_t>(kernels::dtype_bytes(o.dtype)), o.name);
  }
  ExecOptions options;
  options.threads = std::max(1u, std::thread::hardware_concurrency());
  kernels::run_norm_on_cpu(built, dev, ptrs, data.batch, data.stride, static_cast<float>(kEps),
                           options);
  std::vector<Output> outs;
  for (const OutputShape& o : shapes) {
    const auto bytes = dev.download<std::byte>(
        ptrs.at(o.name), o.count * static_cast<std::size_t>(kernels::dtype_bytes(o.dtype)));
    outs.push_back(unpack(o, bytes, data.batch, spec.width, data.stride));
  }
  return outs;
}

std::uint64_t floor_bytes(const kernels::NormSpec& spec, std::uint32_t batch) {
  const std::uint64_t m = batch, n = spec.width;
  const auto bytes = [](DType d) { return static_cast<std::uint64_t>(kernels::dtype_bytes(d)); };
  const std::uint64_t s = bytes(spec.dtype), ws = bytes(spec.weight_dtype),
                      rs = bytes(kernels::residual_dtype(spec));
  const std::uint64_t weights =
      (kernels::has_weight(spec) ? 1 : 0) + (kernels::has_bias(spec) ? 1 : 0);
  // Per row: mean and rstd for layer norm; RMS norm's rstd is left out, as BENCHMARKS.md has it.
  const bool layer = is_layer_norm(spec.kind);
  if (!is_backward(spec.kind)) {
    const std::uint64_t residual = kernels::has_residual(spec) ? 2 * m * n * rs : 0;  // residual, h
    return 2 * m * n * s + weights * n * ws + (layer ? 8 * m : 0) + residual;
  }
  const std::uint64_t grads = kernels::has_weight_grads(spec) ? weights : 0;
  const std::uint64_t dh = kernels::has_residual(spec) ? m * n * rs : 0;
  const std::uint64_t read = kernels::has_weight(spec) ? 1 : 0;  // the backward reads w, never b
  return 3 * m * n * s + (read + grads) * n * ws + (layer ? 8 : 4) * m + dh;
}

}  // namespace ptxdsl::cli
