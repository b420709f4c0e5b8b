// A spec's two batch classes: the small-batch variant, the batch up to which it runs, and both
// plans, each resolved once.
#include <algorithm>

#include "heuristics.hpp"
#include "ptxdsl/dsl/error.hpp"
#include "ptxdsl/kernels/norm.hpp"

namespace ptxdsl::kernels {
namespace {

// Rounds of loads (kColumnRowsInFlight a warp, a round trip to L2 each) a CTA's column pass may
// take in the one-launch backward: always up to 2; up to 16 where two launches would leave a
// quarter of the SMs without a CTA (their re-reads then cost less than the idle SMs).
constexpr std::uint32_t kColumnRoundsAlways = 2;
constexpr std::uint32_t kColumnRoundsUnderfilled = 16;
// Persistent prefetching forwards run up to about this many rows a resident row slot.
constexpr std::uint32_t kPrefetchRowsPerSlot = 4;

// Whether the spec's own knob already fixes the variant, or the variant has no other.
bool one_class(const NormSpec& spec) {
  // Deterministic portable's backward keeps its partial rows at every batch.
  if (is_backward(spec.kind)) {
    return spec.knobs.single_launch || !has_weight_grads(spec) || detail::portable_sums(spec);
  }
  return spec.knobs.prefetch_rows.has_value();
}

// The forward: up to kPrefetchRowsPerSlot rows for each row slot the one-row-group-a-CTA plan
// keeps resident, where the prefetching plan has a row in registers to load ahead.
std::uint32_t prefetch_limit(const Plan& one_pass, const Plan& prefetching) {
  if (!prefetching.prefetch_fits) return 0;
  // Rows all staged: the cp.async prefetch is no faster than one CTA a row at any batch.
  if (one_pass.register_chunks() == 0) return 0;
  const DeviceModel& d = one_pass.spec.device;
  const std::uint32_t fit = std::max(
      1u, std::min(detail::ctas_by_registers(d, one_pass.block(), one_pass.max_registers),
                   detail::ctas_by_shared(d, one_pass.dynamic_shared_bytes(one_pass.spec))));
  return kPrefetchRowsPerSlot * one_pass.sm_count * fit * one_pass.rows_per_cta;
}

// The backward: the one launch up to kColumnRoundsAlways rounds of its column pass, and up to
// kColumnRoundsUnderfilled while two launches would leave a quarter of the SMs without a CTA.
std::uint32_t single_launch_limit(const Plan& two, const Plan& one) {
  // A round: each warp's loads cover kColumnRowsInFlight × column_row_lanes rows of a tile; a CTA
  // takes its tiles one after another.
  const std::uint32_t rows_a_round =
      one.block() / 32 * one.column_row_lanes * detail::kColumnRowsInFlight;
  const std::uint32_t ctas = one.sm_count * one.ctas_per_sm;
  const std::uint32_t tiles_a_cta = (one.column_tiles() + ctas - 1) / ctas;
  const auto rows_within = [&](std::uint32_t rounds) {
    return rounds / tiles_a_cta * rows_a_round;
  };
  const std::uint32_t underfilled =
      two.sm_count * 3 / 4 * two.rows_per_cta * two.min_row_groups_per_cta;
  return std::max(rows_within(kColumnRoundsAlways),
                  std::min(underfilled, rows_within(kColumnRoundsUnderfilled)));
}

}  // namespace

NormSpec small_batch_spec(NormSpec spec) {
  if (is_backward(spec.kind)) {
    spec.knobs.single_launch = true;
  } else {
    spec.knobs.prefetch_rows = 1;
  }
  return spec;
}

BatchPlans resolve_batches(const NormSpec& spec) {
  return resolve_batches(resolve(spec));
}

BatchPlans resolve_batches(Plan large) {
  const NormSpec spec = large.spec;
  BatchPlans plans{std::move(large), std::nullopt, 0};
  if (one_class(spec)) return plans;
  // The limits were measured against the heuristic's plan of the spec (a tuning table's entries
  // were timed at batches past them).
  NormSpec heuristic_spec = spec;
  heuristic_spec.tuning = false;
  const Plan heuristic = plans.large.tuned_by.empty() ? plans.large : resolve(heuristic_spec);
  if (heuristic.cluster_ctas > 1) return plans;
  try {
    plans.small = resolve(small_batch_spec(spec));
  } catch (const Error&) {
    return plans;  // the variant does not fit: every batch takes the spec as given
  }
  plans.small_batch_limit = is_backward(spec.kind) ? single_launch_limit(heuristic, *plans.small)
                                                   : prefetch_limit(heuristic, *plans.small);
  if (plans.small_batch_limit == 0) plans.small.reset();
  return plans;
}

std::uint32_t small_batch_limit(const NormSpec& spec) {
  return one_class(spec) ? 0 : resolve_batches(spec).small_batch_limit;
}

std::uint32_t forward_prefetch_batch_limit(const NormSpec& spec) {
  NormSpec s = spec;
  s.knobs.prefetch_rows.reset();
  return small_batch_limit(s);
}

std::uint32_t backward_single_launch_batch_limit(const NormSpec& spec) {
  NormSpec s = spec;
  s.knobs.single_launch.reset();
  return small_batch_limit(s);
}

NormSpec spec_for_batch(const NormSpec& spec, std::uint32_t batch) {
  return batch <= small_batch_limit(spec) ? small_batch_spec(spec) : spec;
}

}  // namespace ptxdsl::kernels
