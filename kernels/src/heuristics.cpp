#include "heuristics.hpp"

#include "element_io.hpp"

#include <fmt/format.h>

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
// then enough threads (≤ 512) that the row fits registers at 16 values a thread (16-bit layer
// norm: 32 values, ≤ 256 threads, so that 3-4 CTAs share an SM); 16-bit rows wider than that
// are staged whole at 512 threads; f32 rows wider keep 32 values a thread at up to 1024 threads.
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

std::uint32_t default_vector_elems(DType d) {
  return max_vector_elems(element_type(d));
}

std::uint32_t shared_budget(const DeviceModel& d) {
  // The opt-in maximum per block, less room for the kernels' static reduction scratch.
  return d.shared_per_block_optin - kStaticScratchBytes;
}

namespace {

// plan_heuristic in stages, in the order each needs the last: the thread mapping, the access hints,
// the register ceiling, where each chunk lives, how far ahead rows load, the forward's register
// caps, and the grid. Every stage reads the knob first and decides only what is unset; the
// measurements behind each rule are in docs/kernels.md and docs/performance.md.
class Planner {
  static constexpr std::uint32_t kHeldBytesPerThread = 128;  // a held row's share of a thread
  // Backward: registers of value_room's reserve that a staged row's partial sums may take.
  static constexpr std::uint32_t kStagedRowRelief = 32;

 public:
  // `slices`: how the row splits over a cluster, `spec` describing one slice (none: one CTA a
  // row).
  explicit Planner(const NormSpec& spec, std::optional<ClusterSlices> slices = std::nullopt)
      : cluster_ctas_(slices ? slices->ctas : 1),
        last_slice_width_(slices && slices->last_width < slices->width ? slices->last_width : 0),
        row_width_(slices ? slices->row_width() : spec.width),
        spec_(spec),
        kn_(spec.knobs),
        dev_(spec.device),
        backward_(is_backward(spec.kind)),
        layer_fwd_(spec.kind == NormKind::LayerNormFwd),
        nacc_(accumulators(spec)),
        s_(static_cast<std::uint32_t>(dtype_bytes(spec.dtype))),
        narrow_(s_ < 4),
        wide_weights_(spec.weight_dtype == DType::F32 && spec.dtype != DType::F32),
        single_(backward_ && (kn_.single_launch.value_or(false) || !has_weight_grads(spec))),
        tensors_(backward_ ? 2 : 1) {}

  Plan plan() {
    map_threads();
    choose_hints();
    cap_registers();
    place_chunks();
    load_ahead();
    fit_forward_registers();
    size_grid();
    return p_;
  }

 private:
  // T threads a row, R rows a CTA, V elements a vector.
  void map_threads() {
    p_.weight_grads = !backward_ || has_weight_grads(spec_)
                          ? (single_ ? WeightGrads::SingleLaunch : WeightGrads::PartialRows)
                          : WeightGrads::None;
    p_.width = spec_.width;
    p_.cluster_ctas = cluster_ctas_;
    p_.last_slice_width = last_slice_width_;
    p_.sm_count = kn_.sm_count.value_or(dev_.sm_count);
    p_.vec = vector_elems_of(spec_);
    const std::uint32_t vectors = ceil_div(p_.width, p_.vec);
    fwd_ = forward_shape(vectors, p_.vec, narrow_, layer_fwd_);
    // The residual add's chunk at hand does not fit the 64 registers of 1024 threads.
    if (!backward_ && has_residual(spec_)) fwd_.threads = std::min(fwd_.threads, 512u);
    p_.threads_per_row = kn_.threads_per_row.value_or(
        backward_ ? backward_threads(dev_, vectors, p_.vec, nacc_) : fwd_.threads);
    // Short rows share a CTA: 128 threads forward, 256 backward (fewer partial rows).
    const std::uint32_t target_block = backward_ ? 256 : 128;
    const std::uint32_t tpr = p_.threads_per_row;
    p_.rows_per_cta = kn_.rows_per_cta.value_or(tpr < target_block && target_block % tpr == 0
                                                    ? target_block / tpr
                                                    : std::max(1u, 32 / tpr));
    p_.chunks = ceil_div(vectors, tpr);
  }

