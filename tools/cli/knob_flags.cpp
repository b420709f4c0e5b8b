#include "knob_flags.hpp"

namespace ptxdsl::cli {

std::span<const KnobFlag> knob_flags() {
  using K = kernels::NormKnobs;
  static constexpr KnobFlag kFlags[] = {
      {"--threads-per-row", "threads_per_row", "N", &K::threads_per_row, false,
       "a power of two <= 32, or a multiple of 32"},
      {"--rows-per-cta", "rows_per_cta", "N", &K::rows_per_cta, false, "rows one CTA handles"},
      {"--vector-elems", "vector_elems", "N", &K::vector_elems, false,
       "elements per vector access: 1, 2, 4 or 8"},
      {"--ctas-per-sm", "ctas_per_sm", "N", &K::ctas_per_sm, false, "persistent grid = SMs x N"},
      {"--sm-count", "sm_count", "N", &K::sm_count, false,
       "backward: SMs assumed when sizing the grid"},
      {"--register-chunks", "register_chunks", "N", &K::register_chunks, true,
       "chunks of x (and dy) a thread keeps in registers between passes"},
      {"--staged-chunks", "staged_chunks", "N", &K::staged_chunks, true,
       "of the others, chunks staged in shared memory (the rest: read again each pass)"},
      {"--accumulator-register-chunks", "accumulator_register_chunks", "N",
       &K::accumulator_register_chunks, true,
       "backward: chunks of the dw/db partials kept in registers"},
      {"--max-registers", "max_registers", "N", &K::max_registers, false,
       "registers a thread (.maxnreg), 32 to 255"},
      {"--prefetch-rows", "prefetch_rows", "0-4", &K::prefetch_rows, true,
       "persistent CTAs load the next row (2 to 4: the next two to four, through shared memory)"},
      {"--single-launch", "single_launch", "0|1", &K::single_launch, true,
       "backward: dw/db summed by columns in the same launch (default: by batch)"},
      {"--l2-stream", "l2_stream", "0|1|2", &K::l2_stream, true,
       "L2 policies: row loads evict_first (evict_last where read again), weights evict_last; 2: "
       "row stores evict_first too"},
      {"--one-pass-stats", "one_pass_stats", "0|1", &K::one_pass_stats, true,
       "ln_fwd: sum x - x0 and its square in one pass (two reads of the row, not three)"},
      {"--l1-rereads", "l1_rereads", "0|1", &K::l1_rereads, true,
       "rows read again: L1 evict_last until the last read, then evict_first"},
      {"--l2-prefetch", "l2_prefetch", "0|64|128|256", &K::l2_prefetch, true,
       "bytes L2 fetches around each row load"},
      {"--weight-prefetch", "weight_prefetch", "0|1", &K::weight_prefetch, true,
       "forward: w and b lines into L1 before the row's statistics"},
      {"--overlap-reduce", "overlap_reduce", "0|1|2", &K::overlap_reduce, true,
       "backward: the column reduce launches as the rows end (1) or from the start (2); sm_90"},
      {"--row-nc", "row_nc", "0|1", &K::row_nc, true,
       "x and dy by ld.global.nc (1, default) or plain loads, which stay before barriers (0)"},
      {"--early-weights", "early_weights", "0|1", &K::early_weights, true,
       "forward: w and b of register chunks loaded with the row, before the statistics"},
      {"--row-order", "row_order", "0-4", &K::row_order, true,
       "persistent kernels: rows ctaid, ctaid + grid, ... (0), a run of neighbouring rows (1), "
       "(backward) the next row from a counter (2; 3: only the last quarter), or 0's rounds "
       "with the CTAs' places in them moving (4)"},
      {"--deterministic", "deterministic", "0|1", &K::deterministic, true,
       "backward: dw and db bit-identical run to run (1, default), or rows from a counter where "
       "that is faster (0)"},
      {"--bulk-rows", "bulk_rows", "0|1", &K::bulk_rows, true,
       "forward with its row staged: one bulk copy (TMA) a row; sm_90, PTX 8.0"},
      {"--reduce-slices", "reduce_slices", "1|2|4|8|16|32", &K::reduce_slices, false,
       "backward: warps of the column reduce over the partial rows"},
      {"--loop-group", "loop_group", "N", &K::loop_group, false,
       "chunks outside registers a loop iteration handles (loads in flight together), 1 to 16"},
      {"--min-row-groups", "min_row_groups", "N", &K::min_row_groups, false,
       "backward: rows each CTA walks at least before the grid grows"},
  };
  return kFlags;
}

}  // namespace ptxdsl::cli
