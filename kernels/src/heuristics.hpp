#pragma once

#include <cstdint>
#include <vector>

#include "ptxdsl/kernels/norm.hpp"

// Shape heuristics of the norm family, in one place: how threads cover a row, how many rows a CTA
// takes, where each thread's slice of the row lives, and how big the backward's persistent grid is.
// Every choice a knob can override is read from NormKnobs first.
namespace ptxdsl::kernels::detail {

// Where one chunk (one vector slot per thread) of a thread's row slice lives between passes.
enum class Place : std::uint8_t {
  Registers,  // f32 values, converted once
  Shared,     // staged in dynamic shared memory in the storage dtype, reloaded per pass
  Global,     // not kept: read again from global memory (L2) per pass
};

struct Plan {
  std::uint32_t width = 0;
  std::uint32_t vec = 1;  // elements per vector access
  std::uint32_t threads_per_row = 1;
  std::uint32_t rows_per_cta = 1;
  std::uint32_t chunks = 1;  // vector slots per thread: ceil(ceil(width / vec) / threads_per_row)
  std::vector<Place> data;   // per chunk: x (and dy) placement
  std::vector<Place> accum;  // backward, per chunk: dw/db partial sums
  // Persistent grid (every backward; a forward that prefetches rows): SMs × ctas_per_sm CTAs.
  bool persistent = false;
  bool prefetch = false;  // the next row's register chunks load during this row's work
  // Prefetching plans with staged chunks: the next row's staged chunks copy into a second staging
  // buffer by cp.async during this row's work (16-bit vectors of 4 bytes or more, where both
  // buffers fit the shared memory).
  bool async_staging = false;
  // prefetch_rows 2 (to 4): the register chunks of the next two (to four) rows copy by cp.async
  // into a ring of as many shared buffers, and a row moves from the ring into registers when the
  // previous one is done: ring_rows rows in flight for the registers of one.
  bool ring = false;
  std::uint32_t ring_rows = 2;
  // Backward in one launch: dw (and db) summed by columns after the rows, no partial rows. A warp
  // covers 32 / column_row_lanes lanes × column_vec columns of column_row_lanes rows a load.
  bool single_launch = false;
  // L2 policies (NormKnobs::l2_stream): 1 on the loads, 2 on the stores as well; 0 none.
  std::uint32_t l2_stream = 0;
  bool l1_rereads = false;        // rows read again: L1 evict_last, then evict_first
  std::uint32_t l2_prefetch = 0;  // bytes L2 fetches around each row load (0: no size given)
  bool weight_prefetch = false;   // forward: w and b lines into L1 before the statistics
  bool row_nc = true;             // x and dy (and mean, rstd) by ld.global.nc
  bool early_weights = false;     // forward: w, b of register chunks loaded with the row
  // Forward of one row a CTA, row all staged: one bulk copy (TMA) a row, waited for on an mbarrier.
  bool bulk_rows = false;
  bool blocked_rows = false;  // persistent: each CTA a run of neighbouring row groups (row_order 1)
  bool rotated_rows = false;  // persistent: a CTA's place in each round moves (row_order 4)
  // Backward with partial rows: CTAs take their row groups from a counter (row_order 2 or 3).
  bool ticketed_rows = false;
  bool ticketed_tail = false;  // row_order 3: the fixed walk first, tickets for the last quarter
  // Backward in two launches: 0, or where the row step lets the reduce launch (1: after its
  // rows, 2: at its start; the reduce waits by griddepcontrol.wait).
  std::uint32_t overlap_reduce = 0;
  bool one_pass_stats = false;  // layer norm forward: Σ(x − x₀) and Σ(x − x₀)² in the first pass
  std::uint32_t column_vec = 1;
  std::uint32_t column_row_lanes = 1;
  std::uint32_t column_tiles() const { return (width + column_width() - 1) / column_width(); }
  std::uint32_t column_width() const { return 32 / column_row_lanes * column_vec; }
  // Forward: there is a register row to prefetch, and it fits the registers of one CTA.
  bool prefetch_fits = true;
  std::uint32_t ctas_per_sm = 1;
  std::uint32_t sm_count = 0;                // the device's, or the sm_count knob
  std::uint32_t min_row_groups_per_cta = 1;  // backward: sizes the partials to the batch
  // Column reduce of the backward: 32 columns a CTA, `reduce_slices` warps over the partial rows,
  // each loading `reduce_unroll` of its rows at once.
  std::uint32_t reduce_columns = 32;
  std::uint32_t reduce_slices = 8;
  std::uint32_t reduce_unroll = 4;

  // .maxnreg: what one CTA may use (backward), or enough for 4 CTAs of 128 (forward). Without it
  // ptxas picks its own occupancy target and spills to meet it.
  std::uint32_t max_registers = 255;
  // Chunks per iteration where a pass loops over chunks outside registers.
  std::uint32_t loop_group = 2;

  std::uint32_t block() const { return threads_per_row * rows_per_cta; }
  std::uint32_t staged_chunks() const;  // chunks placed in Shared
  // Dynamic shared memory for staging x (and dy) of every row of the CTA, in bytes: one buffer.
  std::uint32_t staging_bytes(int element_bytes, int tensors) const;
  std::uint32_t staging_buffers() const { return async_staging ? 2 : 1; }
  std::uint32_t register_chunks() const;  // chunks of x (and dy) placed in Registers
  // The ring of prefetch_rows ≥ 2, every buffer of every tensor and row slot, in bytes.
  std::uint32_t ring_bytes(int element_bytes, int tensors) const;
  // Backward: shared memory for the accumulator chunks placed there (one row slot), in bytes.
  std::uint32_t accumulator_bytes(std::uint32_t accumulators) const;
  // Backward with several row slots: shared memory to merge their partial sums, in bytes.
  std::uint32_t merge_bytes(std::uint32_t accumulators) const;
  // The kernel's dynamic shared memory: forward [x staging] per buffer; backward [x staging]
  // [dy staging] per buffer, then [dw, db partial sums][merge of row slots]; then the ring.
  std::uint32_t dynamic_shared_bytes(const NormSpec& spec) const;
};

// The smallest alignment-free vector: 16 bytes of the dtype.
std::uint32_t default_vector_elems(DType d);
// Shared memory kept back from the dynamic budget for the kernels' static reduction scratch.
inline constexpr std::uint32_t kStaticScratchBytes = 4096;
// Dynamic shared memory one CTA may use on the device (opt-in limit minus the static scratch).
std::uint32_t shared_budget(const DeviceModel& d);

Plan plan_norm(const NormSpec& spec);

// The one-launch backward's column pass: rows a warp loads at once.
inline constexpr std::uint32_t kColumnRowsInFlight = 8;

}  // namespace ptxdsl::kernels::detail