  // Whether the forward reads its row again from L2 (torch.compile's shape), the cache policies
  // that go with it, one-pass statistics, and the backward's early reduce launch.
  void choose_hints() {
    // A chunk at a time in 32 registers (48 beside f32 weights: sm_80 spills a word at 40; 8 more
    // for a row that ends in lone elements, whose 7 spilled 4-12 bytes), while the rows of every
    // resident CTA fit two fifths of the L2.
    reread_registers_ = (wide_weights_ ? 48 : 32) + (lone_elements() > 0 ? 8 : 0);
    const std::uint32_t reread_ctas =
        std::min(dev_.max_threads_per_sm / p_.block(),
                 dev_.registers_per_sm / (round_up(p_.block(), 128) * reread_registers_));
    const std::uint64_t resident_bytes =
        std::uint64_t{reread_ctas} * p_.sm_count * p_.rows_per_cta * p_.width * s_;
    const bool reread_shape =
        layer_fwd_ ? fwd_.stage_all
                   : p_.width >= 4096 && p_.width % (p_.threads_per_row * p_.vec) == 0;
    // A forward row (or a cluster's slice of one) of 32-64 KiB stays in registers, at most 128
    // bytes a thread of 512: faster than reading it again or staging it.
    const std::uint64_t row_bytes = std::uint64_t{p_.width} * s_;
    // A ring of rows ahead (prefetch_rows ≥ 2) keeps it there too; rows read again load nothing
    // ahead. Layer norm rows beside f32 weights that end in more than 2 lone elements are not
    // held: ptxas spills their registers at 64, where 1 or 2 do not (docs/performance.md,
    // "Measurements behind the rules").
    const bool placement_unset = !kn_.register_chunks && !kn_.staged_chunks && !kn_.threads_per_row;
    const std::uint32_t ahead = kn_.prefetch_rows.value_or(0);
    const bool held_fits = !(layer_fwd_ && wide_weights_ && lone_elements() > 2);
    held_row_ = !backward_ && placement_unset && ahead != 1 && p_.rows_per_cta == 1 &&
                row_bytes > 32 * 1024 && held_fits &&
                row_bytes <= std::uint64_t{p_.threads_per_row} * kHeldBytesPerThread;
    reread_ = !backward_ && placement_unset && ahead == 0 && !held_row_ &&
              spec_.ptx_version >= PtxVersion{7, 4} && reread_shape &&
              resident_bytes <= dev_.l2_bytes * 2 / 5;
    p_.l2_stream = kn_.l2_stream.value_or(reread_);
    // One reduction and one barrier a row instead of two; f32 rows keep two passes (accuracy).
    p_.one_pass_stats = kn_.one_pass_stats.value_or(layer_fwd_ && narrow_);
    p_.l1_rereads = kn_.l1_rereads.value_or(reread_);
    p_.row_nc = kn_.row_nc.value_or(true);
    p_.shared_weights = !backward_ && kn_.shared_weights.value_or(false);
    // The column reduce's launch and first loads overlap the row step's last rows.
    const bool griddep = spec_.arch >= Arch::Sm90 && spec_.ptx_version >= PtxVersion{7, 8};
    p_.overlap_reduce = backward_ && !single_ && kn_.overlap_reduce.value_or(griddep);
  }

  // The register ceiling (.maxnreg), the values it leaves room for, and the loop group.
  void cap_registers() {
    // Forward: 72, or what lets two CTAs of the block share an SM (64 past 512 threads); 56 for
    // 16-bit layer norm rows packed two to a register (4 CTAs of 256 an SM; ≥ 128 threads and
    // weights of the row's dtype, which sm_80 keeps from spilling at 56), 64 where the row ends
    // in lone elements (as many CTAs; 7 of them spilled 4-12 bytes at 56). Backward: what one CTA
    // (or ctas_per_sm of them) may use; the grid sizes by it.
    const bool packed_row = !backward_ && narrow_ && layer_fwd_ && p_.chunks * p_.vec <= 32 &&
                            !fwd_.stage_all && p_.threads_per_row >= 128 &&
                            spec_.weight_dtype == spec_.dtype;
    p_.max_registers = kn_.max_registers.value_or(
        backward_          ? max_registers(dev_, p_.block() * kn_.ctas_per_sm.value_or(1))
        : reread_          ? reread_registers_
        : p_.block() > 512 ? 64
        : packed_row       ? (lone_elements() > 0 ? 64u : 56u)
                           : std::min(72u, max_registers(dev_, 2 * p_.block())));
    room_ = value_room(p_.max_registers, p_.vec, spec_.kind);
    // f32 weights beside 16-bit rows: twice the registers for w (and b) of the chunk at hand.
    if (wide_weights_) room_ -= std::min(room_, p_.vec);
    // The residual add's chunk at hand: the residual's values and h (forward), or dh (backward),
    // raw and decoded (f32 residuals beside 16-bit rows: twice the raw registers).
    const bool wide_residual = residual_dtype(spec_) != spec_.dtype;
    if (has_residual(spec_)) room_ -= std::min(room_, (wide_residual ? 4 : 3) * p_.vec);
    // RMS rows read again: two chunks' loads in flight a loop iteration (layer norm's spill).
    const bool rms_reread = reread_ && spec_.kind == NormKind::RmsNormFwd;
    p_.loop_group = kn_.loop_group.value_or(p_.max_registers >= 128 ? (backward_ ? 2 : 4)
                                            : rms_reread            ? 2
                                                                    : 1);
  }

