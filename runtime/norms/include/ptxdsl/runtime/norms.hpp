#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "ptxdsl/kernels/norm.hpp"
#include "ptxdsl/runtime/context.hpp"
#include "ptxdsl/runtime/handles.hpp"
#include "ptxdsl/runtime/memory.hpp"
#include "ptxdsl/runtime/module.hpp"

// The norms' host API: one object per (norm, dtype, weight dtype, width, model options) (Norm;
// LayerNorm and RmsNorm add typed calls), whose calls (NormCall: forward or backward) launch the
// right kernels on device pointers. Objects build (or fetch from the module cache) the kernels
// they need on first use: one JIT per (kernel, width, dtype, model options, device) in the
// program.
//
// Before any launch: batch 0 returns at once; null pointers, a stride below the width, a row count
// a buffer cannot hold, a width or element size other than the object's are refused with
// ptxdsl::Error. A pointer or stride that breaks the kernels' 16-byte vector accesses selects a
// variant with narrower vectors (8, 4, 2 or 1 elements), never a misaligned access.
//
// No call waits for the device or synchronizes a context, so calls may be captured into a graph
// (runtime::Graph; prepare() first, so that no JIT runs during the capture). A backward's
// workspace is the caller's or taken for that call alone from the object's stream-ordered pool
// on the call's stream: calls on different streams never share one.
//
// An object is used from one thread at a time (it holds the launch-argument block); the module
// cache behind it is thread-safe, so objects on several threads share the JIT.
namespace ptxdsl::runtime {

using kernels::DType;

// A device array as the norms take it: an address, and, when the caller's type says so, its size
// in bytes and its element size, which are then checked. Typed buffers and pointers convert; so
// do byte buffers (DeviceBuffer<std::byte>), whose size is checked but not their element type. A
// raw address must be named (DeviceView(address), or with its size), so that no integer becomes a
// pointer by accident.
struct DeviceView {
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;          // 0: unknown, unchecked
  std::uint32_t element_bytes = 0;  // 0: unknown, unchecked

