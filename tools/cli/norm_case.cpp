#include "norm_case.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <thread>

#include "ptxdsl/cli/app.hpp"
#include "ptxdsl/dsl/executor.hpp"
#include "ptxdsl/kernels/check_outputs.hpp"
#include "ptxdsl/kernels/cpu_run.hpp"
#include "ptxdsl/kernels/quantize_reference.hpp"
#include "ptxdsl/kernels/row_blocks.hpp"
#include "ptxdsl/runtime/stream.hpp"
#include "sampled_check.hpp"

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

// The runtime's type of a spec's forward: its quantized output's fields.
runtime::NormType quant_type(const kernels::NormSpec& s) {
  return {
      is_layer_norm(s.kind),
      s.dtype,
      s.weight_dtype,
      s.width,
      {.quant = s.quant, .quant_scale = s.quant_scale, .quant_scale_layout = s.quant_scale_layout}};
}
// What a forward writes as y and y_scale (the runtime's statement of it).
runtime::QuantOutput quant_of(const kernels::NormSpec& s) {
  return runtime::quant_output(quant_type(s));
}

// Elements a row tensor's buffer holds: the groups of rows (one row a group without row groups),
// `stride` apart.
std::size_t row_elements(const kernels::NormSpec& s, std::uint32_t batch, std::uint32_t stride) {
  return std::size_t{(batch + s.row_groups - 1) / s.row_groups} * stride;
}

