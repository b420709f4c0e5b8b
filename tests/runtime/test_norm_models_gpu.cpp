// The model options of a norm object (weight offset, casting, row groups, quant) on a GPU: each
// variant's
// forward and backward against the float64 model of its variant (kernels::norm_reference, what
// the CPU executor's tests and `ptxdsl run` judge by; a quantized y against kernels::quantize_rows
// of it), at odd shapes: batch 1, width 1151, rows strided and per-head rows ending mid-group.
// Outputs are poisoned first; what lies between rows must stay untouched.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "gpu_support.hpp"
#include "ptxdsl/kernels/check_outputs.hpp"
#include "ptxdsl/kernels/inputs.hpp"
#include "ptxdsl/kernels/quantize_reference.hpp"
#include "ptxdsl/kernels/reference.hpp"
#include "ptxdsl/ptxdsl.h"
#include "ptxdsl/runtime.hpp"
#include "ptxdsl/runtime/norms.hpp"

using namespace ptxdsl;
using namespace ptxdsl::runtime;

namespace {

constexpr double kEps = 1e-5;
constexpr std::byte kPoison{0xFF};  // NaN in f32, f16 and bf16 alike

struct ModelCase {
  bool layer = false;
  DType dtype = DType::BF16;
  DType weight_dtype = DType::BF16;
  std::uint32_t width = 1151;
  std::uint32_t batch = 1;
  std::uint32_t stride = 0;  // 0: the rows' span (the width without row groups)
  NormModelOptions model{};
  bool residual = false;  // the residual add (h in the dtype)