  DeviceView() = default;
  explicit DeviceView(std::uint64_t a, std::uint64_t size_bytes = 0, std::uint32_t element = 0)
      : address(a), bytes(size_bytes), element_bytes(element) {}
  template <class T>
  DeviceView(const DeviceBuffer<T>& b)  // NOLINT
      : address(b.address()), bytes(b.bytes()), element_bytes(sizeof(T) == 1 ? 0 : sizeof(T)) {}
  template <class T>
  DeviceView(DevicePtr<T> p)  // NOLINT
      : address(p.address), element_bytes(sizeof(T) == 1 ? 0 : sizeof(T)) {}
};

// Partial-sum scratch for a backward, when the caller owns it (at least 16-byte aligned).
struct Workspace {
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
};

struct NormOptions {
  kernels::NormKnobs knobs;  // sm_count defaults to the device's SM count
  // The backward's knobs where they differ from the forward's (unset: `knobs` serve both).
  std::optional<kernels::NormKnobs> backward_knobs;
  std::optional<Arch> arch;  // default: from the device's compute capability
  // Default: kernels::default_ptx_version(arch), no newer than the driver JITs (and no older than
  // the target's minimum).
  std::optional<PtxVersion> ptx_version;
  // Plans take the device's tuning table's knobs where it has them (false: the heuristic alone).
  bool tuning_table = true;
  ModuleCache* cache = nullptr;  // default: ModuleCache::global()
};

// Which way a norm call goes.
enum class Direction : std::uint8_t { Forward, Backward };

// What a model's norm asks beyond the default (kernels::NormSpec's fields of the same names,
// docs/kernels.md): each value is its own kernels. The defaults are today's norm.
struct NormModelOptions {
  // y = x̂·(weight_offset + w) (+ b), the sum in f32 (Gemma: 1); calls must give w.
  float weight_offset = 0.0f;
  kernels::Casting casting = kernels::Casting::None;  // where a forward rounds to the row dtype
  // Per-head rows: row r of x, y, dy, dx (and residual, h, dh) starts at
  // (r / row_groups)·stride + (r % row_groups)·group_stride elements; a call's stride is at
  // least (row_groups − 1)·group_stride + width; vectors divide both strides. Row groups 1 takes
  // group stride 0.
  std::uint32_t row_groups = 1;
  std::uint32_t group_stride = 0;
  // The forward's y in this format (docs/kernels.md, "Quantized output"): y / scale rounded and
  // saturated, the scales written to the call's y_scale (quant_output() says their layout); the
  // residual add's h stays in its dtype. The backward is the norm's own (it reads no y).
  kernels::Quant quant = kernels::Quant::None;
  // Where fp8-e4m3's, fp8-e5m2's and int8's scale comes from: per-token (one f32 a row, written),
  // static (the call's quant_scale_in, read; none written) or group128 (one f32 a 128 elements,
  // written as [rows][width / 128]; widths that are multiples of 128). mxfp8 and nvfp4 have
  // their own block scales (per-token here).
  kernels::QuantScale quant_scale = kernels::QuantScale::PerToken;
  // Where mxfp8's and nvfp4's block scales lie in y_scale: row-major, or cuBLAS's tiles.
  kernels::QuantScaleLayout quant_scale_layout = kernels::QuantScaleLayout::RowMajor;
  auto operator<=>(const NormModelOptions&) const = default;
};

// What a norm object is built for, and what a call without one is checked against.
struct NormType {
  bool layer = true;                // layer norm; false: RMS norm
  DType dtype = DType::F16;         // x, y, dy, dx (and residual, h, dh)
  DType weight_dtype = DType::F16;  // w, b, dw, db: the dtype, or F32 with 16-bit rows
  std::uint32_t width = 0;          // elements a row
  NormModelOptions model{};
  auto operator<=>(const NormType&) const = default;
};

// One call of either norm in either direction: the one shape every caller fills (the typed calls
// below, the C ABI, the command line), so that a new call field is added here once. The tensors
// are fields by role; norm_tensors() says which of them a (norm, direction) takes, which it must
// be given and which it writes. A view the call's norm and direction do not take is refused.
//
// Rows are `width` elements `stride` elements apart (0: stride = width); x, y, dy, dx (and the
// residual add's residual, h, dh) use it. mean and rstd are f32, one per row. `width`, when set,
// must equal the object's.
//
// The variant a call launches follows from the views it leaves empty (each variant is its own
// kernel, built at its first call and kept):
// - w and b: empty w takes no affine (y is the normalized row; its backward takes no w and writes
//   no dw, db); layer norm's empty b with a w takes w alone.
// - residual and h (forward): the fused residual add. h = x + residual is written to h and
//   normalized (in f32, before h is rounded); both given, or neither. residual_in_f32: residual
//   and h hold f32 (else the dtype). The backward then takes the forward's h as x, and dh (h's
//   gradient from its other uses, the dtype) is added into dx, which is the residual's gradient
//   too; dh may be empty.
// - dw and db (backward): both empty writes dx alone; layer norm's dw without db fits a forward
//   without b.
//
// A quantized forward (NormModelOptions::quant) writes y as the format's codes (rows `stride`
// elements apart, as x's; quant_output(type) says their bytes) and its scales to y_scale; a
// static scale (and nvfp4's global scale) it reads from quant_scale_in.
struct NormCall {
  Direction direction = Direction::Forward;
  DeviceView x{}, w{}, b{}, y{}, mean{}, rstd{};
  DeviceView y_scale{};  // a quantized forward's scales, written (quant_output); none otherwise
  // One f32 on the device, read: a static scale's, or nvfp4's global scale; none otherwise.
  DeviceView quant_scale_in{};
  DeviceView residual{}, h{};
  DeviceView dy{}, dx{}, dw{}, db{}, dh{};
  bool residual_in_f32 = false;  // forward
  std::uint32_t batch = 0;
  std::uint32_t stride = 0;
  std::uint32_t width = 0;
  float eps = 1e-5f;      // forward
  Workspace workspace{};  // backward; none: this call's own, from the object's stream-ordered pool
  StreamRef stream{};
};

// How a tensor of a call is laid out, which sets its element type and size: rows of the dtype,
// rows of the residual add's dtype, a row of weights, one f32 per row, the forward's output rows
// (the dtype's, or a quantized format's codes), a quantized output's scales, or the one f32 scale
// a quantized forward reads.
enum class TensorLayout : std::uint8_t {
  Rows,
  ResidualRows,
  Weights,
  PerRow,
  OutputRows,
  Scales,
  ScaleIn
};

// What a forward writes as y and y_scale and reads as quant_scale_in, for callers that allocate
// them, from the kernels' format table (kernels::quant_element_type, quant_scale_type,
// quant_scales_per_row, reads_quant_scale).
struct QuantOutput {
  ScalarType element = ScalarType::F16;  // y's: the dtype's, or the format's codes
  std::uint32_t element_bits = 16;       // of one element of y (nvfp4: 4, two a byte)
  ScalarType scale = ScalarType::F32;    // y_scale's entries: f32, mxfp8's ue8m0 (u8), nvfp4's e4m3
  std::uint32_t scale_bytes = 0;         // of one y_scale entry; 0 where none is written
  std::uint32_t scales_per_row = 0;      // y_scale entries a row (0: no quant, or static)
  bool reads_scale_in = false;           // quant_scale_in: static's scale, nvfp4's global scale
  // Bytes y takes for rows spanning `elements` elements (nvfp4: two a byte, the last rounded up).
  std::uint64_t y_bytes(std::uint64_t elements) const { return (elements * element_bits + 7) / 8; }
};
// Stated once here for the runtime's checks, the C ABI, the command line and the contract.
QuantOutput quant_output(const NormType& type);
// Bytes y_scale takes for `batch` rows: batch · scales_per_row entries, or cuBLAS's whole tiles
// of 128 rows × 4 blocks (kernels::quant_scale_entries).
std::uint64_t quant_scale_bytes(const NormType& type, std::uint32_t batch);
// The PTX target an object of this type builds for on `device` where NormOptions::arch is unset:
// the device's family (sm_80, sm_90, sm_100), or for mxfp8 and nvfp4 the device's own
// arch-specific target (sm_100a on a B200, sm_90a on an H100, which the kernels then refuse,
// naming the target the format needs).
Arch target_arch(const NormType& type, const DeviceModel& device);

// One tensor a (norm, direction) takes.
struct NormTensor {
  kernels::NormArg arg = kernels::NormArg::X;  // its kernel parameter (arg_name: its name)
  DeviceView NormCall::*view = nullptr;
  TensorLayout layout = TensorLayout::Rows;
  bool required = false;  // a null one is refused; an optional one left empty picks a variant
  bool written = false;   // an output: it may overlap no other tensor of the call
};
// The tensors of one norm and direction, in the order of its kernels' parameters.
std::span<const NormTensor> norm_tensors(bool layer, Direction direction);

// The typed calls' arguments: each converts to a NormCall of its norm and direction, with the
// same fields.
struct LayerNormForwardArgs {
  DeviceView x{}, w{}, b{}, y{}, mean{}, rstd{};
  DeviceView y_scale{};         // a quantized forward's scales
  DeviceView quant_scale_in{};  // a static scale, nvfp4's global scale
  DeviceView residual{}, h{};
  bool residual_in_f32 = false;
  std::uint32_t batch = 0;
  std::uint32_t stride = 0;
  float eps = 1e-5f;
  StreamRef stream{};
  std::uint32_t width = 0;
};
struct LayerNormBackwardArgs {
  DeviceView dy{}, x{}, w{}, mean{}, rstd{}, dx{}, dw{}, db{};
  DeviceView dh{};
  std::uint32_t batch = 0;
  std::uint32_t stride = 0;
  StreamRef stream{};
  Workspace workspace{};  // none: this call's own, from the object's stream-ordered pool
  std::uint32_t width = 0;
};
struct RmsNormForwardArgs {
  DeviceView x{}, w{}, y{}, rstd{};
  DeviceView y_scale{};         // a quantized forward's scales
  DeviceView quant_scale_in{};  // a static scale, nvfp4's global scale
  DeviceView residual{}, h{};
  bool residual_in_f32 = false;
  std::uint32_t batch = 0;
  std::uint32_t stride = 0;
  float eps = 1e-5f;
  StreamRef stream{};
  std::uint32_t width = 0;
};
struct RmsNormBackwardArgs {
  DeviceView dy{}, x{}, w{}, rstd{}, dx{}, dw{};
  DeviceView dh{};
  std::uint32_t batch = 0;
  std::uint32_t stride = 0;
  StreamRef stream{};
  Workspace workspace{};
  std::uint32_t width = 0;
};
NormCall norm_call(const LayerNormForwardArgs& args);
NormCall norm_call(const LayerNormBackwardArgs& args);
NormCall norm_call(const RmsNormForwardArgs& args);
NormCall norm_call(const RmsNormBackwardArgs& args);

// A call's variant as a kernel spec names it (what prepare builds ahead).
struct NormVariant {
  kernels::Affine affine = kernels::Affine::Full;
  kernels::Residual residual = kernels::Residual::None;
  kernels::Outputs outputs = kernels::Outputs::All;  // the backward's
};

// The kernel spec of one direction and variant of a type: its kind, dtypes, width, variant and
// model fields (the device, target and knobs at their defaults; an object sets them). Its entry
// names and PTX, and so the module cache's key, differ wherever the type does. Needs no device.
kernels::NormSpec norm_spec(const NormType& type, Direction direction,
                            const NormVariant& variant = {});

// The variant a call's views ask for (the calls take it so); throws ptxdsl::Error naming the view
// that fits none (b without w, residual without h, db without dw, ...) or that the norm and
// direction do not take. Needs no device.
NormVariant variant_of(bool layer, const NormCall& call);
NormVariant variant_of(const LayerNormForwardArgs& args);
NormVariant variant_of(const LayerNormBackwardArgs& args);
NormVariant variant_of(const RmsNormForwardArgs& args);
NormVariant variant_of(const RmsNormBackwardArgs& args);

// What a call on an object of this type is refused for before the device is asked: the dtype
// pair, the model options (row groups, weight offset, the quant scale mode the format takes, a
// group128 width), the variant (a weight offset needs w; y_scale and quant_scale_in as the quant
// writes and reads them), the
// stride (at least the row groups' span), the rows' span, views that are null, misaligned, too
// short or overlapping an output, eps, a misaligned workspace. Throws ptxdsl::Error with the
// message the call would give; at batch 0 (a call that returns at once), the dtype pair and the
// model options alone. Needs no driver (the C ABI checks this before it loads one).
void check_call(const NormType& type, const NormCall& call);
void check_call(DType dtype, DType weight_dtype, std::uint32_t width,
                const LayerNormForwardArgs& args);
void check_call(DType dtype, DType weight_dtype, std::uint32_t width,
                const LayerNormBackwardArgs& args);
void check_call(DType dtype, DType weight_dtype, std::uint32_t width,
                const RmsNormForwardArgs& args);
void check_call(DType dtype, DType weight_dtype, std::uint32_t width,
                const RmsNormBackwardArgs& args);

namespace detail {
class NormPair;
}

// The kernels of one norm, dtype, weight dtype and width on one context, built on first use.
// LayerNorm and RmsNorm add the typed calls.
class Norm {
 public:
  Norm(const Context& ctx, const NormType& type, NormOptions options = {});
  Norm(Norm&&) noexcept;
  Norm& operator=(Norm&&) noexcept;
  ~Norm();

