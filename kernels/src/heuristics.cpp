#include "heuristics.hpp"

#include "ptxdsl/kernels/tuning.hpp"

#include <algorithm>
#include <bit>
#include <vector>

namespace ptxdsl::kernels::detail {
namespace {

std::uint32_t ceil_div(std::uint32_t a, std::uint32_t b) {
  return (a + b - 1) / b;
}
std::uint32_t round_up(std::uint32_t a, std::uint32_t b) {
  return ceil_div(a, b) * b;
}

std::uint32_t accumulators(NormKind k) {
  return k == NormKind::LayerNormBwd ? 2 : 1;
}

// Registers a thread may use so that one CTA of `block` threads fits on an SM.
std::uint32_t max_registers(const DeviceModel& d, std::uint32_t block) {
  return std::min<std::uint32_t>(d.max_registers_per_thread,
                                 d.registers_per_sm / round_up(block, 128) / 8 * 8);
}

// CTAs of `block` threads at `registers` a thread that an SM holds by threads and registers.
std::uint32_t ctas_by_registers(const DeviceModel& d, std::uint32_t block,
                                std::uint32_t registers) {
  return std::min(d.max_threads_per_sm / block, d.registers_per_sm / (block * registers));
}

// CTAs with `smem` bytes of dynamic shared memory (beside the static scratch that shared_budget
// keeps back) that an SM holds by shared memory.
std::uint32_t ctas_by_shared(const DeviceModel& d, std::uint32_t smem) {
  return d.shared_per_block_optin / (smem + d.shared_reserved_per_block);
}

// f32 values a thread may keep in registers across the passes, under a register ceiling: the rest
// goes to addresses, predicates, statistics and the temporaries of the chunk being worked on.
std::uint32_t value_room(std::uint32_t ceiling, std::uint32_t vec, NormKind kind) {
  std::uint32_t reserved = 40 + 2 * vec;                        // RMS forward
  if (kind == NormKind::LayerNormFwd) reserved = 64 + 2 * vec;  // mean, two reductions
  if (is_backward(kind)) reserved = 64 + 3 * vec;               // x, dy, w of the chunk at hand
  return std::min<std::uint32_t>(is_backward(kind) ? 96 : 32,
                                 ceiling > reserved ? ceiling - reserved : 0);
}

// Forward: ≤ 2 vectors a thread for short rows (sub-warp groups), a warp up to 32 values a thread;
// then, measured on the H200:
// - RMS and f32 rows: as many warps as keep ≤ 16 values a thread in registers, up to 512 threads
//   (40 registers for RMS: 3 CTAs, 48 warps an SM);
// - 16-bit layer norm: 32 values a thread in registers up to 256 threads (72 registers, 3 CTAs an
//   SM; 16 values at 512 threads takes 56 registers, 2 CTAs, and ran 20-30% slower);
// - 16-bit rows too wide for that: 512 threads with the whole row staged in shared memory (40
//   registers, 3 CTAs an SM). Keeping 32 values a thread in registers at 512 threads holds one CTA
//   an SM (1.45x slower), and 1024-thread CTAs lose at every width.
// - f32 rows too wide: up to 32 values a thread in registers and 1024 threads (ptxas keeps staged
//   f32 values in 72 registers anyway).
struct ForwardShape {
  std::uint32_t threads = 32;
  bool stage_all = false;  // every chunk in shared memory
};
ForwardShape forward_shape(std::uint32_t vectors, std::uint32_t vec, bool narrow, bool layer_norm) {
  const std::uint32_t per_thread = std::max<std::uint32_t>(1, 32 / vec);
  if (vectors <= 64) return {std::bit_ceil(ceil_div(vectors, 2)), false};
  if (ceil_div(vectors, per_thread) <= 32) return {32, false};
  const std::uint32_t full = round_up(ceil_div(vectors, per_thread), 32);  // 32 values a thread
  const std::uint32_t half = std::max<std::uint32_t>(1, 16 / vec);
  const std::uint32_t threads =
      narrow && layer_norm ? (full <= 256 ? full : 1024) : round_up(ceil_div(vectors, half), 32);
  if (threads <= 512) return {threads, false};
  if (narrow) return {512, true};
  return {std::min<std::uint32_t>(1024, full), false};
}

// Backward: x and dy at ≤ 16 values a thread each; then fewer threads when that lets every
// accumulator column live in registers (partials in the workspace cost L2 traffic every row).
std::uint32_t backward_threads(const DeviceModel& d, std::uint32_t vectors, std::uint32_t vec,
                               std::uint32_t nacc) {
  if (vectors <= 32) return std::bit_ceil(vectors);
  const std::uint32_t per_thread = std::max<std::uint32_t>(1, 16 / vec);
  const std::uint32_t first =
      std::min<std::uint32_t>(1024, round_up(ceil_div(vectors, per_thread), 32));
  std::uint32_t best = first;
  double best_share = -1;
  // Candidates: the first choice, then halvings; not below 512 threads for wide rows (fewer warps
  // hide too little latency), but 512 itself is always tried.
  std::vector<std::uint32_t> candidates;
  for (std::uint32_t t = first; t >= 32; t = t / 2 / 32 * 32) {
    if (t < std::min<std::uint32_t>(first, 512)) break;
    candidates.push_back(t);
  }
  if (first > 512 && std::find(candidates.begin(), candidates.end(), 512u) == candidates.end()) {
    candidates.push_back(512);
  }
  for (std::uint32_t t : candidates) {
    const std::uint32_t chunks = ceil_div(vectors, t);
    const std::uint32_t room = value_room(max_registers(d, t), vec, NormKind::LayerNormBwd);
    const std::uint32_t acc_chunks = std::min(chunks, room / (nacc * vec));
    const double share = static_cast<double>(acc_chunks) / chunks;
    if (share > best_share + 1e-9) {
      best = t;
      best_share = share;
    }
    if (share >= 1.0) break;
  }
  return best;
}

}  // namespace

std::uint32_t default_vector_elems(DType d) {
  return 16 / static_cast<std::uint32_t>(dtype_bytes(d));
}

std::uint32_t shared_budget(const DeviceModel& d) {
  // The opt-in maximum per block, less room for the kernels' static reduction scratch.
  return d.shared_per_block_optin - kStaticScratchBytes;
}

std::uint32_t Plan::staged_chunks() const {
  return static_cast<std::uint32_t>(std::count(data.begin(), data.end(), Place::Shared));
}

std::uint32_t Plan::register_chunks() const {
  return static_cast<std::uint32_t>(std::count(data.begin(), data.end(), Place::Registers));
}

SharedLayout Plan::shared_layout(const NormSpec& spec) const {
  const auto s = static_cast<std::uint32_t>(dtype_bytes(spec.dtype));
  const bool backward = is_backward(spec.kind);
  const std::uint32_t tensors = backward ? 2 : 1;
  const std::uint32_t nacc = backward ? accumulators(spec.kind) : 0;
  const std::uint32_t slots = threads_per_row * vec * rows_per_cta;  // elements a chunk, all rows
  const auto shared_accumulators =
      static_cast<std::uint32_t>(std::count(accum.begin(), accum.end(), Place::Shared));
  SharedLayout l;
  l.staged_tensor_bytes = staged_chunks() * slots * s;
  l.staging = {0, staging_buffers() * tensors * l.staged_tensor_bytes};
  l.accumulator_bytes = shared_accumulators * threads_per_row * vec * 4;
  l.accumulators = {l.staging.end(), nacc * l.accumulator_bytes};
  const bool merges = backward && rows_per_cta > 1 && !single_launch;
  l.merge = {l.accumulators.end(), merges ? nacc * chunks * slots * 4 : 0};
  l.ring = {l.merge.end(), ring ? ring_rows * register_chunks() * slots * s * tensors : 0};
  l.bytes = l.ring.end();
  return l;
}

Plan plan_norm(const NormSpec& spec) {
  // The device's measured knobs where its tuning table has them; the rules below fill the rest.
  const NormSpec tuned = with_tuning(spec);
  const NormKnobs& kn = tuned.knobs;
  const DeviceModel& dev = spec.device;
  const bool backward = is_backward(spec.kind);
  const std::uint32_t nacc = accumulators(spec.kind);
  const auto s = static_cast<std::uint32_t>(dtype_bytes(spec.dtype));
  // One launch: no dw/db partial sums to hold between rows (the threads stay those of two).
  const bool single = backward && kn.single_launch.value_or(false);
  const std::uint32_t held_acc = single ? 0 : nacc;

  Plan p;
  p.single_launch = single;
  p.width = spec.width;
  p.sm_count = kn.sm_count.value_or(dev.sm_count);
  p.vec = kn.vector_elems.value_or(default_vector_elems(spec.dtype));
  const std::uint32_t vectors = ceil_div(p.width, p.vec);
  const bool narrow = s < 4;
  const ForwardShape fwd =
      forward_shape(vectors, p.vec, narrow, spec.kind == NormKind::LayerNormFwd);
  p.threads_per_row = kn.threads_per_row.value_or(
      backward ? backward_threads(dev, vectors, p.vec, nacc) : fwd.threads);
  // Several rows a CTA for short rows: CTAs of 128 threads forward, 256 backward (fewer partials).
  const std::uint32_t target_block = backward ? 256 : 128;
  const std::uint32_t tpr = p.threads_per_row;
  p.rows_per_cta = kn.rows_per_cta.value_or(
      tpr < target_block && target_block % tpr == 0 ? target_block / tpr : std::max(1u, 32 / tpr));
  p.chunks = ceil_div(vectors, tpr);
  const bool wide_weights = spec.weight_dtype == DType::F32 && spec.dtype != DType::F32;

  // Forwards that read the row again from L2 instead of keeping it (torch.compile's shape): the
  // first read evict_last, the last one evict_first, a chunk at a time in 32 registers (48 where
  // f32 weights sit beside 16-bit rows: sm_80 spills a word at 40). On the H200 (docs/
  // performance.md): RMS rows of 4096 to 16384 elements in whole chunks ran 0-4% faster
  // than in registers (ragged 3000 and 6000: 5-7% slower); 16-bit layer norm rows too wide to
  // keep, 0-4% faster than staged in shared memory (layer norm reads the row three times, and
  // lost 2-12% at widths that fit registers). Only while the rows of every resident CTA fit
  // two fifths of the L2 (on the H200's 60 MiB, 21 MB resident ran faster, 32 MB slower).
  const std::uint32_t reread_registers = wide_weights ? 48 : 32;
  const std::uint32_t reread_ctas =
      std::min(dev.max_threads_per_sm / p.block(),
               dev.registers_per_sm / (round_up(p.block(), 128) * reread_registers));
  const std::uint64_t resident_bytes =
      std::uint64_t{reread_ctas} * p.sm_count * p.rows_per_cta * p.width * s;
  const bool reread_shape = spec.kind == NormKind::LayerNormFwd
                                ? fwd.stage_all
                                : p.width >= 4096 && p.width % (tpr * p.vec) == 0;
  const bool reread = !backward && !kn.register_chunks && !kn.staged_chunks &&
                      !kn.threads_per_row && kn.prefetch_rows.value_or(0) == 0 &&
                      spec.ptx_version >= PtxVersion{7, 4} && reread_shape &&
                      resident_bytes <= dev.l2_bytes * 2 / 5;
  p.l2_stream = kn.l2_stream.value_or(reread);
  // 16-bit layer norm forwards sum x − x₀ and (x − x₀)² in one pass (one reduction, one barrier
  // a row; a row read again from L2 is read twice, not three times). On the H200 (docs/
  // performance.md): 1-7% faster on 16-bit rows of 2048 to 20000 elements, even at
  // 16384x8192; f32 rows gained nothing and their error grew 5-fold (1.9e-7 to 9e-7).
  p.one_pass_stats = kn.one_pass_stats.value_or(spec.kind == NormKind::LayerNormFwd && narrow);
  // torch.compile's L1 priorities on the rows read again: 0-2% faster on every forward that reads
  // them again (H200); evict_first once read for the last time.
  p.l1_rereads = kn.l1_rereads.value_or(reread);
  p.row_nc = kn.row_nc.value_or(true);
  // Two-launch backwards launch their column reduce as the row step's CTAs end (griddepcontrol),
  // so its launch and first loads overlap the last rows: 2-10% faster on every two-launch
  // backward timed on the H200, most on the shortest (ln f16 4096x1024: 18.4 → 16.5 µs).
  const bool griddep = spec.arch >= Arch::Sm90 && spec.ptx_version >= PtxVersion{7, 8};
  p.overlap_reduce = backward && !single && kn.overlap_reduce.value_or(griddep);

  // Registers for as many chunks as the register ceiling leaves room for (accumulators first in
  // the backward: they stay for the whole kernel), then shared memory while it fits, then global.
  // Forward: 72 registers, fewer where two CTAs of the block would not fit at 72 (64 for 480 to
  // 1024 threads), about 900 threads an SM at least (ptxas on its own picks 64 and spills now and
  // then; at 72, f32 layer norm rows of 7777 and 8190 took 72 and one CTA of 512 an SM, and 8000
  // ran 102.6 µs at 4096 rows against 68.7 at 64 registers). Backward: what one CTA may use; the
  // grid sizes by it. A ctas_per_sm knob on the backward also caps the registers so that many CTAs
  // fit an SM. 16-bit layer norm rows of ≤ 32 values a thread (packed two to a register): 56, 4
  // CTAs of 256 threads an SM, ran 3% faster than 72 (3 CTAs) at 4096x8192 and 16384x8192 on the
  // H200. (Row groups of ≥ 128 threads with weights of the row's dtype: shorter groups and f32
  // weights spill a word at 56 on sm_80.)
  const bool packed_row = !backward && narrow && spec.kind == NormKind::LayerNormFwd &&
                          p.chunks * p.vec <= 32 && !fwd.stage_all && tpr >= 128 &&
                          spec.weight_dtype == spec.dtype;
  p.max_registers = kn.max_registers.value_or(
      backward          ? max_registers(dev, p.block() * kn.ctas_per_sm.value_or(1))
      : reread          ? reread_registers
      : p.block() > 512 ? 64
      : packed_row      ? 56
                        : std::min(72u, max_registers(dev, 2 * p.block())));
  std::uint32_t room = value_room(p.max_registers, p.vec, spec.kind);
  // f32 weights beside 16-bit rows: twice the registers for w (and b) of the chunk at hand.
  if (wide_weights) room -= std::min(room, p.vec);
  // RMS rows read again: two chunks' loads in flight a loop iteration, 1-3% faster on 16-bit rows.
  // At 32 registers 4 spill for f16 16384, and layer norm's rows spill even with 2.
  const bool rms_reread = reread && spec.kind == NormKind::RmsNormFwd;
  p.loop_group = kn.loop_group.value_or(p.max_registers >= 128 ? (backward ? 2 : 4)
                                        : rms_reread           ? 2
                                                               : 1);
  std::uint32_t acc_regs = 0;
  // A backward thread with a few chunks keeps everything in registers when it fits with room for
  // the rest; ptxas handles short unrolled passes well.
  const bool all_in_registers =
      backward && p.chunks <= 4 &&
      (2 + held_acc) * p.chunks * p.vec + 48 + (wide_weights ? 2 * p.vec : 0) <= p.max_registers;
  if (all_in_registers) room = (2 + held_acc) * p.chunks * p.vec;
  if (backward && !single) {
    acc_regs = std::min(p.chunks, kn.accumulator_register_chunks.value_or(room / (nacc * p.vec)));
    // Several row slots a CTA share one partial row (merged at the end): registers only.
    if (p.rows_per_cta > 1) acc_regs = p.chunks;
    room -= std::min(room, acc_regs * nacc * p.vec);
  }
  const std::uint32_t tensors = backward ? 2 : 1;
  // Forward rows of ≤ 32 values a thread stay whole in registers (no staging, nothing else
  // competes); beyond that the room above decides.
  std::uint32_t default_regs = room / (tensors * p.vec);
  if (!backward && p.chunks * p.vec <= 32) default_regs = p.chunks;
  // 16-bit rows too wide for 16 values a thread: all staged (also under a threads_per_row knob
  // that leaves more than 32 values a thread).
  if (!backward && narrow && (kn.threads_per_row ? p.chunks * p.vec > 32 : fwd.stage_all)) {
    default_regs = 0;
  }
  if (reread) default_regs = 0;
  const std::uint32_t data_regs = std::min(p.chunks, kn.register_chunks.value_or(default_regs));
  std::uint32_t shared_left = shared_budget(dev);
  const auto place = [&](std::vector<Place>& places, std::uint32_t in_registers,
                         std::uint32_t chunk_bytes, std::uint32_t max_shared) {
    places.assign(p.chunks, Place::Registers);
    for (std::uint32_t j = 0; j + in_registers < p.chunks; ++j) {
      places[j] = chunk_bytes <= shared_left && j < max_shared ? Place::Shared : Place::Global;
      if (places[j] == Place::Shared) shared_left -= chunk_bytes;
    }
  };
  if (backward && !single) {
    place(p.accum, acc_regs, tpr * p.vec * 4 * nacc, p.chunks);
  }
  place(p.data, data_regs, tpr * p.vec * s * p.rows_per_cta * tensors,
        kn.staged_chunks.value_or(reread ? 0 : p.chunks));
  // Prefetching the next row (measured on the H200): the backward gains up to 16% where its
  // registers allow; the forward gains when few rows are left per resident CTA (the runtime picks
  // it per batch, forward_prefetch_batch_limit) and loses a little on long batches.
  // Registers the prefetched row adds: its raw register chunks and lone tail elements.
  const std::uint32_t tail_regs = p.width % p.vec;
  const std::uint32_t prefetched =
      data_regs > 0 ? tensors * (data_regs * p.vec * s / 4 + tail_regs) : 0;
  // The backward's registers without prefetching: its values and ~40 + 3 vectors for the rest.
  const std::uint32_t backward_values = data_regs * 2 * p.vec + acc_regs * nacc * p.vec;
  const std::uint32_t backward_regs =
      std::min(p.max_registers, round_up(backward_values + 40 + 3 * p.vec, 8));
  const std::uint32_t backward_fit = ctas_by_registers(dev, p.block(), backward_regs);
  // Staged chunks prefetch by cp.async into a second buffer (no registers) where it fits.
  Plan doubled = p;
  doubled.async_staging = true;
  const bool async_fits = p.staged_chunks() > 0 && p.vec * s >= 4 &&
                          doubled.dynamic_shared_bytes(spec) <= shared_budget(dev);
  bool prefetch_default = false;
  if (backward && data_regs == 0) {
    // Every chunk staged: the prefetch costs shared memory only.
    prefetch_default = async_fits;
  } else if (backward) {
    // Only where the prefetched row fits the registers the CTAs an SM leave (calibrated on
    // ptxas: 8192-wide 16-bit and f32 rows fit, ragged tails of narrow rows do not).
    const std::uint32_t ceiling = max_registers(dev, p.block() * std::max(1u, backward_fit));
    // One launch: its freed accumulator registers go to x and dy, and where chunks outside
    // registers remain beside them, those loop with their own addresses, masks and counters: 16
    // more (ptxas 13.0 spilled the one-launch ln f32 16384 at 128 on sm_80 without them).
    const std::uint32_t mixed = single && data_regs < p.chunks ? 16 : 0;
    const std::uint32_t need = backward_values + prefetched + 24 + 2 * p.vec +
                               (wide_weights ? 2 * p.vec : 0) + 2 * tensors * tail_regs + mixed;
    prefetch_default = need <= std::min(p.max_registers, ceiling);
  }
  // Two rows ahead through a shared ring where every chunk sits in registers (no staging to share
  // the buffers with) and both buffers fit. The backward's default where, measured on the H200, it
  // beat one row ahead in registers: 16-bit rows with one CTA an SM (8192-wide: 4-15% faster).
  // With several CTAs an SM (4096-wide and narrower) it ran 12-40% slower, with f32 rows 4-5%.
  Plan ringed = p;
  ringed.ring = true;
  const bool ring_fits = data_regs == p.chunks && p.vec * s >= 4 &&
                         ringed.dynamic_shared_bytes(spec) <= shared_budget(dev);
  const bool ring_default =
      backward && ring_fits && s == 2 && kn.ctas_per_sm.value_or(backward_fit) == 1;
  const std::uint32_t depth = kn.prefetch_rows.value_or(ring_default       ? 2
                                                        : prefetch_default ? 1
                                                                           : 0);
  p.prefetch = depth >= 1;
  p.ring = depth >= 2;
  p.ring_rows = std::max(depth, 2u);
  p.persistent = backward || p.prefetch;
  p.async_staging = p.prefetch && !p.ring && async_fits;
  p.prefetch_fits = data_regs > 0 || async_fits;

  // Layer norm forwards of one row a CTA (not persistent) with the whole row in registers: w and b
  // load with the row, not after the two reductions where their L2 round trip sat on every row's
  // path. Measured on the H200 (docs/performance.md): ln f32 4096x8192 71.3 → 70.2
  // and 71.6 → 70.6 µs, ln f16 4096x8192 39.4 → 39.0; neutral on 16-bit 16384x8192. Only where
  // the row and its weights take ≤ 48 registers, at 64 (CTAs of 256 threads stay 4 an SM, as at
  // the packed rows' 56; at 65 and more one CTA of 512 fits), and not beside lone tail elements
  // (their weights spilled 68-80 bytes at 8190 wide).
  const auto ws = static_cast<std::uint32_t>(dtype_bytes(spec.weight_dtype));
  const std::uint32_t held_regs = p.chunks * p.vec * (s + 2 * ws) / 4;
  const bool early_default = spec.kind == NormKind::LayerNormFwd && !p.prefetch &&
                             data_regs == p.chunks && p.chunks * p.vec >= 16 && held_regs <= 48 &&
                             p.block() >= 256 && p.width % p.vec == 0;
  p.early_weights = !backward && kn.early_weights.value_or(early_default);
  if (p.early_weights && early_default && !kn.max_registers) p.max_registers = 64;
  if (!backward && p.prefetch && !p.ring && data_regs > 0 && !kn.max_registers) {
    // The forward's current row decoded, the next one raw, w and b of a chunk, 16 more (f32 rows:
    // 56; ptxas keeps more of them live), and one a chunk beyond 8 (narrow vectors: many chunks,
    // each with its own address and mask). Calibrated on ptxas 13.0, sm_80/sm_90.
    const std::uint32_t need =
        data_regs * p.vec + prefetched +
        (spec.kind == NormKind::LayerNormFwd ? 2 : 1) * p.vec * (wide_weights ? 2 : 1) +
        (s == 4 ? 56 : 16) + (data_regs > 8 ? data_regs - 8 : 0);
    const std::uint32_t ceiling = max_registers(dev, p.block());
    p.prefetch_fits = need <= ceiling;
    p.max_registers = std::clamp<std::uint32_t>(round_up(need, 8), p.max_registers, ceiling);
  }
  if (!backward && data_regs == 0 && p.staged_chunks() > 0 && !kn.max_registers) {
    // A forward whose row is all staged holds few values in registers (ptxas takes 40 at 512
    // threads, 55 when prefetching): cap them so that enough CTAs fit an SM. One CTA a row keeps
    // about 96 KB of row loads in flight an SM (Little's law: 12288-wide 16-bit rows ran 10% faster
    // at 4 CTAs of 32 registers than at 3 of 40; 16384-wide ones 1-3% slower at 4 than at 3). With
    // cp.async prefetching, as many CTAs as shared memory allows (4 at 12288: 11% faster).
    const bool copied_in = p.async_staging;
    const std::uint32_t floor = wide_weights ? 48 : 32;  // sm_80 spills a word at 40 with f32 w
    const std::uint32_t by_shared = ctas_by_shared(dev, p.dynamic_shared_bytes(spec));
    const std::uint32_t in_flight = ceil_div(96 * 1024, p.shared_layout(spec).staged_tensor_bytes);
    const std::uint32_t ctas = std::clamp<std::uint32_t>(
        kn.ctas_per_sm.value_or(std::min({by_shared, ctas_by_registers(dev, p.block(), floor),
                                          copied_in ? by_shared : in_flight})),
        1, 16);
    // ptxas takes about 40 on its own without prefetching: leave the ceiling where that is enough.
    const std::uint32_t cap = max_registers(dev, p.block() * ctas);
    if (copied_in || cap < 40) {
      p.max_registers = std::clamp<std::uint32_t>(cap, floor, p.max_registers);
    }
  }
  // Rows from a counter balance SMs that move rows at uneven speeds, at the price of dw/db bits
  // that vary run to run: only where the caller allows it, and where it measured faster (the RMS
  // backward's 16-bit rows copied in by cp.async, 28-32 KB: 9-13%; elsewhere -7% to +3%;
  // docs/performance.md).
  const bool tickets_pay = backward && !single && spec.kind == NormKind::RmsNormBwd && s == 2 &&
                           p.async_staging && !kn.deterministic.value_or(true);
  const RowOrder row_order =
      kn.row_order.value_or(tickets_pay ? RowOrder::Tickets : RowOrder::Fixed);
  p.ticketed_rows = p.persistent && backward && !single && row_order == RowOrder::Tickets;
  if (p.persistent) {
    // Persistent grid: as many CTAs as fit on an SM by registers and shared memory (the backward
    // estimates what it uses, the forward takes its ceiling).
    const std::uint32_t regs = backward ? backward_regs : p.max_registers;
    const std::uint32_t smem = p.dynamic_shared_bytes(spec);
    std::uint32_t fit = ctas_by_registers(dev, p.block(), regs);
    if (smem > 0) fit = std::min(fit, ctas_by_shared(dev, smem));
    p.ctas_per_sm = kn.ctas_per_sm.value_or(std::clamp<std::uint32_t>(fit, 1, 16));
    // A prefetching backward takes what those CTAs leave: ptxas, left at a one-CTA ceiling, took
    // 146 registers for the ring at 4096 wide (one CTA of 256 an SM where the grid counts two).
    if (backward && p.prefetch && !kn.max_registers) {
      p.max_registers = std::min(p.max_registers, max_registers(dev, p.block() * p.ctas_per_sm));
    }
  }
  if (backward) {
    // Each backward CTA walks enough rows that the f32 partials (written, then read by the reduce)
    // stay within about a quarter of the kernel's own traffic (x, dy read, dx written).
    const std::uint32_t rows_per_partial = ceil_div(32 * nacc, 3 * s);
    p.min_row_groups_per_cta =
        single ? 1 : kn.min_row_groups.value_or(ceil_div(rows_per_partial, p.rows_per_cta));
    // The column reduce sums at most one partial row per row-step CTA. Eight slices of 4 rows a
    // load round took 7.8 µs over 264 partial rows of 4096 (ncu, H200: 1.1 TB/s, one CTA of 8
    // warps an SM, each thread 9 round trips); up to 32 warps, each with all its rows (≤ 16) in
    // flight, take them in one or two.
    const std::uint32_t partials = p.sm_count * p.ctas_per_sm;
    p.reduce_slices =
        kn.reduce_slices.value_or(std::clamp(std::bit_ceil(ceil_div(partials, 8u)), 8u, 32u));
    p.reduce_unroll = std::clamp(ceil_div(partials, p.reduce_slices), 4u, 16u);
  }
  if (single) {
    // 16-bit pairs in one 4-byte load where every row holds whole, aligned pairs (rows are
    // aligned to p.vec elements). Rows share a warp's load (1, 2 or 4 of them, 32 bytes of each
    // at least) so that the tiles of columns come close to filling the grid.
    p.column_vec = s == 2 && p.vec >= 2 && p.width % 2 == 0 ? 2 : 1;
    const std::uint32_t ctas = p.sm_count * p.ctas_per_sm;
    const std::uint32_t most_row_lanes = p.column_vec * s >= 4 ? 4 : 2;
    while (p.column_row_lanes < most_row_lanes) {
      Plan wider = p;
      wider.column_row_lanes *= 2;
      if (wider.column_tiles() > ctas) break;
      p.column_row_lanes = wider.column_row_lanes;
    }
  }
  return p;
}

}  // namespace ptxdsl::kernels::detail