  NormType type() const { return {layer, dtype, weight_dtype, width, model}; }
  std::uint32_t row_stride() const {
    return stride != 0 ? stride : (model.row_groups - 1) * model.group_stride + width;
  }
  std::size_t row_start(std::uint32_t r) const {
    return std::size_t{r / model.row_groups} * row_stride() +
           std::size_t{r % model.row_groups} * model.group_stride;
  }
  std::size_t elements() const { return row_start(batch - 1) + width; }
  std::string describe() const {
    std::ostringstream s;
    s << (layer ? "layer norm " : "RMS norm ") << kernels::dtype_name(dtype) << " (weights "
      << kernels::dtype_name(weight_dtype) << "), width " << width << ", batch " << batch
      << ", stride " << row_stride() << ", weight offset " << model.weight_offset << ", casting "
      << kernels::casting_name(model.casting) << ", row groups " << model.row_groups << " × "
      << model.group_stride << (residual ? ", residual add" : "");
    return s.str();
  }
};

// Dense rows (`width` apart) placed at the case's row starts; the rest poison.
std::vector<std::byte> scatter(const ModelCase& c, const kernels::HostTensor& dense) {
  const std::size_t e = static_cast<std::size_t>(kernels::dtype_bytes(dense.dtype));
  std::vector<std::byte> out(c.elements() * e, kPoison);
  for (std::uint32_t r = 0; r < c.batch; ++r) {
    std::copy_n(dense.bytes.begin() + static_cast<std::ptrdiff_t>(std::size_t{r} * c.width * e),
                c.width * e, out.begin() + static_cast<std::ptrdiff_t>(c.row_start(r) * e));
  }
  return out;
}

struct Rows {
  std::vector<float> dense;
  std::size_t padding_written = 0;  // bytes between rows no longer the poison
};
Rows gather(const ModelCase& c, std::vector<std::byte> bytes, DType d) {
  const std::size_t e = static_cast<std::size_t>(kernels::dtype_bytes(d));
  Rows rows;
  const std::vector<float> all = kernels::to_floats(bytes, d);
  for (std::uint32_t r = 0; r < c.batch; ++r) {
    const std::size_t at = c.row_start(r);
    rows.dense.insert(rows.dense.end(), all.begin() + static_cast<std::ptrdiff_t>(at),
                      all.begin() + static_cast<std::ptrdiff_t>(at + c.width));
    std::fill_n(bytes.begin() + static_cast<std::ptrdiff_t>(at * e), c.width * e, kPoison);
  }
  rows.padding_written = static_cast<std::size_t>(
      std::count_if(bytes.begin(), bytes.end(), [](std::byte b) { return b != kPoison; }));
  return rows;
}

DeviceBuffer<std::byte> upload(const Context& ctx, const std::vector<std::byte>& bytes) {
  return DeviceBuffer<std::byte>(ctx, std::span<const std::byte>(bytes));
}
DeviceBuffer<std::byte> poisoned(const Context& ctx, std::size_t bytes) {
  DeviceBuffer<std::byte> b(ctx, bytes);
  fill_u8(ctx, b.address(), 0xFF, bytes);
  return b;
}
DeviceView view(const DeviceBuffer<std::byte>& b, DType d) {
  return DeviceView(b.address(), b.bytes(), static_cast<std::uint32_t>(kernels::dtype_bytes(d)));
}

// One output against its model by the one accuracy rule.
void check_output(const kernels::NormProblem& problem, const char* name, DType d,
                  const std::vector<float>& got, const std::vector<double>& want) {
  const kernels::NormOutput out[] = {{name, d, got, want}};
  const kernels::OutputVerdict v = kernels::check_outputs(problem, out).outputs[0];
  INFO(name << ": " << v.failures << " over their bound, " << v.nonfinite
            << " non-finite; worst at " << v.worst << ": got " << v.got << ", want " << v.want
            << ", error " << v.error << ", bound " << v.bound);
  CHECK(v.pass);
}

void run_model_case(const Context& ctx, const ModelCase& c) {
  INFO(c.describe());
  const NormType type = c.type();
  const kernels::Residual residual = c.residual ? kernels::Residual::Add : kernels::Residual::None;
  // The models of the dense problem: the row groups change where rows lie, not their numbers.
  kernels::NormSpec forward = norm_spec(type, Direction::Forward, {.residual = residual});
  kernels::NormSpec backward = norm_spec(type, Direction::Backward, {.residual = residual});
  for (kernels::NormSpec* s : {&forward, &backward}) {
    s->row_groups = 1;
    s->group_stride = 0;
  }
  const kernels::NormInputs in = kernels::make_inputs(forward, c.batch, c.width, 48);
  const kernels::NormReference fref = kernels::norm_reference(forward, in, kEps);
  const kernels::NormReference bref = kernels::norm_reference(backward, in, kEps);
  const kernels::NormProblem fproblem = kernels::norm_problem(forward, in, fref, kEps);
  const kernels::NormProblem bproblem = kernels::norm_problem(backward, in, bref, kEps);

  const std::size_t row_bytes =
      c.elements() * static_cast<std::size_t>(kernels::dtype_bytes(c.dtype));
  const std::size_t weight_bytes =
      std::size_t{c.width} * static_cast<std::size_t>(kernels::dtype_bytes(c.weight_dtype));
  const DType d = c.dtype, wd = c.weight_dtype, f32 = DType::F32;
  const DeviceBuffer<std::byte> x = upload(ctx, scatter(c, in.x));
  const DeviceBuffer<std::byte> dy = upload(ctx, scatter(c, in.dy));
  const DeviceBuffer<std::byte> w = upload(ctx, in.w.bytes);
  const DeviceBuffer<std::byte> b = c.layer ? upload(ctx, in.b.bytes) : DeviceBuffer<std::byte>{};
  DeviceBuffer<std::byte> res, dh;
  if (c.residual) {
    res = upload(ctx, scatter(c, in.residual));
    dh = upload(ctx, scatter(c, in.dh));
  }
  const auto per_row = [&](const std::vector<double>& v) {
    return upload(ctx, kernels::from_floats(kernels::to_f32(v), f32));
  };
  const DeviceBuffer<std::byte> mean_in = c.layer ? per_row(bref.mean) : DeviceBuffer<std::byte>{};
  const DeviceBuffer<std::byte> rstd_in = per_row(bref.rstd);
  DeviceBuffer<std::byte> y = poisoned(ctx, row_bytes), h = poisoned(ctx, row_bytes),
                          dx = poisoned(ctx, row_bytes), dw = poisoned(ctx, weight_bytes),
                          db = poisoned(ctx, weight_bytes), mean = poisoned(ctx, 4 * c.batch),
                          rstd = poisoned(ctx, 4 * c.batch);
  const auto if_layer = [&](const DeviceBuffer<std::byte>& buf, DType dt) {
    return c.layer ? view(buf, dt) : DeviceView{};
  };
  const auto if_residual = [&](const DeviceBuffer<std::byte>& buf) {
    return c.residual ? view(buf, d) : DeviceView{};
  };

  Norm norm(ctx, type);
  norm.call({.direction = Direction::Forward,
             .x = view(x, d),
             .w = view(w, wd),
             .b = if_layer(b, wd),
             .y = view(y, d),
             .mean = if_layer(mean, f32),
             .rstd = view(rstd, f32),
             .residual = if_residual(res),
             .h = if_residual(h),
             .batch = c.batch,
             .stride = c.row_stride(),
             .eps = static_cast<float>(kEps)});
  const std::uint32_t forward_vec = norm.last_vector_elems();
  norm.call({.direction = Direction::Backward,
             .x = view(x, d),
             .w = view(w, wd),
             .mean = if_layer(mean_in, f32),
             .rstd = view(rstd_in, f32),
             .dy = view(dy, d),
             .dx = view(dx, d),
             .dw = view(dw, wd),
             .db = if_layer(db, wd),
             .dh = if_residual(dh),
             .batch = c.batch,
             .stride = c.row_stride()});
  const std::uint32_t backward_vec = norm.last_vector_elems();
  ctx.synchronize();

  // Vectors divide both strides, so every row starts on one.
  const std::uint32_t steps = std::gcd(c.row_stride(), c.model.group_stride);
  CHECK(steps % forward_vec == 0);
  CHECK(steps % backward_vec == 0);
  const Rows y_rows = gather(c, y.to_host(), d);
  check_output(fproblem, "y", d, y_rows.dense, fref.y);
  CHECK(y_rows.padding_written == 0);
  check_output(fproblem, "rstd", f32, kernels::to_floats(rstd.to_host(), f32), fref.rstd);
  if (c.layer) {
    check_output(fproblem, "mean", f32, kernels::to_floats(mean.to_host(), f32), fref.mean);
  }
  if (c.residual) {
    const Rows h_rows = gather(c, h.to_host(), d);
    check_output(fproblem, "h", d, h_rows.dense, fref.h);
    CHECK(h_rows.padding_written == 0);
  }
  const Rows dx_rows = gather(c, dx.to_host(), d);
  check_output(bproblem, "dx", d, dx_rows.dense, bref.dx);
  CHECK(dx_rows.padding_written == 0);
  check_output(bproblem, "dw", wd, kernels::to_floats(dw.to_host(), wd), bref.dw);
  if (c.layer) check_output(bproblem, "db", wd, kernels::to_floats(db.to_host(), wd), bref.db);
}

}  // namespace