  // Where each chunk lives: registers as far as the room goes (the backward's accumulators first:
  // they stay for the whole kernel), then shared memory while it fits, then read again from L2.
  void place_chunks() {
    const std::uint32_t held_acc = single_ ? 0 : nacc_;
    // A backward thread with a few chunks keeps everything in registers when it fits with room
    // for the rest; ptxas handles short unrolled passes well.
    const bool all_in_registers = backward_ && p_.chunks <= 4 &&
                                  (2 + held_acc) * p_.chunks * p_.vec + 48 +
                                          (wide_weights_ ? 2 * p_.vec : 0) +
                                          (has_residual(spec_) ? 3 * p_.vec : 0) <=
                                      p_.max_registers;
    if (all_in_registers) room_ = (2 + held_acc) * p_.chunks * p_.vec;
    if (backward_ && !single_) {
      std::uint32_t acc_default = room_ / (nacc_ * p_.vec);
      // A cluster's slice that stays out of registers anyway (no chunk of x and dy fits beside
      // the partial sums) holds only the chunk at hand: the sums take kStagedRowRelief registers
      // of its reserve. Only there: one CTA a row keeps the reserve (measured slower without it,
      // docs/performance.md, "Measurements behind the rules"); so does a row that does not fit
      // shared memory whole, whose chunks read again from L2 loop with addresses and masks of
      // their own (those spilled on the A100 and L40S presets).
      const std::uint32_t row_shared_bytes = p_.row_span() * s_ * tensors_;
      const bool row_staged =
          cluster_ctas_ > 1 && p_.rows_per_cta == 1 && !all_in_registers && !kn_.register_chunks &&
          room_ - std::min(room_, acc_default * nacc_ * p_.vec) < tensors_ * p_.vec &&
          row_shared_bytes <= shared_budget(dev_);
      if (row_staged) acc_default = (room_ + kStagedRowRelief) / (nacc_ * p_.vec);
      acc_regs_ = std::min(p_.chunks, kn_.accumulator_register_chunks.value_or(acc_default));
      // Several row slots a CTA share one partial row (merged at the end): registers only.
      if (p_.rows_per_cta > 1) acc_regs_ = p_.chunks;
      room_ -= std::min(room_, acc_regs_ * nacc_ * p_.vec);
    }
    // Forward rows of ≤ 32 values a thread stay whole in registers; 16-bit rows wider than that
    // are all staged, and rows read again keep nothing.
    std::uint32_t default_regs = room_ / (tensors_ * p_.vec);
    if (!backward_ && p_.chunks * p_.vec <= 32) default_regs = p_.chunks;
    if (!backward_ && narrow_ && (kn_.threads_per_row ? p_.chunks * p_.vec > 32 : fwd_.stage_all)) {
      default_regs = 0;
    }
    if (reread_) default_regs = 0;
    if (held_row_) default_regs = p_.chunks;
    data_regs_ = std::min(p_.chunks, kn_.register_chunks.value_or(default_regs));
    // Weights in shared memory come first: every row reads them.
    std::uint32_t shared_left = shared_budget(dev_);
    shared_left -= std::min(shared_left, p_.shared_layout(spec_).weights.bytes);
    const auto place = [&](std::vector<Place>& places, std::uint32_t in_registers,
                           std::uint32_t chunk_bytes, std::uint32_t max_shared) {
      places.assign(p_.chunks, Place::Registers);
      for (std::uint32_t j = 0; j + in_registers < p_.chunks; ++j) {
        places[j] = chunk_bytes <= shared_left && j < max_shared ? Place::Shared : Place::Global;
        if (places[j] == Place::Shared) shared_left -= chunk_bytes;
      }
    };
    const std::uint32_t tpr = p_.threads_per_row;
    if (backward_ && !single_) place(p_.accum, acc_regs_, tpr * p_.vec * 4 * nacc_, p_.chunks);
    place(p_.data, data_regs_, tpr * p_.vec * s_ * p_.rows_per_cta * tensors_,
          kn_.staged_chunks.value_or(reread_ ? 0 : p_.chunks));
  }