namespace ptxdsl::kernels {

std::uint32_t forward_prefetch_batch_limit(const NormSpec& spec) {
  using detail::Plan;
  NormSpec one_pass = spec;
  one_pass.knobs.prefetch_rows = 0;
  const Plan p = detail::plan_norm(one_pass);
  NormSpec prefetching = spec;
  prefetching.knobs.prefetch_rows = 1;
  if (!detail::plan_norm(prefetching).prefetch_fits) return 0;
  // Rows all staged: the cp.async prefetch measured no faster than one CTA a row at any batch
  // (12288- and 16384-wide 16-bit rows, 1024 to 16384 rows; docs/performance.md).
  if (std::count(p.data.begin(), p.data.end(), detail::Place::Registers) == 0) return 0;
  const std::uint32_t fit =
      std::max(1u, std::min(detail::ctas_by_registers(spec.device, p.block(), p.max_registers),
                            detail::ctas_by_shared(spec.device, p.dynamic_shared_bytes(spec))));
  // Up to about four rows a resident row slot: 4096x1024 and 1151x8192 f16 gained 7-14%,
  // 4096x4096 to 16384x8192 lost 1-7% (docs/performance.md).
  return 4 * p.sm_count * fit * p.rows_per_cta;
}

namespace {
// Rounds of loads (kColumnRowsInFlight a warp, a round trip to L2 each) a CTA's column pass may
// take: always up to 2; up to 16 where two launches would leave a quarter of the SMs without a CTA
// (each CTA walks min_row_groups rows so that the partial rows stay few). Measured on the H200
// over 19 cases of 32 to 2048 rows (docs/performance.md): the one launch won all 5 of
// ≤ 2 rounds and 6 of the 7 under-filled ones of 3-16 rounds (lost 3% at 8 rounds); with the SMs
// 80% full or more it lost 6 of 7 from 3 rounds on (rms_bwd f32 384x4096 by 9%, 512x4096 by 11%,
// 8 rounds by 16-24%) and won one by 5%.
constexpr std::uint32_t kColumnRoundsAlways = 2;
constexpr std::uint32_t kColumnRoundsUnderfilled = 16;
}  // namespace

std::uint32_t small_batch_limit(const NormSpec& spec) {
  if (is_backward(spec.kind)) {
    return spec.knobs.single_launch ? 0 : backward_single_launch_batch_limit(spec);
  }
  return spec.knobs.prefetch_rows ? 0 : forward_prefetch_batch_limit(spec);
}

NormSpec spec_for_batch(NormSpec spec, std::uint32_t batch) {
  if (batch > small_batch_limit(spec)) return spec;
  if (is_backward(spec.kind)) {
    spec.knobs.single_launch = true;
  } else {
    spec.knobs.prefetch_rows = 1;
  }
  return spec;
}

std::uint32_t backward_single_launch_batch_limit(const NormSpec& spec) {
  NormSpec single = spec;
  single.knobs.single_launch = true;
  const detail::Plan one = detail::plan_norm(single);
  NormSpec split = spec;
  split.knobs.single_launch = false;
  const detail::Plan two = detail::plan_norm(split);
  // A round: each warp's loads cover kColumnRowsInFlight × column_row_lanes rows of a tile; a CTA
  // takes its tiles one after another.
  const std::uint32_t rows_a_round =
      one.block() / 32 * one.column_row_lanes * detail::kColumnRowsInFlight;
  const std::uint32_t ctas = one.sm_count * one.ctas_per_sm;
  const std::uint32_t tiles_a_cta = (one.column_tiles() + ctas - 1) / ctas;
  const auto rows_within = [&](std::uint32_t rounds) {
    return rounds / tiles_a_cta * rows_a_round;
  };
  // The largest batch whose two launches leave a quarter of the SMs idle.
  const std::uint32_t underfilled =
      two.sm_count * 3 / 4 * two.rows_per_cta * two.min_row_groups_per_cta;
  return std::max(rows_within(kColumnRoundsAlways),
                  std::min(underfilled, rows_within(kColumnRoundsUnderfilled)));
}

}  // namespace ptxdsl::kernels
