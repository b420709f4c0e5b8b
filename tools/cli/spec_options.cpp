#include <fmt/format.h>

#include <algorithm>

#include "cli.hpp"
#include "ptxdsl/dsl/error.hpp"

namespace ptxdsl::cli {

void SpecOptions::add_to(CLI::App& app, bool required, bool device_option) {
  auto* k = app.add_option("kernel", kernel, "ln_fwd, ln_bwd, rms_fwd or rms_bwd");
  auto* w = app.add_option("--width", width,
                           fmt::format("elements per row, 1 to {}", kernels::kMaxWidth));
  auto* d = app.add_option("--dtype", dtype, "x, y, dy, dx: f32, f16 or bf16");
  if (required) {
    k->required();
    w->required();
    d->required();
  }
  app.add_option("--weight-dtype", weight_dtype,
                 "w, b, dw, db: the input's dtype (default) or f32");
  app.add_option("--arch", arch, all_arch_names() + " (default: the device's)");
  if (device_option) {
    app.add_option("--device", device,
                   fmt::format("the device to plan for: {} (default {}); run on a GPU: its ordinal "
                               "(default 0)",
                               device_preset_names(), default_device().name));
  }
  app.add_option("--ptx-version", ptx_version,
                 "7.0 to 9.0 (default 8.1 from sm_90 on, 7.8 for sm_80; on a GPU, no newer than "
                 "its driver takes)");
  app.add_option("--affine", affine,
                 "full (default: layer norm's w and b, RMS norm's w), weight (layer norm's w "
                 "alone) or none");
  app.add_option("--residual", residual,
                 "none (default), add (h = x + residual, normalized and stored; the backward adds "
                 "dh into dx) or add_f32 (forward: residual and h in f32)");
  app.add_option("--outputs", outputs, "backward: all (default: dx, dw, db) or dx");
  app.add_option("--weight-offset", weight_offset,
                 "F in y = x^ (F + w) (+ b), F + w in f32 (default 0; Gemma's is 1); the "
                 "backward's dx uses F + w");
  app.add_option("--casting", casting,
                 "none (default: y rounded once from f32), llama (x^ rounded to the dtype before "
                 "the affine, and in dw) or gemma (y rounded once from f32); llama and gemma "
                 "normalize the residual add's h as stored");
  app.add_option("--quant", quant,
                 "forward: none (default), fp8-e4m3, fp8-e5m2 (sm_90 or newer) or int8: y written "
                 "as y / scale in that format, scale = absmax(y) / 448, 57344 or 127 written one "
                 "f32 a row (y_scale; see --quant-scale); or, on sm_100a, mxfp8 (e4m3 with a "
                 "ue8m0 scale per 32 elements, y_scale bytes [rows][ceil(width / 32)]) or nvfp4 "
                 "(e2m1 two a byte, an e4m3 scale per 16 elements, the global f32 scale in "
                 "quant_scale_in)");
  app.add_option("--quant-scale", quant_scale,
                 "with --quant: per-token (default), static (one f32 the caller gives, "
                 "quant_scale_in) or group128 (absmax / M of each 128 elements of a row, y_scale "
                 "f32 [rows][ceil(width / 128)])");
  app.add_option("--quant-scale-layout", quant_scale_layout,
                 "with --quant mxfp8 or nvfp4: row-major (default, [rows][blocks]) or cublas "
                 "(cuBLAS's tiles of 128 rows x 4 blocks, 512 bytes each)");
  app.add_option("--row-groups", row_groups,
                 fmt::format("G: row r at (r / G) stride + (r % G) S (per-head rows of a QKV "
                             "buffer), 1 to {} (default 1)",
                             kernels::kMaxRowGroups));
  app.add_option("--group-stride", group_stride,
                 "S: elements between the rows of a group (with --row-groups; >= the width)");
  add_knobs_to(app);
}

void SpecOptions::add_knobs_to(CLI::App& app) {
  const std::string group = "Knobs (unset: the shape heuristic decides)";
  std::size_t i = 0;
  for (const kernels::KnobInfo& info : kernels::knob_table()) {
    app.add_option(info.flag(), knobs[i++], std::string(info.help))->group(group);
  }
}

void SpecOptions::require_named() const {
  // As CLI11 words it where it requires them (emit, run).
  if (kernel.empty()) throw UsageError("kernel is required");
  if (width.empty()) throw UsageError("--width is required");
  if (dtype.empty()) throw UsageError("--dtype is required");
}

bool SpecOptions::any_knob() const {
  return std::any_of(knobs.begin(), knobs.end(), [](const std::string& t) { return !t.empty(); });
}

namespace {

bool is_ordinal(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

kernels::NormSpec SpecOptions::parsed() const {
  kernels::NormSpec s;
  s.kind = usage([&] { return kernels::parse_kind(kernel); });
  s.dtype = usage([&] { return kernels::parse_dtype(dtype); });
  s.weight_dtype =
      weight_dtype.empty() ? s.dtype : usage([&] { return kernels::parse_dtype(weight_dtype); });
  if (s.weight_dtype != s.dtype && s.weight_dtype != kernels::DType::F32) {
    throw UsageError(fmt::format("--weight-dtype must be the input's dtype ({}) or f32, got '{}'",
                                 kernels::dtype_name(s.dtype), weight_dtype));
  }
  s.width = static_cast<std::uint32_t>(parse_uint("--width", width, 1, kernels::kMaxWidth));
  // An ordinal is a GPU's, which plans again for itself; it must still be one.
  if (is_ordinal(device)) gpu_ordinal();
  s.device = is_ordinal(device) ? default_device() : device_preset();
  s.arch = arch.empty() ? s.device.arch() : usage([&] { return parse_arch(arch); });
  s.ptx_version = ptx_version.empty() ? kernels::default_ptx_version(s.arch)
                                      : usage([&] { return parse_ptx_version(ptx_version); });
  if (s.ptx_version < min_ptx_version(s.arch)) {
    const PtxVersion least = min_ptx_version(s.arch);
    throw UsageError(fmt::format("--ptx-version must be at least {}.{} for {}, got '{}'",
                                 least.major, least.minor, arch_name(s.arch), ptx_version));
  }
  if (!affine.empty()) s.affine = usage([&] { return kernels::parse_affine(affine); });
  if (!residual.empty()) s.residual = usage([&] { return kernels::parse_residual(residual); });
  if (!outputs.empty()) s.outputs = usage([&] { return kernels::parse_outputs(outputs); });
  if (!weight_offset.empty()) {
    s.weight_offset = usage([&] { return kernels::parse_weight_offset(weight_offset); });
  }
  if (!casting.empty()) s.casting = usage([&] { return kernels::parse_casting(casting); });
  if (!quant.empty()) s.quant = usage([&] { return kernels::parse_quant(quant); });
  if (!quant_scale.empty()) {
    s.quant_scale = usage([&] { return kernels::parse_quant_scale(quant_scale); });
  }
  if (!quant_scale_layout.empty()) {
    s.quant_scale_layout =
        usage([&] { return kernels::parse_quant_scale_layout(quant_scale_layout); });
  }
  if (!row_groups.empty()) {
    s.row_groups = static_cast<std::uint32_t>(
        parse_uint("--row-groups", row_groups, 1, kernels::kMaxRowGroups));
  }
  if (!group_stride.empty()) {
    s.group_stride =
        static_cast<std::uint32_t>(parse_uint("--group-stride", group_stride, 1, 0xffffffff));
  }
  std::size_t i = 0;
  kernels::for_each_knob(s.knobs, [&](const kernels::KnobInfo& info, auto& field) {
    const std::string& text = knobs[i++];
    if (text.empty()) return;
    try {
      kernels::parse_knob(info, text, field);
    } catch (const Error& e) {
      throw UsageError(fmt::format("{}: {}", info.flag(), e.what()));
    }
  });
  // Knobs on the command line are for this one kernel: one it would ignore is a mistake to report.
  usage([&] { kernels::check_knobs_apply(s); });
  return s;
}

kernels::NormSpec SpecOptions::spec() const {
  const kernels::NormSpec s = parsed();
  usage([&] { kernels::validate(s); });
  return s;
}

kernels::Plan SpecOptions::plan() const {
  const kernels::NormSpec s = parsed();
  return usage([&] { return kernels::resolve(s); });
}

kernels::BatchPlans SpecOptions::batch_plans() const {
  const kernels::NormSpec s = parsed();
  return usage([&] { return kernels::resolve_batches(s); });
}

const DeviceModel& SpecOptions::device_preset() const {
  if (device.empty()) return default_device();
  if (is_ordinal(device)) {
    throw UsageError(fmt::format("--device must name a preset here ({}), got '{}'",
                                 device_preset_names(), device));
  }
  try {
    return ptxdsl::device_preset(device);
  } catch (const Error& e) {
    throw UsageError(fmt::format("--device: {}", e.what()));
  }
}

int SpecOptions::gpu_ordinal() const {
  if (device.empty()) return 0;
  if (!is_ordinal(device)) {
    throw UsageError(fmt::format(
        "--device on a GPU is its ordinal (the plan is the GPU's own; presets are for emit, "
        "check and run --cpu), got '{}'",
        device));
  }
  return static_cast<int>(parse_uint("--device", device, 0, 1023));
}

runtime::NormOptions SpecOptions::norm_options(const kernels::NormSpec& spec) const {
  // The knobs are the named kernel's; the other direction of the runtime object keeps the
  // heuristics' choices (and cannot refuse knobs meant for this one).
  runtime::NormOptions o;
  if (kernels::is_backward(spec.kind)) {
    o.backward_knobs = spec.knobs;
  } else {
    o.knobs = spec.knobs;
    o.backward_knobs = kernels::NormKnobs{};
  }
  if (!arch.empty()) o.arch = spec.arch;
  if (!ptx_version.empty()) o.ptx_version = spec.ptx_version;
  return o;
}

kernels::NormSpec make_spec(kernels::NormKind kind, kernels::DType dtype, std::uint32_t width) {
  kernels::NormSpec s;
  s.kind = kind;
  s.dtype = dtype;
  s.weight_dtype = dtype;
  s.width = width;
  return s;
}

}  // namespace ptxdsl::cli