  // How far ahead rows load: none, the next row (registers, or cp.async into a second staging
  // buffer), or a ring of 2-4 rows by cp.async. The backward prefetches where its registers allow;
  // the forward only by knob (the runtime turns it on for small batches).
  void load_ahead() {
    // Registers the prefetched row adds: its raw register chunks and lone tail elements.
    tail_regs_ = lone_elements();
    prefetched_ = data_regs_ > 0 ? tensors_ * (data_regs_ * p_.vec * s_ / 4 + tail_regs_) : 0;
    // The backward's registers without prefetching: its values and ~40 + 3 vectors for the rest.
    const std::uint32_t backward_values = data_regs_ * 2 * p_.vec + acc_regs_ * nacc_ * p_.vec;
    backward_regs_ = std::min(p_.max_registers, round_up(backward_values + 40 + 3 * p_.vec, 8));
    const std::uint32_t backward_fit = ctas_by_registers(dev_, p_.block(), backward_regs_);
    Plan doubled = p_;
    doubled.staging = Staging::Async;
    async_fits_ = p_.staged_chunks() > 0 && p_.vec * s_ >= 4 &&
                  doubled.dynamic_shared_bytes(spec_) <= shared_budget(dev_);
    bool prefetch_default = false;
    // Where the next row does not fit registers but the row step without it does, with room to
    // spare for the ring's addresses: a ring in shared memory takes its place (below).
    bool ring_instead = false;
    if (backward_ && data_regs_ == 0) {
      prefetch_default = async_fits_;  // every chunk staged: it costs shared memory only
    } else if (backward_) {
      // Where the prefetched row fits the registers the CTAs an SM leave; the one launch's chunks
      // outside registers loop with their own addresses, masks and counters (16 more).
      const std::uint32_t ceiling =
          std::min(p_.max_registers, max_registers(dev_, p_.block() * std::max(1u, backward_fit)));
      const std::uint32_t mixed = single_ && data_regs_ < p_.chunks ? 16 : 0;
      // A cluster reduce's addresses and slot offsets: 8 more.
      const std::uint32_t cluster_regs = cluster_ctas_ > 1 ? 8 : 0;
      const std::uint32_t row_step = backward_values + 24 + cluster_regs + 2 * p_.vec +
                                     (wide_weights_ ? 2 * p_.vec : 0) + 2 * tensors_ * tail_regs_ +
                                     mixed + (has_residual(spec_) ? 2 * p_.vec : 0);
      prefetch_default = row_step + prefetched_ <= ceiling;
      ring_instead = !prefetch_default && !single_ && tail_regs_ == 0 && row_step + 8 <= ceiling;
    }
    // The ring: every chunk in registers, vectors cp.async can copy, both buffers fit; the
    // backward's default for 16-bit rows with one CTA an SM, and in place of the next row where
    // that does not fit registers (faster than either: docs/performance.md, "Measurements behind
    // the rules").
    Plan ringed = p_;
    ringed.lookahead = Lookahead::Ring;
    const bool ring_fits = data_regs_ == p_.chunks && p_.vec * s_ >= 4 &&
                           ringed.dynamic_shared_bytes(spec_) <= shared_budget(dev_);
    // A row that ends in lone elements keeps to one row ahead at most: their registers beside
    // the ring's spilled (rms_bwd bf16 12287: 28 bytes).
    const bool ring_default =
        backward_ && ring_fits && tail_regs_ == 0 &&
        ((s_ == 2 && kn_.ctas_per_sm.value_or(backward_fit) == 1) || ring_instead);
    const std::uint32_t depth = kn_.prefetch_rows.value_or(ring_default       ? 2
                                                           : prefetch_default ? 1
                                                                              : 0);
    p_.lookahead = depth >= 2 ? Lookahead::Ring : depth == 1 ? Lookahead::NextRow : Lookahead::None;
    p_.ring_rows = std::max(depth, 2u);
    p_.grid = backward_ || depth >= 1 ? Grid::Persistent : Grid::RowGroupPerCta;
    if (p_.lookahead == Lookahead::NextRow && async_fits_) p_.staging = Staging::Async;
    p_.prefetch_fits = data_regs_ > 0 || async_fits_;
  }

