// A norm's variant fields (affine, residual, outputs, weight offset, casting, row groups): their
// names, and the tensors, roundings and row addresses they give a kernel.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cmath>

#include "ptxdsl/dsl/error.hpp"
#include "ptxdsl/kernels/norm.hpp"

namespace ptxdsl::kernels {
namespace {

// The name of `v` in `names` (an enum's values in order), or the parse of one with `what` and the
// allowed names in its error.
template <class E, std::size_t N>
E parse_name(std::string_view name, const std::string_view (&names)[N], std::string_view what) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<E>(i);
  }
  throw Error(fmt::format("{} must be one of {}, got '{}'", what, fmt::join(names, ", "), name));
}
template <class E, std::size_t N>
std::string_view name_of(E v, const std::string_view (&names)[N]) {
  const auto i = static_cast<std::size_t>(v);
  return i < N ? names[i] : "?";
}

constexpr std::string_view kAffineNames[] = {"full", "weight", "none"};
constexpr std::string_view kResidualNames[] = {"none", "add", "add_f32"};
constexpr std::string_view kOutputsNames[] = {"all", "dx"};
constexpr std::string_view kCastingNames[] = {"none", "llama", "gemma"};
// A quantized output's format, one row a Quant in its order: its name, its suffix, its largest
// finite value (int8: symmetric, so -128 is never written), what y and y_scale hold, the elements
// a scale covers where the format fixes it (OCP MX: 32, NVFP4: 16), and whether it reads the
// caller's global scale (NVFP4).
struct QuantFormatRow {
  std::string_view name, suffix;
  float max;
  ScalarType element, scale;
  std::uint32_t block;
  bool global_scale;
};
constexpr QuantFormatRow kQuantFormats[] = {
    {"none", "", 0.0f, ScalarType::F32, ScalarType::F32, 0, false},
    {"fp8-e4m3", "_qe4m3", 448.0f, ScalarType::E4M3, ScalarType::F32, 0, false},
    {"fp8-e5m2", "_qe5m2", 57344.0f, ScalarType::E5M2, ScalarType::F32, 0, false},
    {"int8", "_qi8", 127.0f, ScalarType::S8, ScalarType::F32, 0, false},
    {"mxfp8", "_qmxfp8", 448.0f, ScalarType::E4M3, ScalarType::U8, 32, false},
    {"nvfp4", "_qnvfp4", 6.0f, ScalarType::E2M1x2, ScalarType::E4M3, 16, true},
};
constexpr std::string_view kQuantNames[] = {kQuantFormats[0].name, kQuantFormats[1].name,
                                            kQuantFormats[2].name, kQuantFormats[3].name,
                                            kQuantFormats[4].name, kQuantFormats[5].name};
const QuantFormatRow& format_row(Quant q) {
  return kQuantFormats[static_cast<std::size_t>(q)];
}
// A quant scale mode: its name, its suffix, whether the kernel writes the scales, and the
// elements each covers (0: the whole row).
struct QuantScaleRow {
  std::string_view name, suffix;
  bool written;
  std::uint32_t group;
};
constexpr QuantScaleRow kQuantScales[] = {
    {"per-token", "", true, 0},
    {"static", "_static", false, 0},
    {"group128", "_grp128", true, 128},
};
constexpr std::string_view kQuantScaleLayoutNames[] = {"row-major", "cublas"};
// cuBLAS's block-scale tile: 128 rows × 4 blocks, 512 entries.
constexpr std::uint32_t kTileRows = 128, kTileBlocks = 4;
constexpr std::string_view kQuantScaleNames[] = {kQuantScales[0].name, kQuantScales[1].name,
                                                 kQuantScales[2].name};

}  // namespace

std::string_view affine_name(Affine a) {
  return name_of(a, kAffineNames);
}
Affine parse_affine(std::string_view name) {
  return parse_name<Affine>(name, kAffineNames, "affine");
}
std::string_view residual_name(Residual r) {
  return name_of(r, kResidualNames);
}
Residual parse_residual(std::string_view name) {
  return parse_name<Residual>(name, kResidualNames, "residual");
}
std::string_view outputs_name(Outputs o) {
  return name_of(o, kOutputsNames);
}
Outputs parse_outputs(std::string_view name) {
  return parse_name<Outputs>(name, kOutputsNames, "outputs");
}

std::string_view casting_name(Casting c) {
  return name_of(c, kCastingNames);
}
Casting parse_casting(std::string_view name) {
  return parse_name<Casting>(name, kCastingNames, "casting");
}

std::string_view quant_name(Quant q) {
  return name_of(q, kQuantNames);
}
Quant parse_quant(std::string_view name) {
  return parse_name<Quant>(name, kQuantNames, "quant");
}
float quant_max(Quant q) {
  return format_row(q).max;
}
std::uint32_t quant_block(Quant q) {
  return format_row(q).block;
}
ScalarType quant_element_type(Quant q) {
  return format_row(q).element;
}
ScalarType quant_scale_type(Quant q) {
  return format_row(q).scale;
}
bool reads_quant_scale(const NormSpec& spec) {
  if (spec.quant == Quant::None || quant_name(spec.quant) == "?") return false;
  return spec.quant_scale == QuantScale::Static || format_row(spec.quant).global_scale;
}

