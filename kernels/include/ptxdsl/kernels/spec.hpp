#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ptxdsl/dsl/device_model.hpp"
#include "ptxdsl/dsl/module.hpp"
#include "ptxdsl/kernels/knobs.hpp"

// What to build: the norm kernel family's spec (kernel, dtypes, width, target, variant, knobs) and
// the checks on it.
namespace ptxdsl::kernels {

enum class NormKind { LayerNormFwd, LayerNormBwd, RmsNormFwd, RmsNormBwd };
enum class DType { F32, F16, BF16 };

std::string_view kind_name(NormKind k);      // "ln_fwd", "ln_bwd", "rms_fwd", "rms_bwd"
bool is_backward(NormKind k);                // ln_bwd, rms_bwd
bool is_layer_norm(NormKind k);              // ln_fwd, ln_bwd
NormKind parse_kind(std::string_view name);  // throws Error listing the allowed names
std::string_view dtype_name(DType d);        // "f32", "f16", "bf16"
DType parse_dtype(std::string_view name);    // throws Error listing the allowed names
int dtype_bytes(DType d);

// The variants of a norm, build-time like the dtypes (each its own kernel, named by its suffix).
// Which affine parameters the norm takes: Full is layer norm's w and b, RMS norm's w; Weight is
// layer norm's w without b; None takes neither (y is the normalized row).
enum class Affine { Full, Weight, None };
// The fused residual add. Forward: h = x + residual is stored and normalized (in f32, before h is
// rounded). Add: residual and h in the dtype; AddF32: both in f32. Backward: x is the stored h,
// and dh (h's gradient from its other uses) is added into dx, which is then the residual's
// gradient too; Add only (its h is in the dtype).
enum class Residual { None, Add, AddF32 };
// What a backward writes: dx with dw (and db), or dx alone.
enum class Outputs { All, Dx };
// Where a forward rounds to the row dtype, to compute what a model's reference computes
// (docs/kernels.md, "The model's numerics"). None: once, y from f32. Llama (Hugging Face's Llama):
// x̂ rounded to the row dtype before the affine; its backward sums dw from x̂ rounded so. Gemma
// (Hugging Face's Gemma): once, y from f32. Llama and Gemma normalize the residual add's h as
// stored (rounded to its dtype), as those models add it before their norm.
enum class Casting { None, Llama, Gemma };
// A forward's quantized output (docs/kernels.md, "Quantized output"): y (f32, before its final
// rounding) divided by a scale, rounded to nearest even and saturated, written in the format
// alone; the scales as QuantScale says. FP8 needs sm_90; int8 is symmetric, [-127, 127]. Mxfp8
// (OCP MX, sm_100a): e4m3 elements with their own scales, a power of two (a ue8m0 byte) per 32
// elements of a row, y_scale u8 [rows][ceil(width / 32)] row-major. Nvfp4 (NVIDIA's, sm_100a):
// e2m1 elements two a byte (the first in the low nibble), an e4m3 scale per 16 elements,
// y_scale [rows][ceil(width / 16)] bytes, and a global f32 scale the caller gives in
// quant_scale_in: y ≈ q · scale · global.
enum class Quant { None, Fp8E4m3, Fp8E5m2, Int8, Mxfp8, Nvfp4 };
// Where a quantized output's scales come from (docs/kernels.md, "Quantized output"). PerToken:
// absmax(y) / the format's largest value, one f32 a row written to y_scale (0 for a row of zeros).
// Static: one f32 the caller gives in quant_scale_in (read, never written). Group128: as per-token
// over each 128 consecutive elements of a row (the last group ragged), y_scale f32
// [rows][ceil(width / 128)] row-major (DeepGEMM's 1×128 activation scales).
enum class QuantScale { PerToken, Static, Group128 };
// Where mxfp8's and nvfp4's block scales lie in y_scale. RowMajor: [rows][blocks]. Cublas:
// cuBLAS's block-scaled layout, 512-byte tiles of 128 rows × 4 blocks (row r, block c of a tile
// at (r % 32)·16 + (r / 32)·4 + c), the tiles row-major over [ceil(rows / 128)][ceil(blocks / 4)];
// the padding past the rows and blocks is left as it was (zero it for cuBLAS).
enum class QuantScaleLayout { RowMajor, Cublas };
std::string_view affine_name(Affine a);      // "full", "weight", "none"
Affine parse_affine(std::string_view name);  // throws Error listing the allowed names
std::string_view residual_name(Residual r);  // "none", "add", "add_f32"
Residual parse_residual(std::string_view name);
std::string_view outputs_name(Outputs o);  // "all", "dx"
Outputs parse_outputs(std::string_view name);
std::string_view casting_name(Casting c);  // "none", "llama", "gemma"
Casting parse_casting(std::string_view name);
// "none", "fp8-e4m3", "fp8-e5m2", "int8", "mxfp8", "nvfp4"
std::string_view quant_name(Quant q);
Quant parse_quant(std::string_view name);
// The largest value of the format q is quantized to (448, 57344, 127; mxfp8's e4m3: 448; nvfp4's
// e2m1: 6); a dynamic scale is the absmax of the elements it covers divided by it.
float quant_max(Quant q);
// The elements one scale of the format covers where the format fixes it (mxfp8: 32, nvfp4: 16),
// else 0.
std::uint32_t quant_block(Quant q);
// What y holds (e4m3, e5m2, s8; nvfp4: e2m1x2, two a byte) and y_scale (f32; mxfp8: u8, the
// ue8m0 bytes; nvfp4: e4m3).
ScalarType quant_element_type(Quant q);
ScalarType quant_scale_type(Quant q);
std::string_view quant_scale_name(QuantScale s);  // "per-token", "static", "group128"
QuantScale parse_quant_scale(std::string_view name);
std::string_view quant_scale_layout_name(QuantScaleLayout l);  // "row-major", "cublas"
QuantScaleLayout parse_quant_scale_layout(std::string_view name);
// A weight offset parsed from text (a finite decimal); throws Error naming the text.
float parse_weight_offset(std::string_view text);

inline constexpr std::uint32_t kMaxWidth = 262144;
// Rows a launch takes: row indices and the grid's row groups stay within 32 bits without wrapping.
inline constexpr std::uint32_t kMaxBatch = 0x7fffffff;
// Row groups a spec may have (heads a token).
inline constexpr std::uint32_t kMaxRowGroups = 65536;

// Whether a knob of this scope means something to the kernel.
bool knob_applies(KnobScope scope, NormKind kind);

// The PTX version norms are written in unless the caller names one: the arch's least, and 8.1
// from sm_90 on, where st.async lets a row's cluster exchange its sums without a cluster barrier
// (ClusterSlots::Exchange::Transactions). A runtime lowers it to what its driver JITs.
PtxVersion default_ptx_version(Arch arch);

struct NormSpec {
  NormKind kind = NormKind::RmsNormFwd;
  DType dtype = DType::F16;         // x, y, dy, dx
  DType weight_dtype = DType::F16;  // w (and b, dw, db): dtype or F32
  std::uint32_t width = 0;          // elements per row, [1, kMaxWidth]
  // The PTX target: which instructions the kernel may use. It must run on `device`.
  Arch arch = Arch::Sm90;
  PtxVersion ptx_version = default_ptx_version(Arch::Sm90);
  NormKnobs knobs;
  Affine affine = Affine::Full;
  Residual residual = Residual::None;
  Outputs outputs = Outputs::All;  // backward only
  // Gemma's zero-centred weights: y = x̂·(weight_offset + w) (+ b), the sum formed in f32; the
  // backward's dx uses it too (dw is unchanged). Needs a weight; finite.
  float weight_offset = 0.0f;
  Casting casting = Casting::None;
  Quant quant = Quant::None;                                         // forward only
  QuantScale quant_scale = QuantScale::PerToken;                     // with quant
  QuantScaleLayout quant_scale_layout = QuantScaleLayout::RowMajor;  // with mxfp8, nvfp4
  // Two-level rows (per-head norms on a fused QKV buffer, without a copy): row r of x, y, dy, dx,
  // residual, h and dh starts at (r / row_groups)·stride + (r % row_groups)·group_stride elements
  // (mean and rstd stay one per row); row_groups 1 (default, group_stride 0): r·stride.
  // group_stride: at least the width and a multiple of the vector; a launch's stride at least
  // row_span(spec).
  std::uint32_t row_groups = 1;
  std::uint32_t group_stride = 0;
  // Take the device's tuning table's knobs where the table applies (kernels/tuning.hpp); false
  // plans by the heuristic alone (what `ptxdsl tune` measures the table's entries against).
  bool tuning = true;
  // What the kernel is planned for: its SMs, threads, registers and shared memory bound every
  // choice, and the plan must fit it. The runtime fills it from the driver.
  DeviceModel device = default_device();
};
// The tensors a spec's kernels take, from its variant fields (read by the builders, the
// references and the hosts alike).
bool has_weight(const NormSpec& spec);        // w
bool has_bias(const NormSpec& spec);          // b (layer norm, Affine::Full)
bool has_weight_grads(const NormSpec& spec);  // a backward that writes dw (and db when has_bias)
bool has_residual(const NormSpec& spec);      // forward: residual and h; backward: dh
DType residual_dtype(const NormSpec& spec);   // of residual, h and dh: f32 for AddF32
// The elements one y_scale entry covers: the width (per-token), 128 (group128), the format's block
// (mxfp8: 32, nvfp4: 16); 0 where the kernel writes no scale (no quant, static).
std::uint32_t quant_group(const NormSpec& spec);
// The y_scale entries of a row: ceil(width / quant_group), 0 where none are written.
std::uint32_t quant_scales_per_row(const NormSpec& spec);
// Where row `row`'s scale `block` lies in y_scale, in entries, as quant_scale_layout says; and
// the entries y_scale spans for `batch` rows (Cublas: whole tiles).
std::uint64_t quant_scale_index(const NormSpec& spec, std::uint32_t row, std::uint32_t block);
std::uint64_t quant_scale_entries(const NormSpec& spec, std::uint32_t batch);
// The kernel reads quant_scale_in: QuantScale::Static's scale, or nvfp4's global scale.
bool reads_quant_scale(const NormSpec& spec);
// A forward with the residual add that normalizes h as stored, rounded to its 16-bit dtype
// (Casting Llama and Gemma).
bool normalizes_stored_h(const NormSpec& spec);
// The dtype x̂ is rounded to before the affine and dw's sums (Casting Llama, 16-bit rows), if any.
std::optional<DType> rounded_xhat(const NormSpec& spec);
// The elements a group of rows spans, (row_groups − 1)·group_stride + width: the least stride a
// launch of the spec takes (its width without row groups).
std::uint64_t row_span(const NormSpec& spec);
// The entry names' suffix of the spec's variant: "" for the default (full affine, no residual,
// every output, no weight offset, casting none), else e.g. "_res", "_resf32", "_noaffine",
// "_wonly", "_dx", "_wo1" (weight offset 1; "_wo0p5", "_wom1" for 0.5, -1), "_llama", "_gemma",
// "_g8x128" (row groups 8, group stride 128), "_qe4m3", "_qe5m2", "_qi8", "_qmxfp8", "_qnvfp4"
// (quantized output), "_static", "_grp128" (its scale, where not per-token), "_sfcublas" (block
// scales in cuBLAS's layout).
std::string variant_suffix(const NormSpec& spec);

// resolve() (plan.hpp) with the plan dropped: throws ptxdsl::Error naming the bad value and the
// allowed range.
void validate(const NormSpec& spec);
// For knobs given for this one kernel (the command line's), before resolve(): refuses a knob that
// the spec's kernel ignores (the other direction's, another norm's) and knobs that conflict
// (row_order tickets with single_launch 1). validate() lets those pass because one set of runtime
// knobs serves both directions and spec_for_batch turns on single_launch per call. Plans nothing.
void check_knobs_apply(const NormSpec& spec);
// The weights' dtype: the rows' or f32. Throws ptxdsl::Error naming both (validate() checks it).
void check_weight_dtype(DType dtype, DType weight_dtype);
// Host-side checks before a launch: batch in [1, kMaxBatch], stride ≥ width. Throw ptxdsl::Error.
void check_batch(std::uint32_t batch);
void check_stride(std::uint32_t width, std::uint32_t stride);
// The widest vector (elements per access) that a launch with this row stride and these addresses
// may use: `row_address_bits` is the OR of the x/y/dy/dx addresses, `weight_address_bits` that of
// w/b/dw/db, `residual_address_bits` that of residual/h/dh (in residual_dtype). Build a spec with
// knobs.vector_elems set to it when it is below the default.
std::uint32_t vector_elems_for(DType dtype, DType weight_dtype, std::uint32_t stride,
                               std::uint64_t row_address_bits, std::uint64_t weight_address_bits,
                               DType residual_dtype = DType::F32,
                               std::uint64_t residual_address_bits = 0);

}  // namespace ptxdsl::kernels