TEST_CASE("weight offset and casting match their float64 models on a GPU, at odd shapes",
          "[runtime][gpu][norms]") {
  PTXDSL_REQUIRE_GPU(ctx);
  using kernels::Casting;
  const ModelCase cases[] = {
      // Gemma: RMS norm, 1 + w, rounded once; one row.
      {.model = {.weight_offset = 1.0f, .casting = Casting::Gemma}},
      // Llama: x̂ rounded to bf16 before ×w, the residual add's h normalized as stored.
      {.dtype = DType::BF16,
       .weight_dtype = DType::F32,
       .batch = 37,
       .stride = 1160,
       .model = {.casting = Casting::Llama},
       .residual = true},
      {.dtype = DType::F16,
       .weight_dtype = DType::F16,
       .batch = 3,
       .stride = 1153,
       .model = {.casting = Casting::Llama}},
      {.layer = true,
       .dtype = DType::F16,
       .weight_dtype = DType::F16,
       .batch = 3,
       .stride = 1153,
       .model = {.weight_offset = -0.5f}},
      {.layer = true,
       .dtype = DType::BF16,
       .weight_dtype = DType::F32,
       .batch = 129,
       .model = {.casting = Casting::Llama}},
      {.layer = true,
       .dtype = DType::F16,
       .weight_dtype = DType::F32,
       .batch = 1,
       .stride = 1155,
       .model = {.weight_offset = 1.0f, .casting = Casting::Gemma},
       .residual = true},
      {.dtype = DType::F32,
       .weight_dtype = DType::F32,
       .batch = 5,
       .model = {.weight_offset = 1.0f, .casting = Casting::Llama}},
  };
  for (const ModelCase& c : cases) run_model_case(ctx, c);
}