  // Builds and JITs the forward (both variants, where the prefetching one can be chosen) and the
  // backward now (for `vector_elems`; 0: the aligned variant), so the first call pays no JIT.
  // `variant` names the affine, residual and outputs fields of the calls to come (the default:
  // full affine, no residual add, every output). Objects on different threads may prepare at once.
  void prepare(std::uint32_t vector_elems = 0, const NormVariant& variant = {});
  // A forward or backward: checked, bound and launched on call.stream (batch 0 returns at once).
  // The forward writes y (and mean, rstd, h); the backward dx, and dw, db summed over the batch in
  // a fixed order (bit-identical run to run), unless the knobs set row_order tickets, or
  // deterministic 0 where the heuristic then takes tickets.
  void call(const NormCall& call);
  // Bytes of workspace a backward of `batch` rows needs with 16-byte-aligned pointers.
  std::uint64_t workspace_bytes(std::uint32_t batch);
  const NormType& type() const;
  std::uint32_t width() const;
  DType dtype() const;
  DType weight_dtype() const;
  // Elements per vector access the last forward or backward used (0 before any).
  std::uint32_t last_vector_elems() const;

 private:
  std::unique_ptr<detail::NormPair> impl_;
};

class LayerNorm : public Norm {
 public:
  LayerNorm(const Context& ctx, DType dtype, DType weight_dtype, std::uint32_t width,
            NormOptions options = {}, const NormModelOptions& model = {});

  // y = (x − mean)·rstd·w + b per row (x + residual with the residual add); writes mean and rstd.
  void forward(const LayerNormForwardArgs& args);
  // dx, and dw, db summed over the batch (call()).
  void backward(const LayerNormBackwardArgs& args);
};

class RmsNorm : public Norm {
 public:
  RmsNorm(const Context& ctx, DType dtype, DType weight_dtype, std::uint32_t width,
          NormOptions options = {}, const NormModelOptions& model = {});

  // y = x·rstd·w per row (x + residual with the residual add); writes rstd.
  void forward(const RmsNormForwardArgs& args);
  // dx, and dw summed over the batch (call()).
  void backward(const RmsNormBackwardArgs& args);
};

}  // namespace ptxdsl::runtime