std::string_view quant_scale_name(QuantScale s) {
  return name_of(s, kQuantScaleNames);
}
QuantScale parse_quant_scale(std::string_view name) {
  return parse_name<QuantScale>(name, kQuantScaleNames, "quant scale");
}

std::string_view quant_scale_layout_name(QuantScaleLayout l) {
  return name_of(l, kQuantScaleLayoutNames);
}
QuantScaleLayout parse_quant_scale_layout(std::string_view name) {
  return parse_name<QuantScaleLayout>(name, kQuantScaleLayoutNames, "quant scale layout");
}

std::uint64_t quant_scale_index(const NormSpec& spec, std::uint32_t row, std::uint32_t block) {
  const std::uint64_t per_row = quant_scales_per_row(spec);
  if (spec.quant_scale_layout != QuantScaleLayout::Cublas) return row * per_row + block;
  const std::uint64_t tiles_a_row = (per_row + kTileBlocks - 1) / kTileBlocks;
  const std::uint64_t tile = row / kTileRows * tiles_a_row + block / kTileBlocks;
  return tile * kTileRows * kTileBlocks + row % 32 * 16 + row % kTileRows / 32 * 4 +
         block % kTileBlocks;
}

std::uint64_t quant_scale_entries(const NormSpec& spec, std::uint32_t batch) {
  const std::uint64_t per_row = quant_scales_per_row(spec);
  if (spec.quant_scale_layout != QuantScaleLayout::Cublas) return batch * per_row;
  const std::uint64_t tiles_a_row = (per_row + kTileBlocks - 1) / kTileBlocks;
  return (std::uint64_t{batch} + kTileRows - 1) / kTileRows * tiles_a_row * kTileRows * kTileBlocks;
}

std::uint32_t quant_group(const NormSpec& spec) {
  if (spec.quant == Quant::None || quant_scale_name(spec.quant_scale) == "?") return 0;
  if (quant_block(spec.quant) > 0) return quant_block(spec.quant);
  const QuantScaleRow& row = kQuantScales[static_cast<std::size_t>(spec.quant_scale)];
  if (!row.written) return 0;
  return row.group == 0 ? spec.width : row.group;
}

std::uint32_t quant_scales_per_row(const NormSpec& spec) {
  const std::uint32_t group = quant_group(spec);
  return group == 0 ? 0 : (spec.width + group - 1) / group;
}

float parse_weight_offset(std::string_view text) {
  float v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(v)) {
    throw Error(
        fmt::format("weight offset must be a finite number (Gemma's is 1), got '{}'", text));
  }
  return v;
}

bool has_weight(const NormSpec& spec) {
  return spec.affine != Affine::None;
}

bool has_bias(const NormSpec& spec) {
  return is_layer_norm(spec.kind) && spec.affine == Affine::Full;
}

bool has_weight_grads(const NormSpec& spec) {
  return is_backward(spec.kind) && has_weight(spec) && spec.outputs == Outputs::All;
}

bool has_residual(const NormSpec& spec) {
  return spec.residual != Residual::None;
}

DType residual_dtype(const NormSpec& spec) {
  return spec.residual == Residual::AddF32 ? DType::F32 : spec.dtype;
}

bool normalizes_stored_h(const NormSpec& spec) {
  return spec.casting != Casting::None && !is_backward(spec.kind) && has_residual(spec) &&
         residual_dtype(spec) != DType::F32;
}

std::optional<DType> rounded_xhat(const NormSpec& spec) {
  if (spec.casting != Casting::Llama || spec.dtype == DType::F32) return std::nullopt;
  return spec.dtype;
}

std::uint64_t row_span(const NormSpec& spec) {
  return std::uint64_t{spec.row_groups - 1} * spec.group_stride + spec.width;
}

std::string variant_suffix(const NormSpec& spec) {
  std::string s;
  if (spec.residual == Residual::Add) s += "_res";
  if (spec.residual == Residual::AddF32) s += "_resf32";
  if (spec.affine == Affine::Weight) s += "_wonly";
  if (spec.affine == Affine::None) s += "_noaffine";
  if (spec.outputs == Outputs::Dx) s += "_dx";
  if (spec.weight_offset != 0.0f) {
    // The shortest text that reads back as the same float, spelled as a PTX identifier allows.
    for (char c : fmt::format("_wo{}", spec.weight_offset)) {
      if (c == '.') s += 'p';
      if (c == '-') s += 'm';
      if (c != '.' && c != '-' && c != '+') s += c;
    }
  }
  if (spec.casting != Casting::None) s += fmt::format("_{}", casting_name(spec.casting));
  if (quant_name(spec.quant) != "?") s += format_row(spec.quant).suffix;
  if (spec.quant != Quant::None && quant_scale_name(spec.quant_scale) != "?") {
    s += kQuantScales[static_cast<std::size_t>(spec.quant_scale)].suffix;
  }
  if (spec.quant_scale_layout == QuantScaleLayout::Cublas) s += "_sfcublas";
  if (spec.row_groups != 1) s += fmt::format("_g{}x{}", spec.row_groups, spec.group_stride);
  return s;
}

}  // namespace ptxdsl::kernels