TEST_CASE("per-head rows (row groups) match the float64 model on a GPU, ending mid-group",
          "[runtime][gpu][norms]") {
  PTXDSL_REQUIRE_GPU(ctx);
  const ModelCase cases[] = {
      // QK-norm: 32 heads of 128 with a gap of 8, tokens 8 elements beyond their heads, 70 rows
      // (2 tokens and 6 heads), Gemma's offset.
      {.width = 128,
       .batch = 70,
       .stride = 32 * 136 + 8,
       .model = {.weight_offset = 1.0f, .row_groups = 32, .group_stride = 136}},
      // Width 1151, 3 groups 1155 apart (vectors of 1), one row and seven.
      {.layer = true,
       .dtype = DType::F16,
       .weight_dtype = DType::F16,
       .batch = 1,
       .model = {.row_groups = 3, .group_stride = 1155}},
      {.layer = true,
       .dtype = DType::F16,
       .weight_dtype = DType::F32,
       .batch = 7,
       .stride = 3 * 1155 + 1,
       .model = {.casting = kernels::Casting::Gemma, .row_groups = 3, .group_stride = 1155},
       .residual = true},
      {.dtype = DType::BF16,
       .weight_dtype = DType::BF16,
       .batch = 9,
       .stride = 4 * 1152,
       .model = {.casting = kernels::Casting::Llama, .row_groups = 4, .group_stride = 1152}},
  };
  for (const ModelCase& c : cases) run_model_case(ctx, c);
}

