// The heuristic's rules, as data: for each field of the plan, a table of rows (where the predicate
// on the spec, the device and the fields decided before holds, the value), read top to bottom, the
// first row that holds wins, each with its reason. The caller's knobs are a partial plan: a knob
// set pins its field in place of the table (settle()), and the fields decided after it read the
// pinned value. The steps only write the plan; nothing else is kept between them. The
// measurements behind the rules are in docs/performance.md.
#include <algorithm>
#include <bit>
#include <string_view>
#include <vector>

#include "heuristics.hpp"

namespace ptxdsl::kernels::detail {
namespace {

std::uint32_t ceil_div(std::uint32_t a, std::uint32_t b) {
  return (a + b - 1) / b;
}
std::uint32_t round_up(std::uint32_t a, std::uint32_t b) {
  return ceil_div(a, b) * b;
}

// Registers a thread may use so that one CTA of `block` threads fits on an SM.
std::uint32_t max_registers(const DeviceModel& d, std::uint32_t block) {
  return std::min<std::uint32_t>(d.max_registers_per_thread,
                                 d.registers_per_sm / round_up(block, 128) / 8 * 8);
}

// Registers a thread may use so that `threads` (whole warps) stay resident on an SM together, as
// the driver allocates them: a warp's registers in units of 256, 8 a thread.
std::uint32_t resident_registers(const DeviceModel& d, std::uint32_t threads) {
  return std::min<std::uint32_t>(d.max_registers_per_thread,
                                 d.registers_per_sm / round_up(threads, 32) / 8 * 8);
}

// A held row's share of a thread: a forward row of 32-64 KiB stays in registers at 512 threads.
constexpr std::uint32_t kHeldBytesPerThread = 128;
// Backward: registers of the value reserve that a staged row's partial sums may take.
constexpr std::uint32_t kStagedRowRelief = 32;

// What the rules read of the spec and the device, fixed before the first rule: `spec` describes
// one slice where `slices` split the row over a cluster.
struct Facts {
  Facts(const NormSpec& s, std::optional<ClusterSlices> slices)
      : spec(s),
        dev(s.device),
        cluster_ctas(slices ? slices->ctas : 1),
        last_slice_width(slices && slices->last_width < slices->width ? slices->last_width : 0),
        row_width(slices ? slices->row_width() : s.width),
        backward(is_backward(s.kind)),
        layer_fwd(s.kind == NormKind::LayerNormFwd),
        nacc(accumulators(s)),
        bytes(static_cast<std::uint32_t>(dtype_bytes(s.dtype))),
        narrow(bytes < 4),
        wide_weights(s.weight_dtype == DType::F32 && s.dtype != DType::F32),
        wide_residual(residual_dtype(s) != s.dtype),
        single(backward && (s.knobs.single_launch == true || !has_weight_grads(s))),
        portable(portable_sums(s) && !single),
        tensors(backward ? 2 : 1) {}
  const NormSpec& spec;
  const DeviceModel& dev;
  const std::uint32_t cluster_ctas, last_slice_width, row_width;
  const bool backward, layer_fwd;
  const std::uint32_t nacc, bytes;  // accumulators; bytes of an element of the row
  const bool narrow, wide_weights, wide_residual, single;
  const bool portable;          // deterministic portable's partial rows
  const std::uint32_t tensors;  // x, or x and dy
};

// A rule's view: the facts, the caller's knobs (the partial plan), and the plan decided so far.
struct Ctx {
  const Facts& f;
  const NormKnobs& pins;
  const Plan& p;
};

// One row of a rule table: where `when` holds, `then` is the value; `why` says why.
template <class T>
struct Rule {
  std::string_view why;
  bool (*when)(const Ctx&);
  T (*then)(const Ctx&);
};
bool always(const Ctx&) {
  return true;
}

// The first row that holds; every table ends in a row that always does.
template <class T, std::size_t N>
T first_rule(const Rule<T> (&rules)[N], const Ctx& c) {
  for (const Rule<T>& r : rules) {
    if (r.when(c)) return r.then(c);
  }
  return rules[N - 1].then(c);
}

// The field as the caller pinned it, else as the table gives it.
template <class T, std::size_t N>
T settle(const std::optional<T>& pin, const Rule<T> (&rules)[N], const Ctx& c) {
  if (pin) return *pin;
  return first_rule(rules, c);
}

// --- The thread mapping ---------------------------------------------------------------------

std::uint32_t vectors(const Ctx& c) {
  return ceil_div(c.p.width, c.p.vec);
}

struct ForwardShape {
  std::uint32_t threads = 32;
  bool stage_all = false;  // every chunk in shared memory
};
std::uint32_t values_a_thread(const Ctx& c, std::uint32_t values) {
  return std::max<std::uint32_t>(1, values / c.p.vec);  // in vectors
}
// Threads (whole warps) for 32 values a thread.
std::uint32_t full_threads(const Ctx& c) {
  return round_up(ceil_div(vectors(c), values_a_thread(c, 32)), 32);
}
// Threads for 16 values a thread (16-bit layer norm: 32 values, ≤ 256 threads, else 1024).
std::uint32_t spread_threads(const Ctx& c) {
  if (c.f.narrow && c.f.layer_fwd) return full_threads(c) <= 256 ? full_threads(c) : 1024;
  return round_up(ceil_div(vectors(c), values_a_thread(c, 16)), 32);
}
// The forward's threads a row: a ladder over the row's vectors.
const Rule<ForwardShape> kForwardShape[] = {
    {"short rows: ≤ 2 vectors a thread, in sub-warp groups",
     [](const Ctx& c) { return vectors(c) <= 64; },
     [](const Ctx& c) {
       return ForwardShape{std::bit_ceil(ceil_div(vectors(c), 2)), false};
     }},
    {"a warp, up to 32 values a thread",
     [](const Ctx& c) { return ceil_div(vectors(c), values_a_thread(c, 32)) <= 32; },
     [](const Ctx&) {
       return ForwardShape{32, false};
     }},
    {"enough threads (≤ 512) that the row fits registers at 16 values a thread (16-bit layer "
     "norm: 32, so that 3-4 CTAs share an SM)",
     [](const Ctx& c) { return spread_threads(c) <= 512; },
     [](const Ctx& c) {
       return ForwardShape{spread_threads(c), false};
     }},
    {"16-bit rows wider than that are staged whole at 512 threads",
     [](const Ctx& c) { return c.f.narrow; },
     [](const Ctx&) {
       return ForwardShape{512, true};
     }},
    {"f32 rows wider keep 32 values a thread at up to 1024 threads", always,
     [](const Ctx& c) {
       return ForwardShape{std::min<std::uint32_t>(1024, full_threads(c)), false};
     }},
};
ForwardShape forward_shape(const Ctx& c) {
  return first_rule(kForwardShape, c);
}

// The f32 values a thread may keep in registers across the passes, by kernel: the ceiling less a
// reserve (addresses, predicates, statistics, the temporaries of the chunk at hand), at most
// `most`.
struct ValueReserve {
  std::uint32_t base, per_vector, most;
};
ValueReserve value_reserve(NormKind kind) {
  if (is_backward(kind)) return {64, 3, 96};               // x, dy, w of the chunk at hand
  if (kind == NormKind::LayerNormFwd) return {64, 2, 32};  // mean, two reductions
  return {40, 2, 32};
}
std::uint32_t value_room(std::uint32_t ceiling, std::uint32_t vec, NormKind kind) {
  const ValueReserve r = value_reserve(kind);
  const std::uint32_t reserved = r.base + r.per_vector * vec;
  return std::min<std::uint32_t>(r.most, ceiling > reserved ? ceiling - reserved : 0);
}

// Backward: x and dy at ≤ 16 values a thread each; then fewer threads when that lets every
// accumulator column live in registers (partials in the workspace cost L2 traffic every row).
// Candidates: the first choice, then halvings, not below 512 threads for wide rows (fewer warps
// hide too little latency), but 512 itself always.
std::uint32_t backward_threads(const Ctx& c) {
  const std::uint32_t n = vectors(c), vec = c.p.vec;
  if (n <= 32) return std::bit_ceil(n);
  const std::uint32_t per_thread = std::max<std::uint32_t>(1, 16 / vec);
  const std::uint32_t first = std::min<std::uint32_t>(1024, round_up(ceil_div(n, per_thread), 32));
  std::vector<std::uint32_t> candidates;
  for (std::uint32_t t = first; t >= 32; t = t / 2 / 32 * 32) {
    if (t < std::min<std::uint32_t>(first, 512)) break;
    candidates.push_back(t);
  }
  if (first > 512 && std::find(candidates.begin(), candidates.end(), 512u) == candidates.end()) {
    candidates.push_back(512);
  }
  std::uint32_t best = first;
  double best_share = -1;
  for (std::uint32_t t : candidates) {
    const std::uint32_t chunks = ceil_div(n, t);
    const std::uint32_t room = value_room(max_registers(c.f.dev, t), vec, NormKind::LayerNormBwd);
    const std::uint32_t acc_chunks = std::min(chunks, room / (c.f.nacc * vec));
    const double share = static_cast<double>(acc_chunks) / chunks;
    if (share > best_share + 1e-9) {
      best = t;
      best_share = share;
    }
    if (share >= 1.0) break;
  }
  return best;
}

std::uint32_t target_block(const Ctx& c) {
  return c.f.backward ? 256 : 128;
}

const Rule<std::uint32_t> kSmCount[] = {
    {"the device's SMs", always, [](const Ctx& c) { return c.f.dev.sm_count; }},
};
const Rule<std::uint32_t> kVectorElems[] = {
    {"16 bytes of the dtype, the widest vector access", always,
     [](const Ctx& c) { return default_vector_elems(c.f.spec.dtype); }},
};
const Rule<std::uint32_t> kThreadsPerRow[] = {
    {"backward: as many threads as let the partial sums live in registers",
     [](const Ctx& c) { return c.f.backward; }, backward_threads},
    {"the residual add's chunk at hand does not fit the 64 registers of 1024 threads",
     [](const Ctx& c) { return has_residual(c.f.spec); },
     [](const Ctx& c) { return std::min(forward_shape(c).threads, 512u); }},
    {"forward: the width's ladder", always, [](const Ctx& c) { return forward_shape(c).threads; }},
};
const Rule<std::uint32_t> kRowsPerCta[] = {
    {"short rows share a CTA: 128 threads forward, 256 backward (fewer partial rows)",
     [](const Ctx& c) {
       const std::uint32_t tpr = c.p.threads_per_row;
       return tpr < target_block(c) && target_block(c) % tpr == 0;
     },
     [](const Ctx& c) { return target_block(c) / c.p.threads_per_row; }},
    {"else a warp's rows", always,
     [](const Ctx& c) { return std::max(1u, 32 / c.p.threads_per_row); }},
};

// T threads a row, R rows a CTA, V elements a vector.
void map_threads(const Facts& f, const NormKnobs& pins, Plan& p) {
  const Ctx c{f, pins, p};
  const bool grads = !f.backward || has_weight_grads(f.spec);
  p.weight_grads = !grads     ? WeightGrads::None
                   : f.single ? WeightGrads::SingleLaunch
                              : WeightGrads::PartialRows;
  p.width = f.spec.width;
  p.cluster_ctas = f.cluster_ctas;
  p.last_slice_width = f.last_slice_width;
  p.sm_count = settle(pins.sm_count, kSmCount, c);
  p.vec = settle(pins.vector_elems, kVectorElems, c);
  p.threads_per_row = settle(pins.threads_per_row, kThreadsPerRow, c);
  p.rows_per_cta = settle(pins.rows_per_cta, kRowsPerCta, c);
  p.chunks = ceil_div(vectors(c), p.threads_per_row);
}

// --- The access hints -----------------------------------------------------------------------

// The row's lone elements past its last whole vector: a cluster's shorter last slice has them
// where the other slices (whole vectors) do not.
std::uint32_t lone_elements(const Ctx& c) {
  return (c.p.last_slice_width > 0 ? c.p.last_slice_width : c.p.width) % c.p.vec;
}
// The caller placed the chunks (or the threads they follow from).
bool placement_pinned(const Ctx& c) {
  return c.pins.register_chunks || c.pins.staged_chunks || c.pins.threads_per_row;
}
std::uint32_t rows_ahead_asked(const Ctx& c) {
  return c.pins.prefetch_rows ? *c.pins.prefetch_rows : 0;
}
// A chunk at a time in 32 registers (48 beside f32 weights: sm_80 spills a word at 40; 8 more for
// a row that ends in lone elements, whose 7 spilled, and for x̂ rounded a pair at a time by the
// casting, which spilled a word at 32).
std::uint32_t reread_registers(const Ctx& c) {
  return (c.f.wide_weights ? 48 : 32) + (lone_elements(c) > 0 ? 8 : 0) +
         (rounded_xhat(c.f.spec) ? 8 : 0);
}

// A forward row (or a cluster's slice of one) of 32-64 KiB stays in registers, at most 128 bytes a
// thread: faster than reading it again or staging it. A ring of rows ahead keeps it there too.
// Layer norm rows beside f32 weights that end in more than 2 lone elements are not held (ptxas
// spills them at 64 registers).
bool holds_row(const Ctx& c) {
  const std::uint64_t row_bytes = std::uint64_t{c.p.width} * c.f.bytes;
  const bool fits = !(c.f.layer_fwd && c.f.wide_weights && lone_elements(c) > 2);
  return !c.f.backward && !placement_pinned(c) && rows_ahead_asked(c) != 1 &&
         c.p.rows_per_cta == 1 && row_bytes > 32 * 1024 && fits &&
         row_bytes <= std::uint64_t{c.p.threads_per_row} * kHeldBytesPerThread;
}

// The forward reads its row again from L2 (torch.compile's shape) where the rows of every resident
// CTA, a chunk at a time in reread_registers, fit two fifths of the L2; rows read again load
// nothing ahead.
bool reads_again(const Ctx& c) {
  const Plan& p = c.p;
  const DeviceModel& d = c.f.dev;
  const std::uint32_t ctas =
      std::min(d.max_threads_per_sm / p.block(),
               d.registers_per_sm / (round_up(p.block(), 128) * reread_registers(c)));
  const std::uint64_t resident_bytes =
      std::uint64_t{ctas} * p.sm_count * p.rows_per_cta * p.width * c.f.bytes;
  const bool shape = c.f.layer_fwd ? forward_shape(c).stage_all
                                   : p.width >= 4096 && p.width % (p.threads_per_row * p.vec) == 0;
  return !c.f.backward && !placement_pinned(c) && rows_ahead_asked(c) == 0 && !holds_row(c) &&
         c.f.spec.ptx_version >= PtxVersion{7, 4} && shape && resident_bytes <= d.l2_bytes * 2 / 5;
}

const Rule<bool> kL2Stream[] = {
    {"rows read again stream through L2 beside the weights", always, reads_again},
};
const Rule<bool> kL1Rereads[] = {
    {"rows read again stay in L1 until their last read", always, reads_again},
};
const Rule<bool> kOnePassStats[] = {
    {"one reduction and one barrier a row; f32 rows keep two passes (accuracy)", always,
     [](const Ctx& c) { return c.f.layer_fwd && c.f.narrow; }},
};
const Rule<bool> kRowNc[] = {
    {"rows by read-only loads", always, [](const Ctx&) { return true; }},
};
const Rule<bool> kSharedWeights[] = {
    {"weights from L2 with each row, unless the cluster walk asks", always,
     [](const Ctx&) { return false; }},
};
const Rule<bool> kOverlapReduce[] = {
    {"the column reduce's launch and first loads overlap the row step's last rows (sm_90)", always,
     [](const Ctx& c) {
       return c.f.spec.arch >= Arch::Sm90 && c.f.spec.ptx_version >= PtxVersion{7, 8};
     }},
};

// Whether the forward reads its row again from L2, the cache policies that go with it, one-pass
// statistics, and the backward's early reduce launch.
void choose_hints(const Facts& f, const NormKnobs& pins, Plan& p) {
  const Ctx c{f, pins, p};
  p.l2_stream = settle(pins.l2_stream, kL2Stream, c);
  p.one_pass_stats = settle(pins.one_pass_stats, kOnePassStats, c);
  p.l1_rereads = settle(pins.l1_rereads, kL1Rereads, c);
  p.row_nc = settle(pins.row_nc, kRowNc, c);
  p.shared_weights = !f.backward && settle(pins.shared_weights, kSharedWeights, c);
  p.overlap_reduce = f.backward && !f.single && settle(pins.overlap_reduce, kOverlapReduce, c);
}

// --- The register ceiling -------------------------------------------------------------------

// 16-bit layer norm rows packed two to a register (≥ 128 threads, weights of the row's dtype,
// which sm_80 keeps from spilling at 56).
bool packed_row(const Ctx& c) {
  const Plan& p = c.p;
  return !c.f.backward && c.f.narrow && c.f.layer_fwd && p.chunks * p.vec <= 32 &&
         !forward_shape(c).stage_all && p.threads_per_row >= 128 &&
         c.f.spec.weight_dtype == c.f.spec.dtype;
}

const Rule<std::uint32_t> kMaxRegisters[] = {
    {"backward: what one CTA (or the ctas_per_sm asked) may use; the grid sizes by it",
     [](const Ctx& c) { return c.f.backward; },
     [](const Ctx& c) {
       const std::uint32_t ctas = c.pins.ctas_per_sm ? *c.pins.ctas_per_sm : 1;
       return max_registers(c.f.dev, c.p.block() * ctas);
     }},
    {"rows read again: a chunk at a time", reads_again, reread_registers},
    {"blocks past 512 threads: two CTAs an SM", [](const Ctx& c) { return c.p.block() > 512; },
     [](const Ctx&) { return 64u; }},
    {"16-bit layer norm rows packed two a register: 4 CTAs of 256 an SM (64 where the row ends in "
     "lone elements, which spilled at 56)",
     packed_row, [](const Ctx& c) { return lone_elements(c) > 0 ? 64u : 56u; }},
    {"72, or what lets two CTAs of the block share an SM", always,
     [](const Ctx& c) { return std::min(72u, max_registers(c.f.dev, 2 * c.p.block())); }},
};

const Rule<std::uint32_t> kLoopGroup[] = {
    {"a large register ceiling: 4 chunks a loop iteration (backward 2)",
     [](const Ctx& c) { return c.p.max_registers >= 128; },
     [](const Ctx& c) { return c.f.backward ? 2u : 4u; }},
    {"RMS rows read again: two chunks' loads in flight (layer norm's spill)",
     [](const Ctx& c) { return c.f.spec.kind == NormKind::RmsNormFwd && reads_again(c); },
     [](const Ctx&) { return 2u; }},
    {"one chunk a loop iteration", always, [](const Ctx&) { return 1u; }},
};

// The register ceiling (.maxnreg) and the loop group.
void cap_registers(const Facts& f, const NormKnobs& pins, Plan& p) {
  const Ctx c{f, pins, p};
  p.max_registers = settle(pins.max_registers, kMaxRegisters, c);
  p.loop_group = settle(pins.loop_group, kLoopGroup, c);
}

// --- Where each chunk lives -----------------------------------------------------------------

// A backward thread with a few chunks keeps everything in registers when it fits with room for
// the rest; ptxas handles short unrolled passes well.
bool all_in_registers(const Ctx& c) {
  const Plan& p = c.p;
  const std::uint32_t held_acc = c.f.single ? 0 : c.f.nacc;
  return c.f.backward && p.chunks <= 4 &&
         (2 + held_acc) * p.chunks * p.vec + 48 + (c.f.wide_weights ? 2 * p.vec : 0) +
                 (has_residual(c.f.spec) ? 3 * p.vec : 0) <=
             p.max_registers;
}

// The f32 values the ceiling leaves room for: f32 weights beside 16-bit rows take twice the
// registers for w (and b) of the chunk at hand; the residual add's chunk its values and h (or dh),
// raw and decoded.
std::uint32_t room_for_values(const Ctx& c) {
  const Plan& p = c.p;
  if (all_in_registers(c)) return (2 + (c.f.single ? 0 : c.f.nacc)) * p.chunks * p.vec;
  std::uint32_t room = value_room(p.max_registers, p.vec, c.f.spec.kind);
  if (c.f.wide_weights) room -= std::min(room, p.vec);
  if (has_residual(c.f.spec)) room -= std::min(room, (c.f.wide_residual ? 4 : 3) * p.vec);
  return room;
}

// A cluster's slice that stays out of registers anyway (no chunk of x and dy fits beside the
// partial sums) holds only the chunk at hand: the sums take kStagedRowRelief registers of its
// reserve. Only there: one CTA a row keeps the reserve, and so does a row that does not fit
// shared memory whole (its chunks read again from L2 loop with addresses and masks of their own).
bool staged_slice(const Ctx& c) {
  const Plan& p = c.p;
  const std::uint32_t room = room_for_values(c);
  const std::uint32_t in_registers = room / (c.f.nacc * p.vec) * c.f.nacc * p.vec;
  return c.f.cluster_ctas > 1 && p.rows_per_cta == 1 && !all_in_registers(c) &&
         !c.pins.register_chunks && room - std::min(room, in_registers) < c.f.tensors * p.vec &&
         p.row_span() * c.f.bytes * c.f.tensors <= shared_budget(c.f.dev);
}

const Rule<std::uint32_t> kAccumulatorChunks[] = {
    {"a cluster's staged slice: the sums take part of the reserve", staged_slice,
     [](const Ctx& c) { return (room_for_values(c) + kStagedRowRelief) / (c.f.nacc * c.p.vec); }},
    {"as many as the room holds: they stay for the whole kernel", always,
     [](const Ctx& c) { return room_for_values(c) / (c.f.nacc * c.p.vec); }},
};

// The room the accumulators placed in registers leave for x (and dy).
std::uint32_t row_room(const Ctx& c) {
  const std::uint32_t room = room_for_values(c);
  return room - std::min(room, c.p.accumulator_register_chunks() * c.f.nacc * c.p.vec);
}

const Rule<std::uint32_t> kRegisterChunks[] = {
    {"a held row: every chunk", holds_row, [](const Ctx& c) { return c.p.chunks; }},
    {"rows read again keep nothing", reads_again, [](const Ctx&) { return 0u; }},
    {"16-bit forward rows past 32 values a thread are staged whole",
     [](const Ctx& c) {
       const bool past =
           c.pins.threads_per_row ? c.p.chunks * c.p.vec > 32 : forward_shape(c).stage_all;
       return !c.f.backward && c.f.narrow && past;
     },
     [](const Ctx&) { return 0u; }},
    {"forward rows of ≤ 32 values a thread stay whole in registers",
     [](const Ctx& c) { return !c.f.backward && c.p.chunks * c.p.vec <= 32; },
     [](const Ctx& c) { return c.p.chunks; }},
    {"as many as the room left holds", always,
     [](const Ctx& c) { return row_room(c) / (c.f.tensors * c.p.vec); }},
};
const Rule<std::uint32_t> kStagedChunks[] = {
    {"rows read again stage nothing", reads_again, [](const Ctx&) { return 0u; }},
    {"the rest in shared memory while it fits", always, [](const Ctx& c) { return c.p.chunks; }},
};

// Chunks past the `in_registers` last ones: in shared memory (the first `max_shared` of them,
// while `shared_left` holds `chunk_bytes`), else read again from L2.
std::vector<Place> place(std::uint32_t chunks, std::uint32_t in_registers,
                         std::uint32_t chunk_bytes, std::uint32_t max_shared,
                         std::uint32_t& shared_left) {
  std::vector<Place> places(chunks, Place::Registers);
  for (std::uint32_t j = 0; j + in_registers < chunks; ++j) {
    places[j] = chunk_bytes <= shared_left && j < max_shared ? Place::Shared : Place::Global;
    if (places[j] == Place::Shared) shared_left -= chunk_bytes;
  }
  return places;
}

// Where each chunk lives: registers as far as the room goes (the backward's accumulators first:
// they stay for the whole kernel), then shared memory while it fits (weights in shared memory
// first: every row reads them), then read again from L2.
void place_chunks(const Facts& f, const NormKnobs& pins, Plan& p) {
  const Ctx c{f, pins, p};
  std::uint32_t shared_left = shared_budget(f.dev);
  shared_left -= std::min(shared_left, p.shared_layout(f.spec).weights.bytes);
  const std::uint32_t tpr = p.threads_per_row;
  if (f.backward && !f.single) {
    // Several row slots a CTA share one partial row (merged at the end): registers only.
    const std::uint32_t in_registers =
        p.rows_per_cta > 1
            ? p.chunks
            : std::min(p.chunks, settle(pins.accumulator_register_chunks, kAccumulatorChunks, c));
    p.accum = place(p.chunks, in_registers, tpr * p.vec * 4 * f.nacc, p.chunks, shared_left);
  }
  const std::uint32_t in_registers =
      std::min(p.chunks, settle(pins.register_chunks, kRegisterChunks, c));
  p.data = place(p.chunks, in_registers, tpr * p.vec * f.bytes * p.rows_per_cta * f.tensors,
                 settle(pins.staged_chunks, kStagedChunks, c), shared_left);
}

// --- How far ahead rows load ----------------------------------------------------------------

// Registers the prefetched row adds: its raw register chunks and lone tail elements.
std::uint32_t prefetched_registers(const Ctx& c) {
  const std::uint32_t held = c.p.register_chunks();
  return held > 0 ? c.f.tensors * (held * c.p.vec * c.f.bytes / 4 + lone_elements(c)) : 0;
}
// The backward's values in registers: x and dy, and the partial sums.
std::uint32_t backward_values(const Ctx& c) {
  return c.p.register_chunks() * 2 * c.p.vec +
         c.p.accumulator_register_chunks() * c.f.nacc * c.p.vec;
}
// The backward's registers without prefetching: its values and ~40 + 3 vectors for the rest.
std::uint32_t backward_registers(const Ctx& c) {
  return std::min(c.p.max_registers, round_up(backward_values(c) + 40 + 3 * c.p.vec, 8));
}
std::uint32_t backward_fit(const Ctx& c) {
  return ctas_by_registers(c.f.dev, c.p.block(), backward_registers(c));
}

// The staged chunks can be copied a row ahead by cp.async into a second buffer.
bool async_fits(const Ctx& c) {
  Plan doubled = c.p;
  doubled.staging = Staging::Async;
  return c.p.staged_chunks() > 0 && c.p.vec * c.f.bytes >= 4 &&
         doubled.dynamic_shared_bytes(c.f.spec) <= shared_budget(c.f.dev);
}

// The backward's row step in registers, and the ceiling the CTAs an SM leave it: a cluster
// reduce's addresses and slot offsets take 8 more, the one launch's chunks outside registers loop
// with their own addresses, masks and counters (16 more).
std::uint32_t backward_row_step(const Ctx& c) {
  const Plan& p = c.p;
  const std::uint32_t mixed = c.f.single && p.register_chunks() < p.chunks ? 16 : 0;
  const std::uint32_t cluster_regs = c.f.cluster_ctas > 1 ? 8 : 0;
  return backward_values(c) + 24 + cluster_regs + 2 * p.vec + (c.f.wide_weights ? 2 * p.vec : 0) +
         2 * c.f.tensors * lone_elements(c) + mixed + (has_residual(c.f.spec) ? 2 * p.vec : 0);
}
std::uint32_t backward_ceiling(const Ctx& c) {
  return std::min(c.p.max_registers,
                  max_registers(c.f.dev, c.p.block() * std::max(1u, backward_fit(c))));
}

// The backward prefetches the next row where its registers allow (every chunk staged: where
// cp.async can copy it, costing shared memory only); the forward only by knob.
bool next_row_fits(const Ctx& c) {
  if (!c.f.backward) return false;
  if (c.p.register_chunks() == 0) return async_fits(c);
  return backward_row_step(c) + prefetched_registers(c) <= backward_ceiling(c);
}
// Where the next row does not fit registers but the row step without it does, with room to spare
// for the ring's addresses: a ring in shared memory takes its place.
bool ring_instead(const Ctx& c) {
  return c.f.backward && c.p.register_chunks() > 0 && !next_row_fits(c) && !c.f.single &&
         lone_elements(c) == 0 && backward_row_step(c) + 8 <= backward_ceiling(c);
}
// The ring: every chunk in registers, vectors cp.async can copy, both buffers fit; the backward's
// default for 16-bit rows with one CTA an SM, and in place of the next row where that does not fit
// registers. A row that ends in lone elements keeps to one row ahead at most (their registers
// beside the ring's spilled).
bool ring_default(const Ctx& c) {
  Plan ringed = c.p;
  ringed.lookahead = Lookahead::Ring;
  const bool fits = c.p.register_chunks() == c.p.chunks && c.p.vec * c.f.bytes >= 4 &&
                    ringed.dynamic_shared_bytes(c.f.spec) <= shared_budget(c.f.dev);
  const std::uint32_t ctas = c.pins.ctas_per_sm ? *c.pins.ctas_per_sm : backward_fit(c);
  return c.f.backward && fits && lone_elements(c) == 0 &&
         ((c.f.bytes == 2 && ctas == 1) || ring_instead(c));
}

const Rule<std::uint32_t> kPrefetchRows[] = {
    {"a ring of two rows by cp.async", ring_default, [](const Ctx&) { return 2u; }},
    {"the next row, where it fits the registers", next_row_fits, [](const Ctx&) { return 1u; }},
    {"none", always, [](const Ctx&) { return 0u; }},
};

// How far ahead rows load: none, the next row (registers, or cp.async into a second staging
// buffer), or a ring of 2-4 rows by cp.async; and the grid that follows (persistent CTAs for
// every backward and for rows loaded ahead).
void load_ahead(const Facts& f, const NormKnobs& pins, Plan& p) {
  const Ctx c{f, pins, p};
  const bool async = async_fits(c);
  const std::uint32_t depth = settle(pins.prefetch_rows, kPrefetchRows, c);
  p.lookahead = depth >= 2 ? Lookahead::Ring : depth == 1 ? Lookahead::NextRow : Lookahead::None;
  p.ring_rows = std::max(depth, 2u);
  p.grid = f.backward || depth >= 1 ? Grid::Persistent : Grid::RowGroupPerCta;
  if (p.lookahead == Lookahead::NextRow && async) p.staging = Staging::Async;
  p.prefetch_fits = p.register_chunks() > 0 || async;
}

// --- The forward's weights and register caps ------------------------------------------------

// w and b with the row where the layer norm forward's row sits whole in registers, one row a CTA
// of ≥ 256 threads, in ≤ 48 registers with its weights and no lone tail elements (those spilled);
// at 64 registers, which keeps 4 CTAs of 256 an SM.
bool early_weights_pay(const Ctx& c) {
  const Plan& p = c.p;
  const auto ws = static_cast<std::uint32_t>(dtype_bytes(c.f.spec.weight_dtype));
  const std::uint32_t held_regs = p.chunks * p.vec * (c.f.bytes + 2 * ws) / 4;
  return c.f.layer_fwd && p.lookahead == Lookahead::None && p.register_chunks() == p.chunks &&
         p.chunks * p.vec >= 16 && held_regs <= 48 && p.block() >= 256 && lone_elements(c) == 0 &&
         !has_residual(c.f.spec);
}
const Rule<bool> kEarlyWeights[] = {
    {"a layer norm row held whole with its weights", always, early_weights_pay},
};

// A forward that prefetches the next row into registers: the current row decoded, the next one
// raw, w and b of a chunk, 16 more (f32 rows: 56), one a chunk beyond 8 (calibrated on ptxas
// 13.0, sm_80/sm_90), and the lone elements' values.
std::uint32_t next_row_registers(const Ctx& c) {
  const Plan& p = c.p;
  const std::uint32_t held = p.register_chunks();
  return held * p.vec + prefetched_registers(c) + lone_elements(c) +
         (c.f.layer_fwd ? 2 : 1) * p.vec * (c.f.wide_weights ? 2 : 1) + (c.f.bytes == 4 ? 56 : 16) +
         (held > 8 ? held - 8 : 0);
}

// A staged row holds few values in registers: a ceiling that lets enough CTAs share an SM to keep
// about 96 KB of row loads in flight (as many as shared memory allows when cp.async copies the
// row in), at least 32 (48 beside f32 weights: sm_80 spills a word at 40). ptxas takes about 40
// on its own without prefetching: the ceiling stays where that is enough.
std::uint32_t staged_row_registers(const Ctx& c, std::uint32_t r) {
  const Plan& p = c.p;
  const bool copied_in = p.staging == Staging::Async;
  const std::uint32_t floor = c.f.wide_weights ? 48 : 32;
  const std::uint32_t by_shared = ctas_by_shared(c.f.dev, p.dynamic_shared_bytes(c.f.spec));
  const std::uint32_t in_flight =
      ceil_div(96 * 1024, p.shared_layout(c.f.spec).staged_tensor_bytes);
  const std::uint32_t fit = std::min(
      {by_shared, ctas_by_registers(c.f.dev, p.block(), floor), copied_in ? by_shared : in_flight});
  const std::uint32_t ctas =
      std::clamp<std::uint32_t>(c.pins.ctas_per_sm ? *c.pins.ctas_per_sm : fit, 1, 16);
  const std::uint32_t cap = max_registers(c.f.dev, p.block() * ctas);
  return copied_in || cap < 40 ? std::clamp<std::uint32_t>(cap, floor, r) : r;
}

// The forward's ceiling after its shape is known, from the rule's: early weights at 64, room for
// the next row, a staged row's occupancy, and the residual add's chunk (x, the residual's and h at
// once).
std::uint32_t forward_registers(const Ctx& c) {
  const Plan& p = c.p;
  std::uint32_t r = p.max_registers;
  if (p.early_weights && early_weights_pay(c)) r = 64;
  if (p.lookahead == Lookahead::NextRow && p.register_chunks() > 0) {
    const std::uint32_t ceiling = max_registers(c.f.dev, p.block());
    r = std::clamp<std::uint32_t>(round_up(next_row_registers(c), 8), r, ceiling);
  }
  if (p.register_chunks() == 0 && p.staged_chunks() > 0) r = staged_row_registers(c, r);
  if (has_residual(c.f.spec)) {
    r = std::min(max_registers(c.f.dev, p.block()), r + (c.f.wide_residual ? 40 : 24));
  }
  return r;
}

// The forward's weights loaded with the row, and the register ceiling that follows from its shape
// (where the caller did not pin it).
void fit_forward_registers(const Facts& f, const NormKnobs& pins, Plan& p) {
  if (f.backward) return;
  const Ctx c{f, pins, p};
  p.early_weights = settle(pins.early_weights, kEarlyWeights, c);
  if (pins.max_registers) return;
  if (p.lookahead == Lookahead::NextRow && p.register_chunks() > 0) {
    p.prefetch_fits = next_row_registers(c) <= max_registers(f.dev, p.block());
  }
  p.max_registers = forward_registers(c);
}

// --- The grid -------------------------------------------------------------------------------

const Rule<RowOrder> kRowOrder[] = {
    {"tickets balance SMs that move rows at uneven speeds, but dw/db then vary run to run: only "
     "where the caller allows it and they measured faster (RMS, 16-bit rows copied in by cp.async)",
     [](const Ctx& c) {
       return c.f.spec.kind == NormKind::RmsNormBwd && c.f.bytes == 2 &&
              c.p.staging == Staging::Async && c.pins.deterministic == false;
     },
     [](const Ctx&) { return RowOrder::Tickets; }},
    {"a fixed order: dw and db add up the same every run", always,
     [](const Ctx&) { return RowOrder::Fixed; }},
};
// Deterministic portable's grouping of the rows: functions of the row alone. Each row slot of a
// CTA leaves its own partial row, so rows_per_cta must divide `least`: the rules give 256 / T
// where T divides 256, and T is at least 32 past 32 vectors (16 bytes each, or 16 elements).
constexpr std::uint32_t kPortableSlices = 32;
const Rule<PortablePartials> kPortablePartials[] = {
    {"rows of ≤ 512 bytes: up to 256 a CTA; partial rows of ≤ 1 KiB, one for 4 rows, so that a "
     "few thousand rows take a few CTAs",
     [](const Ctx& c) { return std::uint64_t{c.f.row_width} * c.f.bytes <= 512; },
     [](const Ctx&) {
       return PortablePartials{4, 256, 16384, kPortableSlices};
     }},
    {"wider rows: up to 8 a CTA; a partial row for 16 rows, up to 1024 (a few waves of CTAs on "
     "any GPU)",
     always,
     [](const Ctx&) {
       return PortablePartials{16, 8, 1024, kPortableSlices};
     }},
};
const Rule<std::uint32_t> kPartialCluster[] = {
    {"each CTA writes its own partial row", always, [](const Ctx&) { return 1u; }},
};

// As many CTAs as fit an SM by registers (the backward's estimate of its own, the forward's
// ceiling) and shared memory; the one-launch backward takes one CTA an SM, its column pass fewer
// and wider tiles.
std::uint32_t ctas_that_fit(const Ctx& c) {
  const Plan& p = c.p;
  if (p.weight_grads == WeightGrads::SingleLaunch) return 1;
  const std::uint32_t regs = c.f.backward ? backward_registers(c) : p.max_registers;
  const std::uint32_t smem = p.dynamic_shared_bytes(c.f.spec);
  std::uint32_t fit = ctas_by_registers(c.f.dev, p.block(), regs);
  if (smem > 0) fit = std::min(fit, ctas_by_shared(c.f.dev, smem));
  return std::clamp<std::uint32_t>(fit, 1, 16);
}
const Rule<std::uint32_t> kCtasPerSm[] = {
    {"as many as fit an SM", always, ctas_that_fit},
};

// Rows a CTA of the two-launch backward walks at least: enough that the f32 partial rows stay
// about a quarter of the kernel's traffic.
const Rule<std::uint32_t> kMinRowGroups[] = {
    {"partial rows about a quarter of the traffic", always,
     [](const Ctx& c) {
       const std::uint32_t rows_per_partial = ceil_div(32 * c.f.nacc, 3 * c.f.bytes);
       return ceil_div(rows_per_partial, c.p.rows_per_cta);
     }},
};

// The persistent grid and the rows its CTAs walk. A backward takes the registers its CTAs leave:
// ptxas, left at a one-CTA ceiling, can take more than the estimate the grid counts on, and CTAs
// that do not fit run as a second wave; a prefetching one keeps the quarter-SM margin of
// max_registers it was measured with.
void size_grid(const Facts& f, const NormKnobs& pins, Plan& p) {
  const Ctx c{f, pins, p};
  const bool persistent = p.grid == Grid::Persistent;
  const bool partial_rows = f.backward && !f.single;
  if (persistent && partial_rows) p.row_order = settle(pins.row_order, kRowOrder, c);
  if (f.portable) p.portable = first_rule(kPortablePartials, c);
  // Partial rows summed over a cluster on chip: CTAs that walk whole rows in a fixed order.
  if (partial_rows && f.cluster_ctas == 1 && p.row_order == RowOrder::Fixed) {
    p.partial_cluster = settle(pins.partial_cluster, kPartialCluster, c);
  }
  if (persistent) {
    p.ctas_per_sm = settle(pins.ctas_per_sm, kCtasPerSm, c);
    if (f.backward && !pins.max_registers) {
      const std::uint32_t threads = p.block() * p.ctas_per_sm;
      p.max_registers = std::min(p.max_registers, p.lookahead != Lookahead::None
                                                      ? max_registers(f.dev, threads)
                                                      : resident_registers(f.dev, threads));
    }
  }
  if (f.backward)
    p.min_row_groups_per_cta = f.single ? 1 : settle(pins.min_row_groups, kMinRowGroups, c);
}

// --- The backward's column reduce -----------------------------------------------------------

// At most one partial row a row-step CTA (a cluster's CTAs share one, whether they split the rows
// or add their partial rows up).
std::uint32_t partial_rows(const Ctx& c) {
  return std::max(1u, c.p.sm_count * c.p.ctas_per_sm / (c.f.cluster_ctas * c.p.partial_cluster));
}
const Rule<std::uint32_t> kReduceSlices[] = {
    {"deterministic portable: its fixed slices, whatever the partial rows",
     [](const Ctx& c) { return c.p.portable.on(); },
     [](const Ctx& c) { return c.p.portable.slices; }},
    {"up to 32 warps, each with all its rows (≤ 16) in flight", always,
     [](const Ctx& c) {
       return std::clamp(std::bit_ceil(ceil_div(partial_rows(c), 8u)), 8u, 32u);
     }},
};
// A vector of columns a thread where the CTAs stay at least 4 an SM: wide rows' few partial rows
// otherwise leave each thread one 4-byte load a round.
const Rule<std::uint32_t> kReduceVector[] = {
    {"the widest of 4, 2, 1 that keeps 4 CTAs an SM", always,
     [](const Ctx& c) {
       std::uint32_t v = 4;
       while (v > 1 && ceil_div(c.f.row_width, c.p.reduce_columns * v) < 4 * c.p.sm_count) v /= 2;
       return v;
     }},
};

// The backward's column reduce over the partial rows of the grid, for the whole row. Its vectors
// are whole vectors of the width, as aligned as the call's (dw and db are stored by them), and
// keep at most 16 floats in flight a thread over dw's and db's loads (more spill on sm_80).
void size_column_reduce(const Facts& f, const NormKnobs& pins, Plan& p) {
  if (!f.backward) return;
  const Ctx c{f, pins, p};
  p.reduce_slices = settle(pins.reduce_slices, kReduceSlices, c);
  p.reduce_unroll = std::clamp(ceil_div(partial_rows(c), p.reduce_slices), 4u, 16u);
  std::uint32_t v = settle(pins.reduce_vector, kReduceVector, c);
  while (v > 1 && (v > p.vec || f.row_width % v != 0)) v /= 2;
  p.reduce_vector = v;
  const std::uint32_t tensors = has_bias(f.spec) ? 2 : 1;
  if (v > 1) p.reduce_unroll = std::max(1u, std::min(p.reduce_unroll, 16 / (v * tensors)));
}

// The one-launch backward's column pass: 16-bit pairs in one 4-byte load where every row holds
// whole, aligned pairs; rows share a warp's load (1, 2 or 4, 32 bytes of each at least) so the
// tiles come close to the grid. Where that leaves the tiles more than one round of the grid or a
// warp one row a load, loads of twice the columns (8 bytes, whole aligned vectors of every row)
// where those take one round with more rows a load: each round of tiles or of rows is a trip to
// L2 that a small batch waits for in full.
void size_column_pass(const Facts& f, const NormKnobs&, Plan& p) {
  if (!f.single) return;
  const std::uint32_t ctas = p.sm_count * p.ctas_per_sm;
  const auto share_loads = [&](Plan& q) {
    q.column_row_lanes = 1;
    const std::uint32_t most_row_lanes = q.column_vec * f.bytes >= 4 ? 4 : 2;
    while (q.column_row_lanes < most_row_lanes) {
      Plan wider = q;
      wider.column_row_lanes *= 2;
      if (wider.column_tiles() > ctas) break;
      q.column_row_lanes = wider.column_row_lanes;
    }
  };
  const auto whole = [&](std::uint32_t cv) { return p.vec >= cv && p.width % cv == 0; };
  p.column_vec = f.bytes == 2 && whole(2) ? 2 : 1;
  share_loads(p);
  if (p.column_tiles() <= ctas && p.column_row_lanes > 1) return;
  Plan wider = p;
  wider.column_vec *= 2;
  if (wider.column_vec * f.bytes != kColumnLoadBytes || !whole(wider.column_vec)) return;
  share_loads(wider);
  const bool one_round = wider.column_tiles() <= ctas;
  if (one_round && (p.column_tiles() > ctas || wider.column_row_lanes > p.column_row_lanes)) {
    p.column_vec = wider.column_vec;
    p.column_row_lanes = wider.column_row_lanes;
  }
}

// The steps in the order each reads the last.
using Step = void (*)(const Facts&, const NormKnobs&, Plan&);
constexpr Step kSteps[] = {map_threads,  choose_hints,       cap_registers,
                           place_chunks, load_ahead,         fit_forward_registers,
                           size_grid,    size_column_reduce, size_column_pass};

}  // namespace

Plan plan_rules(const NormSpec& spec, std::optional<ClusterSlices> slices) {
  const Facts facts(spec, slices);
  Plan plan;
  for (Step step : kSteps) step(facts, spec.knobs, plan);
  return plan;
}

}  // namespace ptxdsl::kernels::detail
