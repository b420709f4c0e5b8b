#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ptxdsl/dsl/arch.hpp"

// The norm kernels' tuning knobs, each defined once, in PTXDSL_NORM_KNOBS: the table generates the
// NormKnobs struct, and validate(), the command line's flags, `emit --json` and the tuning table
// read it through knob_table() and for_each_knob(). Unset means the planner decides (the tuning
// table for the device, else the heuristic); docs/kernels.md says what each strategy does.
namespace ptxdsl::kernels {

// Which rows a persistent CTA walks.
enum class RowOrder : std::uint8_t {
  Fixed,    // row groups ctaid, ctaid + grid, ...: dw and db add up in one order every run
  Tickets,  // after its first groups a CTA takes the next from a counter in the workspace
};

// How far the backward's dw and db bits are fixed (docs/kernels.md, "Numerics"). A
// switch once: 0 and 1 (false, true) still spell Off and RunToRun.
struct Determinism {
  enum Level : std::uint8_t {
    Off,       // tickets where they are faster: the bits vary run to run within f32 rounding
    RunToRun,  // a fixed row order: the same bits every run on one device and plan
    Portable,  // a row grouping by the batch alone: the same bits on every device and plan
  };
  Level level = RunToRun;
  constexpr Determinism(Level l = RunToRun) : level(l) {}
  constexpr Determinism(bool on) : level(on ? RunToRun : Off) {}
  explicit constexpr operator bool() const { return level != Off; }
  friend constexpr bool operator==(Determinism, Determinism) = default;
};

// The kernels a knob means something to; the others refuse it when it is given for them alone.
enum class KnobScope : std::uint8_t { All, Forwards, Backwards, LayerNormForward };

// The values a knob takes beyond its type: counts within [lo, hi], powers of two within it, or
// the thread counts that tile a row (a power of two ≤ 32, or a multiple of 32 ≤ hi).
enum class KnobRule : std::uint8_t { Range, PowerOfTwo, ThreadsPerRow, Switch, Order, Levels };

// What `ptxdsl tune` tries for a knob alone beside the plan's value (tune_candidates, tuning.hpp):
// nothing; half and twice the plan's, in whole warps; both ends of its range; the switch's other
// value; off; the rule's first three values; every value the rule allows.
enum class KnobMove : std::uint8_t { None, HalveDouble, Ends, Flip, Off, Few, Each };

// X(name, type, scope, rule, lo, hi, least arch, least PTX ×10, planned, move, tried for, help). A
// switch with a least arch or PTX version emits instructions that need them when it is on.
// `planned` is the knob's value in a Plan `p` (Plan::knobs()): a knob set is that field of the plan
// pinned. `move` is what tune tries, for the kernels `tried for` names.
#define PTXDSL_NORM_KNOBS(X)                                                                       \
  X(threads_per_row, std::uint32_t, All, ThreadsPerRow, 1, 1024, Sm80, 70, p.threads_per_row,      \
    HalveDouble, All, "threads that share a row: a power of two <= 32, or a multiple of 32")       \
  X(rows_per_cta, std::uint32_t, All, Range, 1, 1024, Sm80, 70, p.rows_per_cta, None, All,         \
    "rows one CTA works on at once")                                                               \
  X(vector_elems, std::uint32_t, All, PowerOfTwo, 1, 8, Sm80, 70, p.vec, None, All,                \
    "elements a vector access moves: 1, 2, 4 or 8, at most 16 bytes")                              \
  X(ctas_per_sm, std::uint32_t, All, Range, 1, 32, Sm80, 70, (if_persistent(p, p.ctas_per_sm)),    \
    None, All, "persistent grids: CTAs an SM (grid = SMs x N)")                                    \
  X(sm_count, std::uint32_t, All, Range, 1, 1024, Sm80, 70, (if_persistent(p, p.sm_count)), None,  \
    All, "persistent grids: SMs the grid is sized for (default: the device's)")                    \
  X(register_chunks, std::uint32_t, All, Range, 0, 262144, Sm80, 70, p.register_chunks(), Ends,    \
    All, "chunks of x (and dy) a thread keeps in registers between passes")                        \
  X(staged_chunks, std::uint32_t, All, Range, 0, 262144, Sm80, 70, p.staged_chunks(), None, All,   \
    "of the other chunks, those staged in shared memory (the rest: read again each pass)")         \
  X(accumulator_register_chunks, std::uint32_t, Backwards, Range, 0, 262144, Sm80, 70,             \
    p.accumulator_register_chunks(), None, All,                                                    \
    "chunks of the dw/db partial sums kept in registers (the rest: shared memory)")                \
  X(max_registers, std::uint32_t, All, Range, 32, 255, Sm80, 70, p.max_registers, None, All,       \
    "registers a thread (.maxnreg)")                                                               \
  X(prefetch_rows, std::uint32_t, All, Range, 0, 4, Sm80, 70, p.rows_in_flight(), Few, Backwards,  \
    "persistent CTAs load the next row during this one (2-4: that many, by cp.async)")             \
  X(single_launch, bool, Backwards, Switch, 0, 1, Sm80, 70,                                        \
    p.weight_grads != WeightGrads::PartialRows, None, All,                                         \
    "dw/db summed by columns in the same launch, not by a second (default: by batch)")             \
  X(l2_stream, bool, All, Switch, 0, 1, Sm80, 74, p.l2_stream, None, All,                          \
    "L2 policies: row loads evict_first (evict_last where read again), weights evict_last")        \
  X(min_row_groups, std::uint32_t, Backwards, Range, 1, 1024, Sm80, 70, p.min_row_groups_per_cta,  \
    None, All, "row groups each CTA walks at least before the grid grows (fewer partial rows)")    \
  X(one_pass_stats, bool, LayerNormForward, Switch, 0, 1, Sm80, 70, p.one_pass_stats, Flip,        \
    LayerNormForward,                                                                              \
    "sum x - x0 and its square in one pass (the row read twice, not three times)")                 \
  X(loop_group, std::uint32_t, All, Range, 1, 16, Sm80, 70, p.loop_group, None, All,               \
    "chunks outside registers one loop iteration loads at once")                                   \
  X(l1_rereads, bool, All, Switch, 0, 1, Sm80, 70, p.l1_rereads, None, All,                        \
    "rows read again: L1 evict_last until the last read, then evict_first")                        \
  X(overlap_reduce, bool, Backwards, Switch, 0, 1, Sm90, 78, p.overlap_reduce, None, All,          \
    "the column reduce launches as the row step's CTAs end (griddepcontrol)")                      \
  X(reduce_slices, std::uint32_t, Backwards, PowerOfTwo, 1, 32, Sm80, 70,                          \
    (if_two_launches(p, p.reduce_slices)), None, All,                                              \
    "warps of the column reduce over the partial rows")                                            \
  X(reduce_vector, std::uint32_t, Backwards, PowerOfTwo, 1, 4, Sm80, 70,                           \
    (if_two_launches(p, p.reduce_vector)), None, All,                                              \
    "columns a thread of the column reduce sums, one vector load a partial row (at most: the "     \
    "call's vectors and the width may allow fewer)")                                               \
  X(row_nc, bool, All, Switch, 0, 1, Sm80, 70, p.row_nc, Off, All,                                 \
    "x and dy by read-only (.nc) loads (1), or by plain loads, which stay before barriers (0)")    \
  X(early_weights, bool, Forwards, Switch, 0, 1, Sm80, 70,                                         \
    p.early_weights&& p.register_chunks() > 0, None, All,                                          \
    "w and b of the register chunks loaded with the row, before the statistics")                   \
  X(shared_weights, bool, Forwards, Switch, 0, 1, Sm80, 70, p.shared_weights, None, All,           \
    "persistent forwards: w and b copied once into shared memory, read there by every row")        \
  X(row_order, RowOrder, All, Order, 0, 1, Sm80, 70, (if_persistent(p, p.row_order)), None, All,   \
    "persistent CTAs' rows: fixed (ctaid, ctaid + grid, ...) or tickets (backward, from a "        \
    "counter)")                                                                                    \
  X(deterministic, Determinism, Backwards, Levels, 0, 2, Sm80, 70, p.determinism(), None, All,     \
    "dw and db bit-identical run to run (1), on every GPU too (portable: rows grouped by the "     \
    "batch alone), or tickets where they are faster (0)")                                          \
  X(cluster_ctas, std::uint32_t, All, PowerOfTwo, 1, 16, Sm80, 70, p.cluster_ctas, Each, All,      \
    "CTAs of a thread-block cluster that split each row, reducing through DSMEM (1: none; sm_90)") \
  X(partial_cluster, std::uint32_t, Backwards, PowerOfTwo, 1, 16, Sm80, 70, p.partial_cluster,     \
    Few, Backwards,                                                                                \
    "CTAs of a cluster whose dw/db partial rows add up on chip, through DSMEM, into one (1: "      \
    "none; sm_90)")

#define PTXDSL_KNOB_COUNT(...) +1
inline constexpr std::size_t kKnobCount = 0 PTXDSL_NORM_KNOBS(PTXDSL_KNOB_COUNT);
#undef PTXDSL_KNOB_COUNT

// Every knob, unset unless given.
struct NormKnobs {
#define PTXDSL_KNOB_FIELD(name, type, ...) std::optional<type> name;
  PTXDSL_NORM_KNOBS(PTXDSL_KNOB_FIELD)
#undef PTXDSL_KNOB_FIELD
  friend bool operator==(const NormKnobs&, const NormKnobs&) = default;
};

struct KnobInfo {
  std::string_view name;  // the field and the JSON key; the flag is "--" + name with '-' for '_'
  KnobScope scope;
  KnobRule rule;
  std::uint32_t lo, hi;
  Arch least_arch;
  PtxVersion least_ptx;
  KnobMove move;
  KnobScope tried_for;
  std::string_view help;  // one line
  std::string flag() const;
  std::string values() const;  // "1-1024", "1|2|4", "0|1", "fixed|tickets": `list`'s short form
};

std::span<const KnobInfo> knob_table();

// Calls f(info, field) for every knob in the table's order; field is the std::optional<T> member.
template <class Knobs, class F>
void for_each_knob(Knobs& knobs, F&& f) {
  const std::span<const KnobInfo> table = knob_table();
  std::size_t i = 0;
#define PTXDSL_KNOB_VISIT(name, ...) f(table[i++], knobs.name);
  PTXDSL_NORM_KNOBS(PTXDSL_KNOB_VISIT)
#undef PTXDSL_KNOB_VISIT
}

std::string_view row_order_name(RowOrder order);   // "fixed", "tickets"
std::string_view determinism_name(Determinism d);  // "0", "1", "portable"

// A knob's value as text (the command line's and the tuning table's form) and back. Parsing checks
// the type and the table's rule; it throws ptxdsl::Error naming the knob, the text and what it
// takes. Counts are decimal, switches 0 or 1, row orders by name.
std::string format_knob(std::uint32_t value);
std::string format_knob(bool value);
std::string format_knob(RowOrder value);
std::string format_knob(Determinism value);
void parse_knob(const KnobInfo& info, std::string_view text, std::optional<std::uint32_t>& field);
void parse_knob(const KnobInfo& info, std::string_view text, std::optional<bool>& field);
void parse_knob(const KnobInfo& info, std::string_view text, std::optional<RowOrder>& field);
void parse_knob(const KnobInfo& info, std::string_view text, std::optional<Determinism>& field);
// Checks a set value against the table's rule (validate() calls it for every knob set).
void check_knob(const KnobInfo& info, std::uint32_t value);
void check_knob(const KnobInfo& info, bool value);
void check_knob(const KnobInfo& info, RowOrder value);
void check_knob(const KnobInfo& info, Determinism value);
// Whether a set value asks for the knob's instructions (a count above 0, a switch on, tickets).
inline bool knob_on(std::uint32_t v) {
  return v > 0;
}
inline bool knob_on(bool v) {
  return v;
}
inline bool knob_on(RowOrder v) {
  return v != RowOrder::Fixed;
}
inline bool knob_on(Determinism) {
  return false;  // every level runs on every arch
}

}  // namespace ptxdsl::kernels