namespace {

// A quantized y and its scales against kernels::quantize_rows of the float64 model's y in f32
// with the case's scale mode, as the executor's tests judge them: scales within 1e-5 relative,
// every code at most one step from the model's (a tie the kernel's f32 y and the float64 one
// round to different sides of) and all but 1% of them bit-exact; a group of zeros exactly. `q`
// holds the case's row layout; `scale` the scales row-major (none with a static scale).
void check_quantized(const ModelCase& c, const kernels::NormSpec& spec,
                     const std::vector<double>& ref_y, const std::vector<std::byte>& q,
                     const std::vector<float>& scale, float static_scale) {
  const std::vector<float> y(ref_y.begin(), ref_y.end());
  const kernels::QuantizedRows want = kernels::quantize_rows(spec, y, c.batch, static_scale);
  const std::uint32_t group = kernels::quant_group(spec);
  const std::uint32_t per_row = kernels::quant_scales_per_row(spec);
  REQUIRE(scale.size() == want.scale.size());
  for (std::size_t i = 0; i < scale.size(); ++i) {
    INFO("scale " << i << " of " << per_row << " a row: " << scale[i] << " want " << want.scale[i]);
    CHECK(std::fabs(scale[i] - want.scale[i]) <= 1e-5f * want.scale[i]);
  }
  std::size_t differ = 0, far = 0, between_rows = q.size();
  for (std::uint32_t r = 0; r < c.batch; ++r) {
    for (std::uint32_t i = 0; i < c.width; ++i) {
      const auto got = static_cast<std::uint8_t>(q[c.row_start(r) + i]);
      const std::uint8_t w = want.q[std::size_t{r} * c.width + i];
      const bool zeros = group > 0 && want.scale[std::size_t{r} * per_row + i / group] == 0.0f;
      differ += got != w;
      far += kernels::quant_steps(spec.quant, got, w) > 1 || (zeros && got != w);
    }
    between_rows -= c.width;
  }
  const auto poison = static_cast<std::size_t>(std::count(q.begin(), q.end(), kPoison));
  INFO(kernels::quant_name(spec.quant)
       << " scale " << kernels::quant_scale_name(spec.quant_scale) << ": " << differ
       << " codes differ, " << far << " by more than a step");
  CHECK(far == 0);
  CHECK(differ <= std::size_t{c.batch} * c.width / 100);
  CHECK(poison >= between_rows);  // nothing written between rows (codes may be 0xFF too)
}

// A static scale for the model's y: 0.8 of the per-tensor dynamic one, so that the largest
// values saturate.
float static_scale_for(kernels::Quant quant, const std::vector<double>& y) {
  double absmax = 0;
  for (const double v : y) absmax = std::max(absmax, std::fabs(v));
  return absmax == 0 ? 1.0f : static_cast<float>(0.8 * absmax / kernels::quant_max(quant));
}

// The quantized forward of a case through the C++ API (or the C ABI's ptxdsl_norm_forward_ex):
// y's codes and scales against the quantizer, rstd (and mean, h) against the float64 model.
void run_quant_case(const Context& ctx, const ModelCase& c, bool c_abi) {
  INFO(c.describe() << ", quant " << kernels::quant_name(c.model.quant) << " scale "
                    << kernels::quant_scale_name(c.model.quant_scale)
                    << (c_abi ? ", C ABI" : ", C++ API"));
  const NormType type = c.type();
  const kernels::Residual residual = c.residual ? kernels::Residual::Add : kernels::Residual::None;
  kernels::NormSpec forward = norm_spec(type, Direction::Forward, {.residual = residual});
  forward.row_groups = 1;
  forward.group_stride = 0;
  const kernels::NormInputs in = kernels::make_inputs(forward, c.batch, c.width, 48);
  const kernels::NormReference ref = kernels::norm_reference(forward, in, kEps);
  const kernels::NormProblem problem = kernels::norm_problem(forward, in, ref, kEps);
  const DType d = c.dtype, wd = c.weight_dtype, f32 = DType::F32;
  const QuantOutput out = quant_output(type);
  const float static_scale = static_scale_for(c.model.quant, ref.y);
  const DeviceBuffer<std::byte> x = upload(ctx, scatter(c, in.x));
  const DeviceBuffer<std::byte> w = upload(ctx, in.w.bytes);
  const DeviceBuffer<std::byte> b = c.layer ? upload(ctx, in.b.bytes) : DeviceBuffer<std::byte>{};
  const DeviceBuffer<std::byte> res =
      c.residual ? upload(ctx, scatter(c, in.residual)) : DeviceBuffer<std::byte>{};
  const DeviceBuffer<float> scale_in(ctx, std::span<const float>(&static_scale, 1));
  const std::size_t row_bytes = c.elements() * static_cast<std::size_t>(kernels::dtype_bytes(d));
  const std::size_t scale_bytes = quant_scale_bytes(type, c.batch);
  DeviceBuffer<std::byte> y = poisoned(ctx, out.y_bytes(c.elements())),
                          y_scale = poisoned(ctx, std::max<std::size_t>(scale_bytes, 4)),
                          h = poisoned(ctx, row_bytes), mean = poisoned(ctx, 4 * c.batch),
                          rstd = poisoned(ctx, 4 * c.batch);
  const auto maybe = [](bool given, const DeviceBuffer<std::byte>& buf) {
    return given ? buf.address() : std::uint64_t{0};
  };
  const bool writes_scales = scale_bytes > 0;
  if (c_abi) {
    ptxdsl_norm_options options{
        .size = sizeof(ptxdsl_norm_options),
        .weight_offset = c.model.weight_offset,
        .casting = kernels::casting_name(c.model.casting).data(),
        .quant = kernels::quant_name(c.model.quant).data(),
        .row_groups = c.model.row_groups,
        .group_stride = c.model.group_stride,
        .residual_in_f32 = 0,
        .deterministic = nullptr,
        .quant_scale = kernels::quant_scale_name(c.model.quant_scale).data(),
        .quant_scale_layout = nullptr,
        .quant_scale_in = nullptr};
    if (out.reads_scale_in) {
      options.quant_scale_in = reinterpret_cast<const float*>(scale_in.address());
    }
    const auto ptr = [](std::uint64_t a) { return reinterpret_cast<void*>(a); };
    const std::int32_t status = ptxdsl_norm_forward_ex(
        ctx.device(), c.layer ? PTXDSL_LAYER_NORM : PTXDSL_RMS_NORM, static_cast<std::int32_t>(d),
        static_cast<std::int32_t>(wd), c.batch, c.width, c.row_stride(), &options, ptr(x.address()),
        ptr(w.address()), ptr(maybe(c.layer, b)), ptr(maybe(c.residual, res)),
        ptr(maybe(c.residual, h)), ptr(y.address()),
        static_cast<float*>(ptr(maybe(writes_scales, y_scale))),
        static_cast<float*>(ptr(maybe(c.layer, mean))), static_cast<float*>(ptr(rstd.address())),
        static_cast<float>(kEps), nullptr);
    INFO(ptxdsl_last_error());
    REQUIRE(status == PTXDSL_SUCCESS);
  } else {
    Norm norm(ctx, type);
    const auto v = [&](bool given, const DeviceBuffer<std::byte>& buf, DType dt) {
      return given ? view(buf, dt) : DeviceView{};
    };
    norm.call({.direction = Direction::Forward,
               .x = view(x, d),
               .w = view(w, wd),
               .b = v(c.layer, b, wd),
               .y = DeviceView(y.address(), y.bytes()),
               .mean = v(c.layer, mean, f32),
               .rstd = view(rstd, f32),
               .y_scale = writes_scales ? view(y_scale, f32) : DeviceView{},
               .quant_scale_in = out.reads_scale_in ? DeviceView(scale_in) : DeviceView{},
               .residual = v(c.residual, res, d),
               .h = v(c.residual, h, d),
               .batch = c.batch,
               .stride = c.row_stride(),
               .eps = static_cast<float>(kEps)});
  }
  ctx.synchronize();
  const std::vector<float> scales =
      writes_scales ? kernels::to_floats(y_scale.to_host(), f32, scale_bytes / 4)
                    : std::vector<float>{};
  check_quantized(c, norm_spec(type, Direction::Forward), ref.y, y.to_host(), scales, static_scale);
  CHECK(scale_in.to_host() == std::vector<float>{static_scale});  // read, never written
  check_output(problem, "rstd", f32, kernels::to_floats(rstd.to_host(), f32), ref.rstd);
  if (c.layer) {
    check_output(problem, "mean", f32, kernels::to_floats(mean.to_host(), f32), ref.mean);
  }
  if (c.residual) {
    const Rows h_rows = gather(c, h.to_host(), d);
    check_output(problem, "h", d, h_rows.dense, ref.h);
    CHECK(h_rows.padding_written == 0);
  }
}

}  // namespace

