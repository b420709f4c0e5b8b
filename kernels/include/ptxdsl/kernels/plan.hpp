#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptxdsl/kernels/knobs.hpp"
#include "ptxdsl/kernels/spec.hpp"

// How a norm kernel is built: the Plan that resolve() makes from a spec once, and that the builders
// (build(), norm.hpp) and the runtime read. Each strategy is a type; docs/kernels.md says what
// each does.
namespace ptxdsl::kernels {

// Where one chunk (one vector slot per thread) of a thread's row slice lives between passes.
enum class Place : std::uint8_t {
  Registers,  // f32 values, converted once
  Shared,     // staged in dynamic shared memory in the storage dtype, reloaded per pass
  Global,     // not kept: read again from global memory (L2) per pass
};

// The kernel's dynamic shared memory, region by region, in the order they lie: computed once from
// the plan, so that the planner's budget and the builders' offsets are the same numbers.
struct SharedLayout {
  struct Region {
    std::uint32_t offset = 0, bytes = 0;
    std::uint32_t end() const { return offset + bytes; }
  };
  // Staged rows: per buffer (two when the next row copies in by cp.async) x's, then dy's
  // (backward), each `staged_tensor_bytes`.
  Region staging;
  std::uint32_t staged_tensor_bytes = 0;
  // Backward: the dw (and db) partial sums placed in shared memory, `accumulator_bytes` each.
  Region accumulators;
  std::uint32_t accumulator_bytes = 0;
  // Backward with several row slots, or partial rows summed over a cluster: where the partial
  // sums merge, every chunk's columns of each accumulator. A cluster's merge, after the rows,
  // takes the staging buffers' bytes where they hold it, else shares the ring's.
  Region merge;
  // prefetch_rows ≥ 2: ring_rows buffers, each x's row slots, then dy's (`ring_tensor_bytes`
  // each).
  Region ring;
  std::uint32_t ring_tensor_bytes = 0;
  // Forward with shared_weights: w's, then b's columns of the thread's chunks, as they lie in
  // global memory (chunks × threads_per_row × vec elements of the weight dtype each,
  // `weight_tensor_bytes`).
  Region weights;
  std::uint32_t weight_tensor_bytes = 0;
  std::uint32_t bytes = 0;
  // Between a staging buffer (or a ring buffer) and the next: every tensor's share of one.
  std::uint32_t staging_buffer_bytes = 0;
  std::uint32_t ring_buffer_bytes = 0;
};

// The strategies a plan combines, each one type: the builders pick the code that goes with each
// (RowTile its row sources, RowsAhead its schedule, the backward its WeightGradSums), not a flag
// at each use.
//
// The grid: a CTA for each row group, or persistent CTAs (SMs × ctas_per_sm; every backward, a
// forward that loads rows ahead) walking the row groups.
enum class Grid : std::uint8_t { RowGroupPerCta, Persistent };
// Rows a persistent CTA loads ahead of the one it works on.
enum class Lookahead : std::uint8_t {
  None,     // each row loads in its own iteration
  NextRow,  // the next row's register chunks (and, with Staging::Async, its staged ones)
  Ring,     // the register chunks of the next ring_rows rows, by cp.async into a ring of buffers
};
// How the chunks placed in shared memory get there.
enum class Staging : std::uint8_t {
  Loads,  // loaded into registers and stored by the row's first pass
  // Copied by cp.async a row ahead into the second of two buffers (Lookahead::NextRow, 16-bit
  // vectors of 4 bytes or more, where both buffers fit the shared memory).
  Async,
};
// The backward's dw (and db).
enum class WeightGrads : std::uint8_t {
  PartialRows,   // an f32 partial row a CTA, summed by the column-reduce launch
  SingleLaunch,  // summed by columns after the rows, in the same launch
  None,          // no dw or db (Outputs::Dx, Affine::None): one launch of dx alone
};

// Deterministic portable (docs/kernels.md): Q partial rows, Q = clamp(bit_ceil(ceil(batch /
// rows_a_partial)), least, most), partial row q the sum of rows q, q + Q, ... in order, summed by
// the column reduce in `slices` slices: functions of the batch and the row alone.
struct PortablePartials {
  std::uint32_t rows_a_partial = 0;  // 0: off, a partial row a CTA of the device's grid
  std::uint32_t least = 1, most = 1;
  std::uint32_t slices = 0;
  bool on() const { return rows_a_partial > 0; }
  std::uint32_t partial_rows(std::uint32_t batch) const;  // Q
  friend bool operator==(const PortablePartials&, const PortablePartials&) = default;
};

struct Plan {
  // What was planned: the caller's spec (a row split over a cluster plans each CTA's slice, but
  // the plan is the whole row's), and the tuning table's entry its knobs came from ("" for the
  // heuristic alone: "NVIDIA H200 ln_fwd f16/f16 4096, timed at batch 4096").
  NormSpec spec;
  std::string tuned_by;