  // The forward's weights loaded with the row, and the register caps that follow from its shape.
  void fit_forward_registers() {
    if (backward_) return;
    // w and b with the row where the layer norm forward's row sits whole in registers, one row a
    // CTA of ≥ 256 threads, in ≤ 48 registers with its weights and no lone tail elements (those
    // spilled); at 64 registers, which keeps 4 CTAs of 256 an SM.
    const auto ws = static_cast<std::uint32_t>(dtype_bytes(spec_.weight_dtype));
    const std::uint32_t held_regs = p_.chunks * p_.vec * (s_ + 2 * ws) / 4;
    const bool early_default = layer_fwd_ && p_.lookahead == Lookahead::None &&
                               data_regs_ == p_.chunks && p_.chunks * p_.vec >= 16 &&
                               held_regs <= 48 && p_.block() >= 256 && lone_elements() == 0 &&
                               !has_residual(spec_);
    p_.early_weights = kn_.early_weights.value_or(early_default);
    if (p_.early_weights && early_default && !kn_.max_registers) p_.max_registers = 64;
    if (p_.lookahead == Lookahead::NextRow && data_regs_ > 0 && !kn_.max_registers) {
      // The current row decoded, the next one raw, w and b of a chunk, 16 more (f32 rows: 56),
      // one a chunk beyond 8 (calibrated on ptxas 13.0, sm_80/sm_90), and the lone elements'
      // values (without them ln_fwd bf16 8191 beside f32 weights spilled 4 bytes at 104).
      const std::uint32_t need = data_regs_ * p_.vec + prefetched_ + tail_regs_ +
                                 (layer_fwd_ ? 2 : 1) * p_.vec * (wide_weights_ ? 2 : 1) +
                                 (s_ == 4 ? 56 : 16) + (data_regs_ > 8 ? data_regs_ - 8 : 0);
      const std::uint32_t ceiling = max_registers(dev_, p_.block());
      p_.prefetch_fits = need <= ceiling;
      p_.max_registers = std::clamp<std::uint32_t>(round_up(need, 8), p_.max_registers, ceiling);
    }
    if (data_regs_ == 0 && p_.staged_chunks() > 0 && !kn_.max_registers) {
      // A staged row holds few values in registers: cap them so that enough CTAs share an SM to
      // keep about 96 KB of row loads in flight (as many as shared memory allows when cp.async
      // copies the row in), at least 32 (48 beside f32 weights: sm_80 spills a word at 40).
      const bool copied_in = p_.staging == Staging::Async;
      const std::uint32_t floor = wide_weights_ ? 48 : 32;
      const std::uint32_t by_shared = ctas_by_shared(dev_, p_.dynamic_shared_bytes(spec_));
      const std::uint32_t in_flight =
          ceil_div(96 * 1024, p_.shared_layout(spec_).staged_tensor_bytes);
      const std::uint32_t ctas = std::clamp<std::uint32_t>(
          kn_.ctas_per_sm.value_or(std::min({by_shared, ctas_by_registers(dev_, p_.block(), floor),
                                             copied_in ? by_shared : in_flight})),
          1, 16);
      // ptxas takes about 40 on its own without prefetching: leave the ceiling where that is
      // enough.
      const std::uint32_t cap = max_registers(dev_, p_.block() * ctas);
      if (copied_in || cap < 40) {
        p_.max_registers = std::clamp<std::uint32_t>(cap, floor, p_.max_registers);
      }
    }
    // The residual add holds a chunk of x, the residual's and h at once, beside what the caps
    // above count.
    if (has_residual(spec_) && !kn_.max_registers) {
      const bool wide_residual = residual_dtype(spec_) != spec_.dtype;
      p_.max_registers =
          std::min(max_registers(dev_, p_.block()), p_.max_registers + (wide_residual ? 40 : 24));
    }
  }