// Output names, dtypes and element counts of a kernel, as its variant writes them: row tensors
// (`rows`) hold `batch` rows at row_start(); `codes`: a quantized y, a code an element.
struct OutputShape {
  const char* name;
  DType dtype;
  std::size_t count;
  bool rows;
  bool codes = false;
  std::size_t bytes(const kernels::NormSpec& s) const {
    return codes ? quant_of(s).y_bytes(count)
                 : count * static_cast<std::size_t>(kernels::dtype_bytes(dtype));
  }
};
std::vector<OutputShape> output_shapes(const kernels::NormSpec& s, std::uint32_t batch,
                                       std::uint32_t stride) {
  const std::size_t rows = row_elements(s, batch, stride);
  std::vector<OutputShape> out;
  if (!is_backward(s.kind)) {
    const bool quantized = s.quant != kernels::Quant::None;
    out.push_back({"y", s.dtype, rows, true, quantized});
    if (quant_of(s).scales_per_row > 0) {  // none with a static scale
      out.push_back(
          {"y_scale", DType::F32, std::size_t{batch} * quant_of(s).scales_per_row, false});
    }
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

// A row tensor's rows packed densely (`e` bytes an element) out of a buffer poisoned with 0xFF
// bytes before the kernel ran; a byte written outside the rows is a failure, named.
std::vector<std::byte> gather_rows(const char* name, std::span<const std::byte> bytes,
                                   std::size_t e, const kernels::NormSpec& s, std::uint32_t batch,
                                   std::uint32_t stride) {
  std::vector<std::byte> dense;
  dense.reserve(std::size_t{batch} * s.width * e);
  std::size_t written = 0, end = 0;
  const auto count_written = [&](std::size_t from, std::size_t to) {
    const auto gap = bytes.subspan(from * e, (to - from) * e);
    written += static_cast<std::size_t>(
        std::count_if(gap.begin(), gap.end(), [](std::byte b) { return b != std::byte{0xFF}; }));
  };
  for (std::uint32_t r = 0; r < batch; ++r) {
    const std::size_t start = row_start(s, stride, r);  // rising with r
    count_written(end, start);
    const auto row = bytes.subspan(start * e, std::size_t{s.width} * e);
    dense.insert(dense.end(), row.begin(), row.end());
    end = start + s.width;
  }
  count_written(end, bytes.size() / e);
  if (written > 0) {
    throw std::runtime_error(fmt::format(
        "{} has {} bytes written between its rows (width {}, stride {}{}), which it must not "
        "touch",
        name, written, s.width, stride,
        s.row_groups > 1
            ? fmt::format(", row groups {} × group stride {}", s.row_groups, s.group_stride)
            : ""));
  }
  return dense;
}

// One output as the kernel left it (its buffer poisoned with 0xFF bytes first), its rows packed
// densely; an element written between rows is a failure, named.
Output unpack(const OutputShape& o, std::span<const std::byte> bytes, const kernels::NormSpec& s,
              std::uint32_t batch, std::uint32_t stride) {
  if (o.codes) {
    const std::vector<std::byte> dense =
        gather_rows(o.name, bytes, quant_of(s).element_bits / 8, s, batch, stride);
    Output out{o.name, o.dtype, {}, std::vector<std::uint8_t>(dense.size())};
    std::memcpy(out.codes.data(), dense.data(), dense.size());
    return out;
  }
  const bool dense = !o.rows || (stride == s.width && s.row_groups == 1);
  if (dense) return {o.name, o.dtype, kernels::to_floats(bytes, o.dtype, o.count), {}};
  const std::size_t e = static_cast<std::size_t>(kernels::dtype_bytes(o.dtype));
  return {o.name,
          o.dtype,
          kernels::to_floats(gather_rows(o.name, bytes, e, s, batch, stride), o.dtype),
          {}};
}

// A row tensor of the inputs as the kernels' buffers hold it: as made (rows `stride` apart), or
// with row groups its dense rows placed at row_start(), NaN (0xFF bytes) between them.
std::vector<std::byte> placed_rows(const kernels::HostTensor& t, const kernels::NormSpec& s,
                                   std::uint32_t batch, std::uint32_t stride) {
  if (s.row_groups == 1 || t.bytes.empty()) return t.bytes;
  const std::size_t e = static_cast<std::size_t>(kernels::dtype_bytes(t.dtype));
  std::vector<std::byte> out(row_elements(s, batch, stride) * e, std::byte{0xFF});
  for (std::uint32_t r = 0; r < batch; ++r) {
    std::memcpy(out.data() + row_start(s, stride, r) * e,
                t.bytes.data() + std::size_t{r} * s.width * e, std::size_t{s.width} * e);
  }
  return out;
}

// A quantized y and its scales against kernels::quantize_rows of the float64 model's y in f32
// with the spec's scale mode, as the executor's tests judge them: each scale within 1e-5
// relative, each code at most a step of the format from the model's (a tie the kernel's f32 y
// and the float64 one round to different sides of; `error` counts steps, `bound` is one), and
// all but 1% bit-exact; a group of zeros exactly. `scale` holds the scales written, row-major
// (none with a static scale, whose value is `static_scale`).
std::vector<kernels::OutputVerdict> check_quantized(const kernels::NormSpec& s,
                                                    std::span<const double> ref_y,
                                                    const std::vector<std::uint8_t>& q,
                                                    const std::vector<float>& scale,
                                                    std::uint32_t batch, float static_scale) {
  const std::uint32_t width = s.width;
  const std::uint32_t group = kernels::quant_group(s), per_row = kernels::quant_scales_per_row(s);
  const std::vector<float> y(ref_y.begin(), ref_y.end());
  const kernels::QuantizedRows want = kernels::quantize_rows(s, y, batch, static_scale);
  kernels::OutputVerdict codes{.name = "y", .dtype = s.dtype, .bound = 1};
  kernels::OutputVerdict scales{.name = "y_scale", .dtype = DType::F32};
  std::size_t differ = 0;
  double worst_scale = -1;
  for (std::size_t k = 0; k < want.scale.size(); ++k) {
    const double err = std::fabs(double{scale[k]} - want.scale[k]);
    const double bound = 1e-5 * want.scale[k];
    const double ratio = bound > 0 ? err / bound : (err > 0 || std::isnan(err) ? 1e300 : 0);
    scales.nonfinite += !std::isfinite(scale[k]);
    scales.failures += !(err <= bound);
    scales.max_abs = std::max(scales.max_abs, err);
    if (ratio > worst_scale || std::isnan(err)) {
      worst_scale = ratio;
      scales.worst = k;
      scales.got = scale[k];
      scales.want = want.scale[k];
      scales.error = err;
      scales.bound = bound;
    }
  }
  for (std::uint32_t r = 0; r < batch; ++r) {
    for (std::uint32_t i = 0; i < width; ++i) {
      const std::size_t at = std::size_t{r} * width + i;
      const std::uint8_t got = q[at], w = want.q[at];
      const int steps = kernels::quant_steps(s.quant, got, w);
      // The element's scale: its group's, or the static one.
      const float element_scale =
          group > 0 ? want.scale[std::size_t{r} * per_row + i / group] : static_scale;
      differ += got != w;
      codes.failures += steps > 1 || (element_scale == 0.0f && got != w);
      const double got_value = kernels::quant_value(s.quant, got) * element_scale;
      const double want_value = kernels::quant_value(s.quant, w) * element_scale;
      codes.nonfinite += !std::isfinite(got_value);
      codes.max_abs = std::max(codes.max_abs, std::fabs(got_value - want_value));
      if (steps > codes.error || !std::isfinite(got_value)) {
        codes.worst = at;
        codes.got = got_value;
        codes.want = want_value;
        codes.error = std::isfinite(got_value) ? steps : 1e300;
      }
    }
  }
  scales.pass = scales.failures == 0;
  // More than 1% a step apart is no longer the ties alone: each of them then counts as a failure.
  if (differ > std::size_t{batch} * width / 100) codes.failures += differ;
  codes.pass = codes.failures == 0;
  if (want.scale.empty()) return {codes};
  return {codes, scales};
}

}  // namespace

std::size_t row_start(const kernels::NormSpec& spec, std::uint32_t stride, std::uint32_t r) {
  return std::size_t{r / spec.row_groups} * stride +
         std::size_t{r % spec.row_groups} * spec.group_stride;
}

namespace {

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
                        bool with_backward, std::uint32_t stride,
                        std::vector<std::uint32_t> sampled_rows) {
  // The block-scaled formats' bytes (their ue8m0/e4m3 scales, nvfp4's packed codes) are checked
  // by the executor's tests, not here: refused rather than judged as f32 scales.
  if (kernels::quant_block(spec.quant) > 0) {
    throw UsageError(fmt::format(
        "run and bench take --quant fp8-e4m3, fp8-e5m2 or int8 (with --quant-scale per-token, "
        "static or group128); got --quant {}, whose block scales emit writes and the executor's "
        "tests check (the runtime launches it on sm_100a GPUs)",
        kernels::quant_name(spec.quant)));
  }
  // The runtime's own refusals of the scale mode (group128's widths), before any reference runs.
  if (spec.quant != kernels::Quant::None && !is_backward(spec.kind)) {
    try {
      runtime::check_call(quant_type(spec), {});
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
  }
  NormData d;
  d.spec = spec;
  d.batch = batch;
  d.stride = stride == 0 ? static_cast<std::uint32_t>(kernels::row_span(spec)) : stride;
  const NormKind forward = is_layer_norm(spec.kind) ? NormKind::LayerNormFwd : NormKind::RmsNormFwd;
  const NormKind backward =
      is_layer_norm(spec.kind) ? NormKind::LayerNormBwd : NormKind::RmsNormBwd;
  const bool backward_too = with_backward || is_backward(spec.kind);
  // The backward's spec first: it refuses what it cannot take before the references run.
  const kernels::NormSpec backward_spec = backward_too ? direction_spec(spec, backward) : spec;
  // Row groups place the rows elsewhere; the numbers are the dense problem's.
  const bool grouped = spec.row_groups > 1;
  const auto dense = [&](kernels::NormSpec s) {
    s.row_groups = 1;
    s.group_stride = 0;
    return s;
  };
  d.in = kernels::make_inputs(spec, batch, grouped ? spec.width : d.stride, seed);
  d.sampled_rows = std::move(sampled_rows);
  const auto references = [&](const kernels::NormSpec& s) {
    return d.sampled_rows.empty() ? reference(s, d.in) : sampled_reference(s, d.in, d.sampled_rows);
  };
  d.forward = references(dense(direction_spec(spec, forward)));
  if (kernels::reads_quant_scale(direction_spec(spec, forward))) {
    double absmax = 0;
    for (const double v : d.forward.y) absmax = std::max(absmax, std::fabs(v));
    if (absmax > 0)
      d.static_scale = static_cast<float>(0.8 * absmax / kernels::quant_max(spec.quant));
  }
  if (!backward_too) return d;
  d.backward = references(dense(backward_spec));
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
  if (!data.sampled_rows.empty()) return compare_sampled(kind, data, got);
  const kernels::NormSpec spec = direction_spec(data.spec, kind);
  const auto output = [&](const char* name) -> const Output& {
    const auto it =
        std::find_if(got.begin(), got.end(), [&](const Output& o) { return o.name == name; });
    if (it == got.end()) throw std::runtime_error(fmt::format("output '{}' missing", name));
    return *it;
  };
  std::vector<kernels::NormOutput> outputs;
  for (const OutputShape& shape : output_shapes(spec, data.batch, data.stride)) {
    const Output& o = output(shape.name);
    if (shape.codes || o.name == "y_scale") continue;  // check_quantized's
    outputs.push_back({shape.name, shape.dtype, o.values, reference_of(data, shape.name)});
  }
  const kernels::NormReference& ref = is_backward(kind) ? data.backward : data.forward;
  kernels::NormSpec dense = spec;
  dense.row_groups = 1;
  dense.group_stride = 0;
  CaseCheck check{
      kernels::check_outputs(kernels::norm_problem(dense, data.in, ref, kEps), outputs)};
  if (!is_backward(kind) && spec.quant != kernels::Quant::None) {
    const bool scales = quant_of(spec).scales_per_row > 0;
    for (kernels::OutputVerdict& v :
         check_quantized(spec, ref.y, output("y").codes,
                         scales ? output("y_scale").values : std::vector<float>{}, data.batch,
                         data.static_scale)) {
      check.verdict.outputs.push_back(std::move(v));
    }
  }
  return check;
}

// ---- GPU ----

struct GpuNorm::Buffers {
  runtime::DeviceBuffer<std::byte> x, w, b, dy, mean_in, rstd_in, residual, dh;
  runtime::DeviceBuffer<float> quant_scale_in;                  // a static scale
  std::map<std::string, runtime::DeviceBuffer<std::byte>> out;  // y, mean, rstd, h, dx, dw, db
};

namespace {

runtime::DeviceBuffer<std::byte> upload(const runtime::Context& ctx,
                                        std::span<const std::byte> bytes) {
  if (bytes.empty()) return {};
  return runtime::DeviceBuffer<std::byte>(ctx, bytes);
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
  const auto rows = [&](const kernels::HostTensor& t) {
    return upload(ctx, placed_rows(t, spec_, batch_, stride_));
  };
  b_->x = rows(data.in.x);
  b_->w = upload(ctx, data.in.w.bytes);
  b_->b = upload(ctx, data.in.b.bytes);
  b_->dy = rows(data.in.dy);
  b_->mean_in = upload(ctx, data.mean_in.bytes);
  b_->rstd_in = upload(ctx, data.rstd_in.bytes);
  b_->residual = rows(data.in.residual);
  b_->dh = rows(data.in.dh);
  b_->quant_scale_in =
      runtime::DeviceBuffer<float>(ctx, std::span<const float>(&data.static_scale, 1));
  // Outputs of both directions: `bench` times the forward and the backward with one object (the
  // backward where its direction has a spec).
  const bool ln = is_layer_norm(spec_.kind);
  for (NormKind k : ln ? std::vector{NormKind::LayerNormFwd, NormKind::LayerNormBwd}
                       : std::vector{NormKind::RmsNormFwd, NormKind::RmsNormBwd}) {
    if (is_backward(k) && spec_.residual == kernels::Residual::AddF32) continue;
    const kernels::NormSpec s = direction_spec(spec_, k);
    for (const OutputShape& o : output_shapes(s, batch_, stride_)) {
      b_->out.emplace(o.name, runtime::DeviceBuffer<std::byte>(ctx, o.bytes(s)));
    }
  }
  const runtime::NormModelOptions model{.weight_offset = spec_.weight_offset,
                                        .casting = spec_.casting,
                                        .row_groups = spec_.row_groups,
                                        .group_stride = spec_.group_stride,
                                        .quant = spec_.quant,
                                        .quant_scale = spec_.quant_scale,
                                        .quant_scale_layout = spec_.quant_scale_layout};
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
    if (s.quant != kernels::Quant::None) {
      const runtime::QuantOutput q = quant_of(s);
      c.y.element_bytes = q.element_bits / 8;
      c.y_scale = out("y_scale", f32);
      if (q.reads_scale_in) c.quant_scale_in = runtime::DeviceView(b_->quant_scale_in);
    }
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
    outs.push_back(unpack(o, bytes, s, batch_, stride_));
  }
  return outs;
}

// ---- CPU executor ----

std::vector<Output> run_on_cpu(const NormData& data) {
  kernels::NormSpec spec = data.spec;
  // As the runtime does on a GPU: no wider vectors than rows `stride` apart allow (with row
  // groups, rows start at multiples of both strides).
  const std::uint32_t steps =
      spec.row_groups > 1 ? std::gcd(data.stride, spec.group_stride) : data.stride;
  const std::uint32_t widest =
      kernels::vector_elems_for(spec.dtype, spec.weight_dtype, steps, 0, 0);
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
  const auto put = [&](const char* name, std::span<const std::byte> bytes) {
    if (!bytes.empty()) ptrs[name] = dev.upload(bytes, name);
  };
  const auto rows = [&](const char* name, const kernels::HostTensor& t) {
    put(name, placed_rows(t, spec, data.batch, data.stride));
  };
  rows("x", data.in.x);
  put("w", data.in.w.bytes);
  put("b", data.in.b.bytes);
  rows("dy", data.in.dy);
  rows("residual", data.in.residual);
  rows("dh", data.in.dh);
  if (is_backward(spec.kind)) {
    put("mean", data.mean_in.bytes);
    put("rstd", data.rstd_in.bytes);
  }
  if (kernels::reads_quant_scale(spec)) {
    put("quant_scale_in", std::as_bytes(std::span<const float>(&data.static_scale, 1)));
  }
  const std::vector<OutputShape> shapes = output_shapes(spec, data.batch, data.stride);
  // Poisoned, as on a GPU: a byte written between rows shows.
  for (const OutputShape& o : shapes) ptrs[o.name] = dev.alloc(o.bytes(spec), o.name, 0xFF);
  ExecOptions options;
  options.threads = std::max(1u, std::thread::hardware_concurrency());
  kernels::run_norm_on_cpu(built, dev, ptrs, data.batch, data.stride, static_cast<float>(kEps),
                           options);
  std::vector<Output> outs;
  for (const OutputShape& o : shapes) {
    const auto bytes = dev.download<std::byte>(ptrs.at(o.name), o.bytes(spec));
    outs.push_back(unpack(o, bytes, spec, data.batch, data.stride));
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
    // y: its dtype's bytes, or a quantized y's codes and scales (a static scale: 4 bytes read).
    const runtime::QuantOutput q = quant_of(spec);
    const std::uint64_t y = q.y_bytes(m * n) + runtime::quant_scale_bytes(quant_type(spec), batch) +
                            (q.reads_scale_in ? 4 : 0);
    return m * n * s + y + weights * n * ws + (layer ? 8 * m : 0) + residual;
  }
  const std::uint64_t grads = kernels::has_weight_grads(spec) ? weights : 0;
  const std::uint64_t dh = kernels::has_residual(spec) ? m * n * rs : 0;
  const std::uint64_t read = kernels::has_weight(spec) ? 1 : 0;  // the backward reads w, never b
  return 3 * m * n * s + (read + grads) * n * ws + (layer ? 8 : 4) * m + dh;
}

}  // namespace ptxdsl::cli