  std::uint32_t width = 0;
  std::uint32_t vec = 1;  // elements per vector access
  std::uint32_t threads_per_row = 1;
  std::uint32_t rows_per_cta = 1;
  std::uint32_t chunks = 1;  // vector slots per thread: ceil(ceil(width / vec) / threads_per_row)
  std::vector<Place> data;   // per chunk: x (and dy) placement
  std::vector<Place> accum;  // backward, per chunk: dw/db partial sums
  Grid grid = Grid::RowGroupPerCta;
  Lookahead lookahead = Lookahead::None;
  // Lookahead::Ring: 2 to 4 rows in flight for the registers of one (a row moves from the ring
  // into registers when the previous one is done).
  std::uint32_t ring_rows = 2;
  Staging staging = Staging::Loads;
  WeightGrads weight_grads = WeightGrads::PartialRows;
  bool l2_stream = false;      // L2 policies on the row loads and the weights
  bool l1_rereads = false;     // rows read again: L1 evict_last, then evict_first
  bool row_nc = true;          // x and dy (and mean, rstd) by ld.global.nc
  bool early_weights = false;  // forward: w, b of register chunks loaded with the row
  // Persistent forward: w and b copied into shared memory before the walk, read there by every
  // row (not from L2 each row).
  bool shared_weights = false;
  // Tickets: a persistent backward with partial rows takes its row groups from a counter.
  RowOrder row_order = RowOrder::Fixed;
  // Backward, deterministic portable: the grid follows the batch, each row slot its partial row.
  PortablePartials portable;
  Determinism determinism() const {
    return portable.on() ? Determinism::Portable : Determinism(row_order != RowOrder::Tickets);
  }
  // Backward in two launches: the row step lets the reduce launch once a CTA's rows are done (the
  // reduce waits by griddepcontrol.wait).
  bool overlap_reduce = false;
  bool one_pass_stats = false;  // layer norm forward: Σ(x − x₀) and Σ(x − x₀)² in the first pass
  // WeightGrads::SingleLaunch: a warp covers 32 / column_row_lanes lanes × column_vec columns of
  // column_row_lanes rows a load.
  std::uint32_t column_vec = 1;
  std::uint32_t column_row_lanes = 1;
  std::uint32_t column_tiles() const { return (width + column_width() - 1) / column_width(); }
  std::uint32_t column_width() const { return 32 / column_row_lanes * column_vec; }
  // Forward: there is a register row to prefetch, and it fits the registers of one CTA.
  bool prefetch_fits = true;
  std::uint32_t ctas_per_sm = 1;
  std::uint32_t sm_count = 0;                // the device's, or the sm_count knob
  std::uint32_t min_row_groups_per_cta = 1;  // backward: sizes the partials to the batch
  // Column reduce of the backward: 32 threads a warp of `reduce_vector` columns each, a CTA's
  // `reduce_slices` warps over the partial rows, each loading `reduce_unroll` of its rows at once.
  std::uint32_t reduce_columns = 32;
  std::uint32_t reduce_vector = 1;
  std::uint32_t reduce_slices = 8;
  std::uint32_t reduce_unroll = 4;
  std::uint32_t reduce_columns_per_cta() const { return reduce_columns * reduce_vector; }

