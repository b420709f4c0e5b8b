#include "heuristics.hpp"

#include <algorithm>
#include <bit>

namespace ptxdsl::kernels::detail {
namespace {

std::uint32_t ceil_div(std::uint32_t a, std::uint32_t b) {
  return (a + b - 1) / b;
}
std::uint32_t round_up(std::uint32_t a, std::uint32_t b) {
  return ceil_div(a, b) * b;
}

bool is_backward(NormKind k) {
  return k == NormKind::LayerNormBwd || k == NormKind::RmsNormBwd;
}
std::uint32_t accumulators(NormKind k) {
  return k == NormKind::LayerNormBwd ? 2 : 1;
}

// Registers a thread may use so that one CTA of `block` threads fits on an SM (64K registers).
std::uint32_t max_registers(std::uint32_t block) {
  return std::min<std::uint32_t>(255, 65536 / round_up(block, 128) / 8 * 8);
}

// f32 values a thread may keep in registers across a pass, the rest of its registers going to
// addresses, predicates, statistics and temporaries.
std::uint32_t value_budget(std::uint32_t block, bool backward) {
  const std::uint32_t regs = max_registers(block);
  if (!backward) return std::min<std::uint32_t>(32, regs - 24);
  return std::min<std::uint32_t>(96, regs - 32);
}

// Forward: ≤ 2 vectors a thread for short rows (sub-warp groups), a warp up to 32 values a thread,
// then as many warps as keep ≤ 32 values a thread, up to 1024 threads.
std::uint32_t forward_threads(std::uint32_t vectors, std::uint32_t vec) {
  const std::uint32_t per_thread = std::max<std::uint32_t>(1, 32 / vec);
  if (vectors <= 64) return std::bit_ceil(ceil_div(vectors, 2));
  if (ceil_div(vectors, per_thread) <= 32) return 32;
  return std::min<std::uint32_t>(1024, round_up(ceil_div(vectors, per_thread), 32));
}

// Backward: x and dy at ≤ 16 values a thread each; then fewer threads when that lets every
// accumulator column live in registers (partials in the workspace cost L2 traffic every row).
std::uint32_t backward_threads(std::uint32_t vectors, std::uint32_t vec, std::uint32_t nacc) {
  if (vectors <= 32) return std::bit_ceil(vectors);
  const std::uint32_t per_thread = std::max<std::uint32_t>(1, 16 / vec);
  const std::uint32_t first =
      std::min<std::uint32_t>(1024, round_up(ceil_div(vectors, per_thread), 32));
  std::uint32_t best = first;
  double best_share = -1;
  for (std::uint32_t t = first; t >= 32; t = t / 2 / 32 * 32) {
    const std::uint32_t chunks = ceil_div(vectors, t);
    const std::uint32_t budget = value_budget(t, true);
    const std::uint32_t room = budget > 2 * vec ? budget - 2 * vec : 0;
    const std::uint32_t acc_chunks = std::min(chunks, room / (nacc * vec));
    const double share = static_cast<double>(acc_chunks) / chunks;
    if (share > best_share + 1e-9) {
      best = t;
      best_share = share;
    }
    if (share >= 1.0 || t == 32) break;
  }
  return best;
}

}  // namespace

std::uint32_t default_vector_elems(DType d) {
  return 16 / static_cast<std::uint32_t>(dtype_bytes(d));
}

std::uint32_t shared_budget(Arch a) {
  // The opt-in maximum per block (163 KB on sm_80, 227 KB on sm_90 and later), less room for the
  // kernels' static reduction scratch.
  return (a == Arch::Sm80 ? 166912u : 232448u) - 4096u;
}

std::uint32_t Plan::staged_chunks() const {
  return static_cast<std::uint32_t>(std::count(data.begin(), data.end(), Place::Shared));
}

std::uint32_t Plan::staging_bytes(int element_bytes, int tensors) const {
  return staged_chunks() * threads_per_row * vec * static_cast<std::uint32_t>(element_bytes) *
         rows_per_cta * static_cast<std::uint32_t>(tensors);
}

Plan plan_norm(const NormSpec& spec) {
  const NormKnobs& kn = spec.knobs;
  const bool backward = is_backward(spec.kind);
  const std::uint32_t nacc = accumulators(spec.kind);
  const auto s = static_cast<std::uint32_t>(dtype_bytes(spec.dtype));

  Plan p;
  p.width = spec.width;
  p.vec = kn.vector_elems.value_or(default_vector_elems(spec.dtype));
  const std::uint32_t vectors = ceil_div(p.width, p.vec);
  p.threads_per_row = kn.threads_per_row.value_or(backward ? backward_threads(vectors, p.vec, nacc)
                                                           : forward_threads(vectors, p.vec));
  // Several rows a CTA for short rows: CTAs of 128 threads forward, 256 backward (fewer partials).
  const std::uint32_t target_block = backward ? 256 : 128;
  const std::uint32_t tpr = p.threads_per_row;
  p.rows_per_cta = kn.rows_per_cta.value_or(
      tpr < target_block && target_block % tpr == 0 ? target_block / tpr : std::max(1u, 32 / tpr));
  p.chunks = ceil_div(vectors, tpr);

  // Registers first for the last chunks (the last holds the masked tail), then shared memory while
  // it fits, then global memory.
  const std::uint32_t budget = value_budget(p.block(), backward);
  std::uint32_t data_regs = 0;
  std::uint32_t acc_regs = 0;
  if (backward) {
    const std::uint32_t room = budget > 2 * p.vec ? budget - 2 * p.vec : 0;
    acc_regs = std::min(p.chunks, room / (nacc * p.vec));
    data_regs = std::min(
        p.chunks, std::max(1u, (budget - std::min(budget, acc_regs * nacc * p.vec)) / (2 * p.vec)));
  } else {
    data_regs = std::min(p.chunks, std::max(1u, budget / p.vec));
  }
  const std::uint32_t tensors = backward ? 2 : 1;
  const std::uint32_t chunk_bytes = tpr * p.vec * s * p.rows_per_cta * tensors;
  std::uint32_t shared_left = shared_budget(spec.arch);
  p.data.assign(p.chunks, Place::Registers);
  for (std::uint32_t j = 0; j + data_regs < p.chunks; ++j) {
    if (chunk_bytes <= shared_left) {
      p.data[j] = Place::Shared;
      shared_left -= chunk_bytes;
    } else {
      p.data[j] = Place::Global;
    }
  }
  if (backward) {
    // Several row slots a CTA share one partial row (merged at the end): registers only.
    if (p.rows_per_cta > 1) acc_regs = p.chunks;
    p.accum.assign(p.chunks, Place::Registers);
    for (std::uint32_t j = acc_regs; j < p.chunks; ++j) p.accum[j] = Place::Global;

    // Persistent grid: as many CTAs as fit on an SM by registers and shared memory...
    const std::uint32_t values = data_regs * 2 * p.vec + acc_regs * nacc * p.vec;
    const std::uint32_t regs = round_up(values + 32, 8);
    const std::uint32_t smem =
        std::max(p.staging_bytes(static_cast<int>(s), 2),
                 p.rows_per_cta > 1 ? p.rows_per_cta * round_up(p.width, 4) * 4 : 0u);
    std::uint32_t fit = std::min(2048 / p.block(), 65536 / (p.block() * regs));
    if (smem > 0) fit = std::min(fit, (shared_budget(spec.arch) + 4096) / (smem + 1024));
    p.ctas_per_sm = kn.ctas_per_sm.value_or(std::clamp<std::uint32_t>(fit, 1, 16));
    p.sm_count = kn.sm_count.value_or(132);
    // ...but each walking enough rows that the f32 partials (written, then read by the reduce) stay
    // within about a quarter of the kernel's own traffic (x, dy read, dx written).
    const std::uint32_t rows_per_partial = ceil_div(32 * nacc, 3 * s);
    p.min_row_groups_per_cta = ceil_div(rows_per_partial, p.rows_per_cta);
  }
  return p;
}

}  // namespace ptxdsl::kernels::detail