  // The persistent grid, the rows its CTAs walk, and the backward's dw/db reduction.
  void size_grid() {
    // Tickets balance SMs that move rows at uneven speeds, but dw/db then vary run to run: only
    // where the caller allows it and they measured faster (RMS, 16-bit rows copied in by cp.async).
    const bool tickets_pay = backward_ && !single_ && spec_.kind == NormKind::RmsNormBwd &&
                             s_ == 2 && p_.staging == Staging::Async &&
                             !kn_.deterministic.value_or(true);
    const RowOrder row_order =
        kn_.row_order.value_or(tickets_pay ? RowOrder::Tickets : RowOrder::Fixed);
    const bool persistent = p_.grid == Grid::Persistent;
    if (persistent && backward_ && !single_) p_.row_order = row_order;
    // Partial rows summed over a cluster on chip: CTAs that walk whole rows in a fixed order
    // (validate names what else the knob conflicts with).
    if (backward_ && !single_ && cluster_ctas_ == 1 && p_.row_order == RowOrder::Fixed) {
      p_.partial_cluster = kn_.partial_cluster.value_or(1);
    }
    if (persistent) {
      // As many CTAs as fit an SM by registers and shared memory (the backward's estimate of its
      // registers, the forward's ceiling).
      const std::uint32_t regs = backward_ ? backward_regs_ : p_.max_registers;
      const std::uint32_t smem = p_.dynamic_shared_bytes(spec_);
      std::uint32_t fit = ctas_by_registers(dev_, p_.block(), regs);
      if (smem > 0) fit = std::min(fit, ctas_by_shared(dev_, smem));
      // The one-launch backward takes one CTA an SM, its column pass fewer and wider tiles
      // (docs/kernels.md, "Backward, small batches: one launch").
      if (p_.weight_grads == WeightGrads::SingleLaunch) fit = 1;
      p_.ctas_per_sm = kn_.ctas_per_sm.value_or(std::clamp<std::uint32_t>(fit, 1, 16));
      // A backward takes what those CTAs leave: ptxas, left at a one-CTA ceiling, can take more
      // than the estimate the grid counts on, and CTAs that do not fit run as a second wave. A
      // prefetching one keeps the quarter-SM margin of max_registers it was measured with.
      if (backward_ && !kn_.max_registers) {
        const std::uint32_t threads = p_.block() * p_.ctas_per_sm;
        p_.max_registers = std::min(p_.max_registers, p_.lookahead != Lookahead::None
                                                          ? max_registers(dev_, threads)
                                                          : resident_registers(dev_, threads));
      }
    }
    if (backward_) {
      // Enough rows a CTA that the f32 partial rows stay about a quarter of the kernel's traffic.
      const std::uint32_t rows_per_partial = ceil_div(32 * nacc_, 3 * s_);
      p_.min_row_groups_per_cta =
          single_ ? 1 : kn_.min_row_groups.value_or(ceil_div(rows_per_partial, p_.rows_per_cta));
      size_column_reduce();
    }
    if (single_) {
      // 16-bit pairs in one 4-byte load where every row holds whole, aligned pairs; rows share a
      // warp's load (1, 2 or 4, 32 bytes of each at least) so the tiles come close to the grid.
      p_.column_vec = s_ == 2 && p_.vec >= 2 && p_.width % 2 == 0 ? 2 : 1;
      const std::uint32_t ctas = p_.sm_count * p_.ctas_per_sm;
      const std::uint32_t most_row_lanes = p_.column_vec * s_ >= 4 ? 4 : 2;
      while (p_.column_row_lanes < most_row_lanes) {
        Plan wider = p_;
        wider.column_row_lanes *= 2;
        if (wider.column_tiles() > ctas) break;
        p_.column_row_lanes = wider.column_row_lanes;
      }
    }
  }

  // The backward's column reduce over the partial rows of the grid, for the whole row.
  void size_column_reduce() {
    // At most one partial row a row-step CTA (a cluster's CTAs share one, whether they split the
    // rows or add their partial rows up); up to 32 warps, each with all its rows (≤ 16) in flight.
    const std::uint32_t partials =
        std::max(1u, p_.sm_count * p_.ctas_per_sm / (cluster_ctas_ * p_.partial_cluster));
    p_.reduce_slices =
        kn_.reduce_slices.value_or(std::clamp(std::bit_ceil(ceil_div(partials, 8u)), 8u, 32u));
    p_.reduce_unroll = std::clamp(ceil_div(partials, p_.reduce_slices), 4u, 16u);
    // A vector of columns a thread where the CTAs stay at least 4 an SM: wide rows' few partial
    // rows otherwise leave each thread one 4-byte load a round.
    const std::uint32_t width = row_width_;
    std::uint32_t v = 4;
    while (v > 1 && ceil_div(width, p_.reduce_columns * v) < 4 * p_.sm_count) v /= 2;
    v = kn_.reduce_vector.value_or(v);
    // Whole vectors of the width, as aligned as the call's (dw and db are stored by them).
    while (v > 1 && (v > p_.vec || width % v != 0)) v /= 2;
    p_.reduce_vector = v;
    // Vectors: at most 16 floats in flight a thread over dw's and db's loads (more spill on sm_80).
    const std::uint32_t tensors = has_bias(spec_) ? 2 : 1;
    if (v > 1) p_.reduce_unroll = std::max(1u, std::min(p_.reduce_unroll, 16 / (v * tensors)));
  }

