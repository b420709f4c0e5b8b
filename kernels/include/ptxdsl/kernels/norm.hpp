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

inline constexpr std::uint32_t kMaxWidth = 65536;

// Tuning knobs; unset means the heuristic (kernels/src/heuristics.cpp) decides.
struct NormKnobs {
  std::optional<std::uint32_t> threads_per_row;  // power of two ≤ 32, or a multiple of 32
  std::optional<std::uint32_t> rows_per_cta;
  std::optional<std::uint32_t> vector_elems;  // elements per vector access: 1, 2, 4 or 8
  std::optional<std::uint32_t> ctas_per_sm;   // persistent grid size = SMs × this
  std::optional<std::uint32_t> sm_count;      // backward: SMs assumed when sizing the grid
  // Chunks (one vector a thread each) of x (and dy) kept in f32 registers between passes; the rest
  // are staged in shared memory, or read again from global memory (L2) when that is full.
  std::optional<std::uint32_t> register_chunks;
  // Of the chunks not in registers, how many may be staged in shared memory (while it has room);
  // the others are read again from global memory, through L1 and L2, in each pass.
  std::optional<std::uint32_t> staged_chunks;
  // Backward: chunks of the dw/db partial sums kept in registers; the rest live in shared memory,
  // or in the CTA's partial row of the workspace when that is full.
  std::optional<std::uint32_t> accumulator_register_chunks;
  // Registers a thread (.maxnreg): fewer let more CTAs share an SM, more keep more values resident.
  std::optional<std::uint32_t> max_registers;
  // 1: CTAs stay resident and walk rows (forward too), loading the next row's register chunks
  // (staged chunks: by cp.async into a second buffer) while they work on the current one; 2 to 4:
  // the next two to four rows copy by cp.async into a ring of as many shared buffers and each
  // moves into registers when the previous row is done (every chunk in registers); 0: each row's
  // loads start when its work does.
  std::optional<std::uint32_t> prefetch_rows;
  // Backward: 1 runs it in one launch, each CTA also summing dw (and db) for some columns over
  // every row (x and dy read again); 0 writes per-CTA partial rows that a second launch reduces.
  // Unset: 0; the runtime picks 1 per call for batches ≤ backward_single_launch_batch_limit.
  std::optional<std::uint32_t> single_launch;
  // L2 policies (needs PTX 7.4). 1: the row loads (x, dy) carry evict_first, except reads that a
  // later pass repeats (chunks kept nowhere), which carry evict_last until the last one; the
  // weights (w, b) evict_last. This is torch.compile's pair. 2: the row stores (y, dx) evict_first
  // as well. Unset or 0: no L2 policy.
  std::optional<std::uint32_t> l2_stream;
  // Backward with partial rows: each CTA walks at least this many row groups when the batch
  // allows (fewer CTAs, fewer partial rows); 1 fills the grid first.
  std::optional<std::uint32_t> min_row_groups;
  // Layer norm forward: 1 sums x − x₀ and (x − x₀)² in the first pass (x₀ the row's first
  // element, so that rows far from zero keep their precision) and takes the variance from them:
  // two passes over the row instead of three, which matters where the row is read again from
  // L2. Unset or 0: the mean first, then Σ(x − mean)². The other kernels ignore it, as the
  // forwards ignore the backward's knobs, so that one set of knobs serves both directions.
  std::optional<std::uint32_t> one_pass_stats;
  // Chunks outside registers (staged, or read again) that one iteration of a pass's run-time loop
  // handles: its loads issue together, so more of them are in flight, at the cost of registers.
  // A pass of fewer than twice this many such chunks is unrolled whole. Unset: 4 at ≥ 128
  // registers (2 in the backward), else 1.
  std::optional<std::uint32_t> loop_group;
  // 1: rows read again from global memory (chunks kept nowhere) also carry L1 eviction hints,
  // evict_last until their last read, which is evict_first (torch.compile's loads). Unset or 0:
  // none.
  std::optional<std::uint32_t> l1_rereads;
  // Bytes L2 fetches around each load of a row (ld .L2::64B/128B/256B): 64, 128 or 256. Unset or
  // 0: no prefetch size.
  std::optional<std::uint32_t> l2_prefetch;
  // Forward: 1 prefetches the thread's w (and b) lines into L1 before the row's statistics, so
  // that the normalizing pass after the reductions finds them there. Unset or 0: none.
  std::optional<std::uint32_t> weight_prefetch;
  // Backward in two launches, sm_90 and PTX 7.8: the column reduce launches while the row step
  // finishes (programmatic dependent launch; it waits for the partial rows by
  // griddepcontrol.wait). 1: each row CTA lets it launch once its rows are done; 2: from its
  // start. Unset or 0: the reduce launches after the row step ends.
  std::optional<std::uint32_t> overlap_reduce;
  // Backward in two launches: warps of the column reduce over the partial rows (1, 2, 4, 8, 16 or
  // 32); each sums its share of the rows, those loads in flight at once. Unset: enough warps that
  // each has at most 8 of the partial rows the row step can write, 8 to 32.
  std::optional<std::uint32_t> reduce_slices;
  // 0: x and dy (and the backward's mean and rstd) load by plain ld.global instead of the
  // read-only path (.nc). ptxas may move .nc loads past a barrier, so a next row loaded ahead in
  // registers can land after the current row's reductions; plain loads stay where the kernel
  // puts them. Unset or 1: .nc.
  std::optional<std::uint32_t> row_nc;
  // Forward: 1 loads w (and b) of the chunks held in registers with the row, by plain loads that
  // ptxas keeps before the statistics' barriers, and holds them for the normalizing pass: their
  // latency then overlaps the row's instead of following the last barrier. Costs their
  // registers. Unset or 0: loaded (.nc) in the normalizing pass.
  std::optional<std::uint32_t> early_weights;
  // Forward of one row a CTA with the whole row staged in shared memory, sm_90 and PTX 8.0: 1
  // copies the row in by one bulk copy (cp.async.bulk, the TMA unit) that a single thread issues
  // and every thread waits for on an mbarrier, instead of each thread's loads: no load
  // instructions or registers a thread for the row. Only for 16-byte vectors and widths that are
  // a multiple of them; elsewhere it stays off (chosen says which). Unset or 0: each thread loads.
  std::optional<std::uint32_t> bulk_rows;
  // Persistent kernels (every backward; forwards that prefetch rows): which rows a CTA walks.
  // 0: rows ctaid, ctaid + grid, ... (the CTAs work on neighbouring rows at once); 1: a run of
  // neighbouring rows each, as many as 0 gives it (the CTAs work on rows a run apart); 2
  // (backward with partial rows; elsewhere 0): after its first rows each CTA takes the next one
  // from a counter in the workspace, so CTAs that move rows faster take more. dw and db then add
  // up each CTA's rows in an order that varies run to run (within f32 rounding); 3: as 2 for the
  // last quarter of each CTA's rounds only, the walk of 0 before; 4: the rounds of 0 (grid
  // neighbouring groups at once), but CTA c takes the group at (c + 81·round) % grid of each full
  // round, so that its rows do not all sit at one place of their rounds (bit-identical dw/db).
  // Unset: 0, or as `deterministic` says.
  std::optional<std::uint32_t> row_order;
  // Backward: unset or 1 keeps dw and db bit-identical run to run (row_order 0 unless told
  // otherwise). 0 lets the heuristic take rows from a counter (row_order 2) where that measured
  // faster: RMS backwards of 16-bit rows staged by cp.async, whose SMs move rows at uneven speeds
  // (28-32 KB rows: 9-13% faster on the H200, docs/performance.md). dw and db then vary
  // run to run within f32 rounding. An explicit row_order wins either way.
  std::optional<std::uint32_t> deterministic;
};