  // .maxnreg: what one CTA may use (backward), or enough for 4 CTAs of 128 (forward). Without it
  // ptxas picks its own occupancy target and spills to meet it.
  std::uint32_t max_registers = 255;
  // Forward: the CTAs of a thread-block cluster that share each row, `width` (the slice) columns
  // each; they reduce the row's sums through distributed shared memory (1: one CTA a row).
  std::uint32_t cluster_ctas = 1;
  // The last CTA's slice where it is shorter than `width` (0: every slice is `width`): its row
  // masks end there, by a predicate on %cluster_ctarank.
  std::uint32_t last_slice_width = 0;
  // Backward walking whole rows: the CTAs of a cluster whose partial rows add up in distributed
  // shared memory into the cluster's one (the partial_cluster knob; 1: each CTA writes its own).
  std::uint32_t partial_cluster = 1;
  // Chunks per iteration where a pass loops over chunks outside registers.
  std::uint32_t loop_group = 2;

  std::uint32_t block() const { return threads_per_row * rows_per_cta; }
  // Elements of a row one row slot covers: every chunk of its threads, the padding included.
  std::uint32_t row_span() const { return chunks * threads_per_row * vec; }
  std::uint32_t staged_chunks() const;  // chunks placed in Shared
  std::uint32_t staging_buffers() const { return staging == Staging::Async ? 2 : 1; }
  // Rows loading ahead of the current one: 0, 1 or ring_rows (the prefetch_rows knob).
  std::uint32_t rows_in_flight() const {
    return lookahead == Lookahead::Ring ? ring_rows : lookahead == Lookahead::NextRow ? 1 : 0;
  }
  std::uint32_t register_chunks() const;              // chunks of x (and dy) placed in Registers
  std::uint32_t accumulator_register_chunks() const;  // backward: dw/db sums in Registers
  SharedLayout shared_layout(const NormSpec& spec) const;
  // The plan as knobs: every knob that applies to its kernel, as the knob table's `planned`
  // column reads it from the plan (BuiltNorm::chosen, `emit --json`'s "chosen"). A spec with
  // them set plans the same again.
  NormKnobs knobs() const;
  std::uint32_t dynamic_shared_bytes(const NormSpec& spec) const {
    return shared_layout(spec).bytes;
  }
};

// The spec's plan, made once: its checks, the tuning table's row for the device where one applies,
// the heuristic's rules for the rest, and the checks of the plan against the device. Throws
// ptxdsl::Error naming the value at fault.
Plan resolve(const NormSpec& spec);
// resolve() by another tuning table than the built-in one (tests).
class TuningTable;
Plan resolve(const NormSpec& spec, const TuningTable& table);
// How many plans resolve() has made in this process (the tests count them).
std::uint64_t plans_resolved();

// Each spec comes in two batch classes: up to a batch, the runtime launches a small-batch variant
// (the forward's persistent CTAs that prefetch the next row, the backward's one launch), past it
// the spec as given. small_batch_spec says which knob the variant sets: the one place that does.
NormSpec small_batch_spec(NormSpec spec);
// Both classes' plans, each resolved once, and the batch between them.
struct BatchPlans {
  Plan large;
  std::optional<Plan> small;            // where some batch takes the small-batch variant
  std::uint32_t small_batch_limit = 0;  // batches up to this take `small`
  const Plan& for_batch(std::uint32_t batch) const {
    return small && batch <= small_batch_limit ? *small : large;
  }
};
// The limit is 0 (no small class) where the spec's own knob (prefetch_rows, single_launch) fixes
// the variant, where a backward writes dx alone (one launch already), and where a row is split over
// a cluster (its slices take no rows ahead, and sum dw/db by partial rows).
BatchPlans resolve_batches(const NormSpec& spec);
// The same from the spec's plan, resolved already.
BatchPlans resolve_batches(Plan large);

// resolve_batches(spec).small_batch_limit; plans nothing where the spec has one class.
std::uint32_t small_batch_limit(const NormSpec& spec);
// The same limit for a spec whose own knob is left out: the forward's prefetching variant, the
// backward's one launch.
std::uint32_t forward_prefetch_batch_limit(const NormSpec& spec);
std::uint32_t backward_single_launch_batch_limit(const NormSpec& spec);
// The spec as the runtime builds it for `batch` rows: small_batch_spec up to small_batch_limit.
NormSpec spec_for_batch(const NormSpec& spec, std::uint32_t batch);

}  // namespace ptxdsl::kernels