  // The row's lone elements past its last whole vector: a cluster's shorter last slice has them
  // where the other slices (whole vectors) do not.
  std::uint32_t lone_elements() const {
    return (last_slice_width_ > 0 ? last_slice_width_ : p_.width) % p_.vec;
  }

  const std::uint32_t cluster_ctas_, last_slice_width_, row_width_;
  const NormSpec& spec_;
  const NormKnobs& kn_;
  const DeviceModel& dev_;
  const bool backward_, layer_fwd_;
  const std::uint32_t nacc_, s_;
  const bool narrow_, wide_weights_, single_;
  const std::uint32_t tensors_;
  Plan p_;
  ForwardShape fwd_;
  bool reread_ = false, held_row_ = false, async_fits_ = false;
  std::uint32_t reread_registers_ = 32, room_ = 0, acc_regs_ = 0, data_regs_ = 0;
  std::uint32_t tail_regs_ = 0, prefetched_ = 0, backward_regs_ = 0;
};

}  // namespace

// A row of more than this many bytes is split over a cluster, where the device has clusters,
// into slices of at most this many: held in registers (forward, 64 KiB), or walked as a row of
// its own (backward, 32 KiB, the width whose x and dy a CTA stages whole beside its partial sums).
// The fastest splits measured on the H200 at 32768-262144 columns (docs/performance.md, "Wide
// rows").
constexpr std::uint32_t kForwardSliceBytes = 64 * 1024;
constexpr std::uint32_t kBackwardSliceBytes = 32 * 1024;

std::string cluster_knob_conflict(const NormSpec& spec, std::uint32_t cluster_ctas) {
  // A cluster's slices take one row a CTA, and in the backward partial rows in a fixed row order.
  const NormKnobs& kn = spec.knobs;
  const bool forward = !is_backward(spec.kind);
  if (kn.rows_per_cta.value_or(1) > 1) {
    return fmt::format("cluster_ctas {} gives each CTA one row's slice: it takes rows_per_cta 1",
                       cluster_ctas);
  }
  if (!forward && (kn.single_launch.value_or(false) || kn.row_order == RowOrder::Tickets)) {
    return fmt::format(
        "cluster_ctas {} sums dw and db by partial rows in a fixed row order: it takes no "
        "single_launch 1 or row_order tickets",
        cluster_ctas);
  }
  if (!forward && kn.partial_cluster.value_or(1) > 1) {
    return fmt::format(
        "cluster_ctas {} splits each row over a cluster, and partial_cluster {} sums the partial "
        "rows of CTAs that walk whole rows: it takes no cluster_ctas",
        cluster_ctas, *kn.partial_cluster);
  }
  return "";
}

std::uint32_t cluster_ctas_for(const NormSpec& spec) {
  if (spec.knobs.cluster_ctas) return *spec.knobs.cluster_ctas;
  if (spec.arch < Arch::Sm90 || !spec.device.has_clusters()) return 1;
  if (!cluster_knob_conflict(spec, 2).empty()) return 1;
  const auto bytes = static_cast<std::uint32_t>(dtype_bytes(spec.dtype));
  const std::uint32_t slice_bytes =
      is_backward(spec.kind) ? kBackwardSliceBytes : kForwardSliceBytes;
  if (std::uint64_t{spec.width} * bytes <= slice_bytes) return 1;
  // The fewest CTAs whose slices fit, each a whole number of 16-byte vectors (so every slice
  // starts as aligned as the row); else the most the device allows: the backward past the
  // portable 8 where the device opts in (its 32 KiB slices at 262144 columns), the forward,
  // whose 64 KiB slices fit 8 CTAs for 16-bit rows, within them.
  const std::uint32_t allowed =
      is_backward(spec.kind) ? spec.device.largest_cluster() : spec.device.max_cluster_size;
  const std::uint32_t most = std::min(allowed, kMaxClusterCtas);
  const std::uint32_t vec = vector_elems_of(spec);
  std::uint32_t best = 1;
  for (std::uint32_t c = 2; c <= most; c *= 2) {
    const std::optional<ClusterSlices> slices = cluster_slices(spec.width, c, vec);
    if (!slices || slices->vec < vec) break;
    best = c;
    if (std::uint64_t{slices->width} * bytes <= slice_bytes) break;
  }
  return best;
}