// Allowed knob values (validate() checks them):
// - vector_elems: 1, 2, 4 or 8, at most 16 bytes of the dtype (f32: 1, 2, 4);
// - threads_per_row: a power of two ≤ 32 or a multiple of 32 ≤ 1024;
// - rows_per_cta ≥ 1 with threads_per_row × rows_per_cta a multiple of 32, at most 1024;
// - ctas_per_sm in [1, 32], sm_count in [1, 1024];
// - max_registers in [32, 255]; prefetch_rows 0 to 4; single_launch 0 or 1 (backward);
//   l2_stream 0, 1 or 2 (PTX 7.4 or newer); min_row_groups in [1, 1024]; one_pass_stats 0 or 1
//   (layer norm forward); loop_group in [1, 16]; l1_rereads 0 or 1; l2_prefetch 0, 64, 128 or
//   256; weight_prefetch 0 or 1 (forward); overlap_reduce 0, 1 or 2 (backward; sm_90, PTX 7.8);
//   reduce_slices 1, 2, 4, 8, 16 or 32 (backward); row_nc 0 or 1; early_weights 0 or 1
//   (forward); bulk_rows 0 or 1 (sm_90, PTX 8.0); row_order 0 to 4; deterministic 0 or 1.

struct NormSpec {
  NormKind kind = NormKind::RmsNormFwd;
  DType dtype = DType::F16;         // x, y, dy, dx
  DType weight_dtype = DType::F16;  // w (and b, dw, db): dtype or F32
  std::uint32_t width = 0;          // elements per row, [1, kMaxWidth]
  // The PTX target: which instructions the kernel may use. It must run on `device`.
  Arch arch = Arch::Sm90;
  PtxVersion ptx_version{7, 8};
  NormKnobs knobs;
  // What the kernel is planned for: its SMs, threads, registers and shared memory bound every
  // choice, and the plan must fit it. The runtime fills it from the driver.
  DeviceModel device = default_device();
};
// Throws ptxdsl::Error naming the bad value and the allowed range.
void validate(const NormSpec& spec);
// validate(), and more for knobs given for this one kernel (the command line's): refuses a knob
// that the spec's kernel ignores (the other direction's, another norm's) and knobs that conflict
// (row_order 2 or 3 with single_launch 1). validate() lets those pass because one set of runtime
// knobs serves both directions and spec_for_batch turns on single_launch per call.
void check_knobs_apply(const NormSpec& spec);
// Host-side checks before a launch: batch ≥ 1, stride ≥ width. Throw ptxdsl::Error.
void check_batch(std::uint32_t batch);
void check_stride(std::uint32_t width, std::uint32_t stride);
// The widest vector (elements per access) that a launch with this row stride and these addresses
// may use: `row_address_bits` is the OR of the x/y/dy/dx addresses, `weight_address_bits` that of
// w/b/dw/db. Build a spec with knobs.vector_elems set to it when it is below the default.
std::uint32_t vector_elems_for(DType dtype, DType weight_dtype, std::uint32_t stride,
                               std::uint64_t row_address_bits, std::uint64_t weight_address_bits);

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
  // Backward: f32 elements from one partial row to the next (the width rounded up to 4); 0 for
  // the one-launch backward, which has no partial rows.
  std::uint32_t partial_pitch = 0;
  // Backward whose CTAs take rows from a counter (row_order 2): its kernel has a `row_counter`
  // parameter, the first kRowCounterBytes of the workspace, which must be zero before its first
  // launch; every launch leaves them zero again (at every batch: they do not move).
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