TEST_CASE(
    "quantized forwards (fp8 e4m3/e5m2, int8; per-token, static and group128 scales) on a GPU "
    "match the host quantizer, through the C++ API and the C ABI",
    "[runtime][gpu][norms]") {
  PTXDSL_REQUIRE_GPU(ctx);
  using kernels::Quant;
  using kernels::QuantScale;
  const bool fp8 = ctx.info().model.arch() >= Arch::Sm90;
  std::vector<ModelCase> cases;
  for (const Quant q : {Quant::Fp8E4m3, Quant::Fp8E5m2, Quant::Int8}) {
    if (q != Quant::Int8 && !fp8) continue;
    for (const QuantScale scale : {QuantScale::PerToken, QuantScale::Static}) {
      cases.push_back({.batch = 37, .stride = 1160, .model = {.quant = q, .quant_scale = scale}});
      cases.push_back({.layer = true,
                       .dtype = DType::F16,
                       .weight_dtype = DType::F32,
                       .batch = 3,
                       .stride = 1153,
                       .model = {.weight_offset = 1.0f,
                                 .casting = kernels::Casting::Gemma,
                                 .quant = q,
                                 .quant_scale = scale},
                       .residual = true});
      cases.push_back(
          {.dtype = DType::F32,
           .weight_dtype = DType::F32,
           .batch = 1,
           .model = {.casting = kernels::Casting::Llama, .quant = q, .quant_scale = scale}});
    }
    // group128 at widths it divides: DeepGEMM's rows, a strided layer norm with the residual
    // add, and QK-norm into FP8 (8 heads of 128, two tokens and three heads).
    cases.push_back(
        {.width = 4096, .batch = 37, .model = {.quant = q, .quant_scale = QuantScale::Group128}});
    cases.push_back({.layer = true,
                     .dtype = DType::F16,
                     .weight_dtype = DType::F32,
                     .width = 1152,
                     .batch = 3,
                     .stride = 1160,
                     .model = {.quant = q, .quant_scale = QuantScale::Group128},
                     .residual = true});
    for (const QuantScale scale :
         {QuantScale::PerToken, QuantScale::Static, QuantScale::Group128}) {
      cases.push_back({.width = 128,
                       .batch = 19,
                       .stride = 8 * 136,
                       .model = {.weight_offset = 1.0f,
                                 .row_groups = 8,
                                 .group_stride = 136,
                                 .quant = q,
                                 .quant_scale = scale}});
    }
  }
  for (const ModelCase& c : cases) {
    run_quant_case(ctx, c, false);
    run_quant_case(ctx, c, true);
  }
}

