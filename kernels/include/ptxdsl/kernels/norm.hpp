#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptxdsl/dsl/contract.hpp"
#include "ptxdsl/dsl/device_model.hpp"
#include "ptxdsl/dsl/module.hpp"
#include "ptxdsl/kernels/knobs.hpp"

// The norm kernel family: what to build (NormSpec), what comes out (BuiltNorm: PTX text plus the
// launch plan a host program follows).
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
std::string_view affine_name(Affine a);      // "full", "weight", "none"
Affine parse_affine(std::string_view name);  // throws Error listing the allowed names
std::string_view residual_name(Residual r);  // "none", "add", "add_f32"
Residual parse_residual(std::string_view name);
std::string_view outputs_name(Outputs o);  // "all", "dx"
Outputs parse_outputs(std::string_view name);

inline constexpr std::uint32_t kMaxWidth = 262144;
// Rows a launch takes: row indices and the grid's row groups stay within 32 bits without wrapping.
inline constexpr std::uint32_t kMaxBatch = 0x7fffffff;

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
// The entry names' suffix of the spec's variant: "" for the default (full affine, no residual,
// every output), else e.g. "_res", "_resf32", "_noaffine", "_wonly", "_dx".
std::string variant_suffix(const NormSpec& spec);

// Throws ptxdsl::Error naming the bad value and the allowed range.
void validate(const NormSpec& spec);
// validate(), and more for knobs given for this one kernel (the command line's): refuses a knob
// that the spec's kernel ignores (the other direction's, another norm's) and knobs that conflict
// (row_order tickets with single_launch 1). validate() lets those pass because one set of runtime
// knobs serves both directions and spec_for_batch turns on single_launch per call.
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

// Forward: the largest batch for which persistent CTAs that prefetch the next row
// (knobs.prefetch_rows = 1) beat one CTA a row group; the runtime picks the variant per call by it
// unless the knob is set. Not a kind check: meaningful for forward specs only.
std::uint32_t forward_prefetch_batch_limit(const NormSpec& spec);

// Backward: the largest batch for which the one-launch backward (knobs.single_launch = 1) beats
// partial rows and a reduce launch; the runtime picks the variant per call by it unless the knob
// is set. Meaningful for backward specs only.
std::uint32_t backward_single_launch_batch_limit(const NormSpec& spec);

// Either direction's limit above, by the spec's kind: the largest batch for which the runtime
// launches the small-batch variant. 0 where the spec's own knob (prefetch_rows, single_launch)
// already fixes the variant.
std::uint32_t small_batch_limit(const NormSpec& spec);
// The spec as the runtime builds it for `batch` rows: with the small-batch variant's knob set up to
// small_batch_limit(spec) (other knobs, the vector width included, as given).
NormSpec spec_for_batch(NormSpec spec, std::uint32_t batch);

// How many CTAs a step launches for a batch.
struct GridRule {
  enum class Kind { RowsPerCta, Persistent, Columns };
  Kind kind = Kind::RowsPerCta;
  std::uint32_t rows_per_cta = 1;     // RowsPerCta, Persistent
  std::uint32_t max_ctas = 0;         // Persistent: at most this many CTAs
  std::uint32_t columns_per_cta = 0;  // Columns: ceil(width / columns_per_cta) CTAs
  // Persistent: each CTA walks at least this many row groups when the batch allows, which keeps
  // the partial rows (one per CTA) a small share of the traffic:
  // min(max_ctas, max(min_ctas, ceil(ceil(batch / rows_per_cta) / min_row_groups))).
  std::uint32_t min_row_groups = 1;
  // Persistent: at least this many CTAs (up to max_ctas) whatever the batch, for work beyond the
  // rows (the one-launch backward's tiles of columns); CTAs past the row groups take no rows.
  std::uint32_t min_ctas = 0;
  // The CTAs of the thread-block cluster each row group is split over (the contract's
  // .reqnctapercluster). RowsPerCta: ceil(batch / rows_per_cta) × cluster_ctas CTAs; Persistent:
  // as many clusters as the rule gives CTAs without them (max_ctas / cluster_ctas at most), each
  // cluster_ctas CTAs, one partial row a cluster.
  std::uint32_t cluster_ctas = 1;
  // Throws ptxdsl::Error when the grid would pass 2^31 − 1 CTAs.
  std::uint32_t grid(std::uint32_t batch, std::uint32_t width) const;
  std::string describe() const;  // "ceil(batch / 4)", ...
};

// One kernel launch of a norm, in the order the host runs them.
struct LaunchStep {
  KernelContract contract;
  GridRule grid;
};

// What `build_norm` produces. Parameter names are fixed across the family (x, w, b, y, mean, rstd,
// dy, dx, dw, db, partial_dw, partial_db, row_counter, batch, stride, eps, partial_rows), so a host
// binds by name; docs/kernels.md lists each entry's parameters in order.
struct BuiltNorm {
  NormSpec spec;
  std::string ptx;
  std::vector<LaunchStep> steps;
  // The IR the PTX was printed from (finalized): `module->find(steps[i].contract.entry)` is what
  // the CPU executor runs.
  std::shared_ptr<const Module> module;
  // Every knob as the heuristics resolved it (the spec's own knobs where it set them).
  NormKnobs chosen;
  // Where the plan's knobs came from: "" for the heuristic alone, else the tuning table's entry
  // ("NVIDIA H200 ln_fwd f16/f16 4096, timed at batch 4096").
  std::string tuned_by;
  // Backward: f32 elements from one partial row to the next (the width rounded up to 4); 0 for
  // the one-launch backward, which has no partial rows.
  std::uint32_t partial_pitch = 0;
  // Backward whose CTAs take rows from a counter (row_order tickets): its kernel has a
  // `row_counter` parameter, the first kRowCounterBytes of the workspace, which must be zero before
  // its first launch; every launch leaves them zero again (at every batch: they do not move).
  bool ticketed_rows = false;
  static constexpr std::uint64_t kRowCounterBytes = 16;
  // Where the partial rows start after the counter: on a 128-byte line, as they do without it
  // (16 bytes in, each row's stores and the column reduce's loads straddled sectors; the H200
  // showed no difference in speed either way).
  static constexpr std::uint64_t kRowCounterSpan = 256;
  // Scratch the backward needs for `batch` rows (the row counter, f32 partial dw/db rows); 0 for
  // the forward. Layout: the row counter at byte 0 (ticketed_rows), partial_dw at
  // partial_dw_offset(), partial_db (layer norm) at partial_db_offset(batch).
  std::uint64_t workspace_bytes(std::uint32_t batch) const;
  std::uint64_t partial_dw_offset() const;
  std::uint32_t partial_rows(std::uint32_t batch) const;  // backward: rows of partials used
  std::uint64_t partial_db_offset(std::uint32_t batch) const;
};

BuiltNorm build_norm(const NormSpec& spec);

}  // namespace ptxdsl::kernels
