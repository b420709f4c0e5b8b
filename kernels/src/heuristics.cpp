#include "heuristics.hpp"

#include "element_io.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ptxdsl::kernels::detail {
namespace {

std::uint32_t ceil_div(std::uint32_t a, std::uint32_t b) {
  return (a + b - 1) / b;
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

bool portable_sums(const NormSpec& spec) {
  return is_backward(spec.kind) && has_weight_grads(spec) &&
         spec.knobs.deterministic == Determinism::Portable;
}

std::uint32_t shared_budget(const DeviceModel& d) {
  // The opt-in maximum per block, less room for the kernels' static reduction scratch.
  return d.shared_per_block_optin - kStaticScratchBytes;
}

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
  if (kn.rows_per_cta > 1u) {
    return fmt::format("cluster_ctas {} gives each CTA one row's slice: it takes rows_per_cta 1",
                       cluster_ctas);
  }
  if (!forward && (kn.single_launch == true || kn.row_order == RowOrder::Tickets)) {
    return fmt::format(
        "cluster_ctas {} sums dw and db by partial rows in a fixed row order: it takes no "
        "single_launch 1 or row_order tickets",
        cluster_ctas);
  }
  if (!forward && kn.partial_cluster > 1u) {
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
    Plan p = plan_rules(slice, slices);
    if (p.block() < 32) {  // a narrow slice: a warp at least (cluster_reduce reduces the block)
      slice.knobs.threads_per_row = 32;
      p = plan_rules(slice, slices);
    }
    return p;
  }
  return plan_rules(spec, std::nullopt);
}

}  // namespace ptxdsl::kernels::detail