TEST_CASE(
    "block-scaled formats (mxfp8, nvfp4) on a GPU without sm_100a are refused naming the "
    "target they need",
    "[runtime][gpu][norms]") {
  PTXDSL_REQUIRE_GPU(ctx);
  if (ctx.info().model.runs(Arch::Sm100a)) {
    PTXDSL_SKIP("this GPU runs sm_100a: the block-scaled formats launch here");
  }
  for (const kernels::Quant q : {kernels::Quant::Mxfp8, kernels::Quant::Nvfp4}) {
    const NormType t{false, DType::BF16, DType::BF16, 4096, {.quant = q}};
    CHECK_THROWS_WITH((Norm(ctx, t)),
                      Catch::Contains(fmt::format("quant {}", kernels::quant_name(q))) &&
                          Catch::Contains("needs sm_100a"));
  }
}

TEST_CASE("the model options through the C ABI's _ex functions give the C++ API's bits",
          "[runtime][gpu][norms][capi]") {
  PTXDSL_REQUIRE_GPU(ctx);
  const ModelCase cases[] = {
      {.width = 128,
       .batch = 70,
       .stride = 32 * 136 + 8,
       .model = {.weight_offset = 1.0f,
                 .casting = kernels::Casting::Gemma,
                 .row_groups = 32,
                 .group_stride = 136}},
      {.layer = true,
       .dtype = DType::F16,
       .weight_dtype = DType::F32,
       .batch = 37,
       .stride = 1160,
       .model = {.weight_offset = -0.5f, .casting = kernels::Casting::Llama}},
  };
  for (const ModelCase& c : cases) {
    INFO(c.describe());
    const kernels::NormSpec spec = norm_spec(c.type(), Direction::Forward);
    kernels::NormSpec dense = spec;
    dense.row_groups = 1;
    dense.group_stride = 0;
    const kernels::NormInputs in = kernels::make_inputs(dense, c.batch, c.width, 49);
    const DType d = c.dtype, wd = c.weight_dtype, f32 = DType::F32;
    const std::size_t row_bytes = c.elements() * static_cast<std::size_t>(kernels::dtype_bytes(d));
    const std::size_t weight_bytes =
        std::size_t{c.width} * static_cast<std::size_t>(kernels::dtype_bytes(wd));
    const DeviceBuffer<std::byte> x = upload(ctx, scatter(c, in.x));
    const DeviceBuffer<std::byte> dy = upload(ctx, scatter(c, in.dy));
    const DeviceBuffer<std::byte> w = upload(ctx, in.w.bytes);
    const DeviceBuffer<std::byte> b = c.layer ? upload(ctx, in.b.bytes) : DeviceBuffer<std::byte>{};
    // [0]: the C++ API's outputs, [1]: the C ABI's.
    struct Outputs {
      DeviceBuffer<std::byte> y, mean, rstd, dx, dw, db;
    } out[2];
    for (Outputs& o : out) {
      o.y = poisoned(ctx, row_bytes);
      o.dx = poisoned(ctx, row_bytes);
      o.mean = poisoned(ctx, 4 * c.batch);
      o.rstd = poisoned(ctx, 4 * c.batch);
      o.dw = poisoned(ctx, weight_bytes);
      o.db = poisoned(ctx, weight_bytes);
    }
    const auto if_layer = [&](const DeviceBuffer<std::byte>& buf, DType dt) {
      return c.layer ? view(buf, dt) : DeviceView{};
    };
    Norm norm(ctx, c.type());
    norm.call({.direction = Direction::Forward,
               .x = view(x, d),
               .w = view(w, wd),
               .b = if_layer(b, wd),
               .y = view(out[0].y, d),
               .mean = if_layer(out[0].mean, f32),
               .rstd = view(out[0].rstd, f32),
               .batch = c.batch,
               .stride = c.row_stride(),
               .eps = static_cast<float>(kEps)});
    norm.call({.direction = Direction::Backward,
               .x = view(x, d),
               .w = view(w, wd),
               .mean = if_layer(out[0].mean, f32),
               .rstd = view(out[0].rstd, f32),
               .dy = view(dy, d),
               .dx = view(out[0].dx, d),
               .dw = view(out[0].dw, wd),
               .db = if_layer(out[0].db, wd),
               .batch = c.batch,
               .stride = c.row_stride()});
    const ptxdsl_norm_options options{.size = sizeof(ptxdsl_norm_options),
                                      .weight_offset = c.model.weight_offset,
                                      .casting = kernels::casting_name(c.model.casting).data(),
                                      .quant = nullptr,
                                      .row_groups = c.model.row_groups,
                                      .group_stride = c.model.group_stride,
                                      .residual_in_f32 = 0,
                                      .deterministic = nullptr,
                                      .quant_scale = nullptr,
                                      .quant_scale_layout = nullptr,
                                      .quant_scale_in = nullptr};
    const auto p = [](const DeviceBuffer<std::byte>& buf) {
      return reinterpret_cast<void*>(buf.address());
    };
    const std::int32_t norm_code = c.layer ? PTXDSL_LAYER_NORM : PTXDSL_RMS_NORM;
    std::int32_t status = ptxdsl_norm_forward_ex(
        ctx.device(), norm_code, static_cast<std::int32_t>(d), static_cast<std::int32_t>(wd),
        c.batch, c.width, c.row_stride(), &options, p(x), p(w), c.layer ? p(b) : nullptr, nullptr,
        nullptr, p(out[1].y), nullptr, c.layer ? static_cast<float*>(p(out[1].mean)) : nullptr,
        static_cast<float*>(p(out[1].rstd)), static_cast<float>(kEps), nullptr);
    INFO(ptxdsl_last_error());
    REQUIRE(status == PTXDSL_SUCCESS);
    status = ptxdsl_norm_backward_ex(
        ctx.device(), norm_code, static_cast<std::int32_t>(d), static_cast<std::int32_t>(wd),
        c.batch, c.width, c.row_stride(), &options, p(dy), nullptr, p(x), p(w),
        c.layer ? static_cast<const float*>(p(out[1].mean)) : nullptr,
        static_cast<const float*>(p(out[1].rstd)), p(out[1].dx), p(out[1].dw),
        c.layer ? p(out[1].db) : nullptr, nullptr, 0, nullptr);
    INFO(ptxdsl_last_error());
    REQUIRE(status == PTXDSL_SUCCESS);
    ctx.synchronize();
    CHECK(out[0].y.to_host() == out[1].y.to_host());
    CHECK(out[0].rstd.to_host() == out[1].rstd.to_host());
    CHECK(out[0].mean.to_host() == out[1].mean.to_host());
    CHECK(out[0].dx.to_host() == out[1].dx.to_host());
    CHECK(out[0].dw.to_host() == out[1].dw.to_host());
    CHECK(out[0].db.to_host() == out[1].db.to_host());
  }
}