std::optional<ClusterSlices> cluster_slices(std::uint32_t width, std::uint32_t ctas,
                                            std::uint32_t vec) {
  for (std::uint32_t v = vec; v >= 1; v /= 2) {
    const std::uint64_t slice = (ceil_div(width, ctas) + v - 1) / v * v;
    if (slice * (ctas - 1) < width) {
      const auto s = static_cast<std::uint32_t>(slice);
      return ClusterSlices{ctas, s, width - s * (ctas - 1), v};
    }
  }
  return std::nullopt;
}

ClusterSlices split_row(const NormSpec& spec, std::uint32_t ctas) {
  const std::uint32_t vec = vector_elems_of(spec);
  if (const std::optional<ClusterSlices> slices = cluster_slices(spec.width, ctas, vec)) {
    return *slices;
  }
  throw Error(fmt::format(
      "cluster_ctas {} is too many CTAs for a {}-wide row: slices of {} columns or more leave the "
      "last CTA none",
      ctas, spec.width, ceil_div(spec.width, ctas)));
}

namespace {
// Forwards whose weights are wider than their rows (f32 on 16-bit rows), split over a cluster,
// walk the rows on persistent clusters of twice as many CTAs, one row ahead, with w (and b)
// copied into shared memory once, where the weights' bytes a column times the heuristic's CTAs
// reach this: each CTA otherwise reads its slice of the weights from L2 again for every row, and
// the wider the cluster, the longer its CTAs wait for their peers with nothing in flight
// (docs/performance.md, "Measurements behind the rules").
constexpr std::uint32_t kWeightsWalkFromBytesTimesCtas = 32;

// That walk's plan, where it applies and passes validate()'s checks.
std::optional<Plan> shared_weights_walk(const NormSpec& spec, std::uint32_t cluster) {
  const NormKnobs& kn = spec.knobs;
  const int weight_bytes = dtype_bytes(spec.weight_dtype);
  const std::uint32_t weights_a_column = static_cast<std::uint32_t>(weight_bytes) *
                                         ((has_weight(spec) ? 1 : 0) + (has_bias(spec) ? 1 : 0));
  if (is_backward(spec.kind) || has_residual(spec) || weight_bytes <= dtype_bytes(spec.dtype) ||
      cluster < 2 || weights_a_column * cluster < kWeightsWalkFromBytesTimesCtas ||
      kn.cluster_ctas || kn.prefetch_rows || kn.shared_weights || kn.rows_per_cta) {
    return std::nullopt;
  }
  NormSpec walk = spec;
  walk.knobs.cluster_ctas = 2 * cluster;
  walk.knobs.prefetch_rows = 1;
  walk.knobs.shared_weights = true;
  try {
    // The device's cluster limit, the width's split, the shared memory.
    check_spec(walk);
    Plan plan = plan_heuristic(walk);
    check_plan(walk, plan);
    return plan;
  } catch (const Error&) {
    return std::nullopt;
  }
}
}  // namespace

Plan plan_heuristic(const NormSpec& spec) {
  // An entry of the tuning table comes in as knobs: one that names cluster_ctas was measured with
  // it, and a spec without it splits (or walks) by the heuristic.
  const std::uint32_t cluster = cluster_ctas_for(spec);
  if (!spec.knobs.cluster_ctas) {
    if (std::optional<Plan> walk = shared_weights_walk(spec, cluster)) return std::move(*walk);
  }
  if (cluster > 1) {
    // Each CTA of the cluster plans its slice of the row, one row a CTA.
    NormSpec slice = spec;
    slice.knobs.cluster_ctas.reset();
    slice.knobs.rows_per_cta = 1;
    if (is_backward(spec.kind)) {
      // Partial rows, written by each CTA of the cluster over its slice's columns; a fixed walk.
      slice.knobs.single_launch = false;
      slice.knobs.row_order = RowOrder::Fixed;
    } else if (!slice.knobs.prefetch_rows) {
      slice.knobs.prefetch_rows = 0;
    }
    // Every slice starts as aligned as the row: whole vectors, the last slice what is left.
    const ClusterSlices slices = split_row(slice, cluster);
    slice.width = slices.width;
    slice.knobs.vector_elems = slices.vec;
    Plan p = Planner(slice, slices).plan();
    if (p.block() < 32) {  // a narrow slice: a warp at least (cluster_reduce reduces the block)
      slice.knobs.threads_per_row = 32;
      p = Planner(slice, slices).plan();
    }
    return p;
  }
  return Planner(spec).plan();
}

}  // namespace ptxdsl::kernels::detail
