// resolve(): a spec's plan, made once. The tuning table's row for the device first, then the
// heuristic's rules, then one check.
#include "resolve.hpp"

#include <fmt/format.h>

#include <atomic>

#include "heuristics.hpp"
#include "ptxdsl/dsl/error.hpp"

namespace ptxdsl::kernels {
namespace detail {
namespace {

std::atomic<std::uint64_t> g_plans{0};

// Knobs that leave the table's plans as they were timed: determinism (the table holds none that
// depends on it), and the widest vector, which the runtime sets for aligned calls. Narrower
// vectors (misaligned calls) were not timed: the heuristic plans them.
bool sets_shape(const NormSpec& spec) {
  bool shape = false;
  for_each_knob(spec.knobs, [&](const KnobInfo& info, const auto& v) {
    if (v && info.name != "deterministic" && info.name != "vector_elems") shape = true;
  });
  return shape || vector_elems_of(spec) != default_vector_elems(spec.dtype);
}

std::string describe(const TuningEntry& e) {
  return fmt::format("{} {} {}/{} {}, timed at batch {}", e.device, kind_name(e.kind),
                     dtype_name(e.dtype), dtype_name(e.weight_dtype), e.width, e.batch);
}

}  // namespace

bool takes_tuning(const NormSpec& spec) {
  // Deterministic portable's backward plans its grid by the batch: the table's timings are not its.
  return spec.tuning && !sets_shape(spec) && spec.knobs.deterministic != false &&
         !portable_sums(spec);
}

NormSpec with_entry(const NormSpec& spec, const TuningEntry& e) {
  NormSpec tuned = spec;
  tuned.knobs = e.knobs;
  tuned.knobs.deterministic = spec.knobs.deterministic;
  tuned.knobs.vector_elems = spec.knobs.vector_elems;
  return tuned;
}

std::optional<FittingEntry> fitting_entry(const NormSpec& spec, const TuningTable& table) {
  for (const TuningEntry* e : table.candidates(spec)) {
    if (e->knobs == NormKnobs{}) return FittingEntry{e, std::nullopt};  // the heuristic's plan
    try {
      const NormSpec tuned = with_entry(spec, *e);
      check_spec(tuned);
      Plan plan = plan_heuristic(tuned);
      check_plan(tuned, plan);
      return FittingEntry{e, std::move(plan)};
    } catch (const Error&) {
      // Its knobs do not fit this width: the next nearest.
    }
  }
  return std::nullopt;
}

}  // namespace detail

Plan resolve(const NormSpec& spec, const TuningTable& table) {
  detail::g_plans.fetch_add(1, std::memory_order_relaxed);
  detail::check_spec(spec);
  std::optional<detail::FittingEntry> tuned;
  if (detail::takes_tuning(spec)) tuned = detail::fitting_entry(spec, table);
  // An entry that does not name cluster_ctas was measured for one CTA a row: a row the heuristic
  // splits over a cluster takes none of its knobs.
  const bool applies = tuned && tuned->plan &&
                       (tuned->entry->knobs.cluster_ctas || detail::cluster_ctas_for(spec) == 1);
  Plan plan = applies ? std::move(*tuned->plan) : detail::plan_heuristic(spec);
  detail::check_plan(spec, plan);
  plan.spec = spec;
  plan.tuned_by = applies ? detail::describe(*tuned->entry) : "";
  return plan;
}

Plan resolve(const NormSpec& spec) {
  return resolve(spec, builtin_tuning());
}

std::uint64_t plans_resolved() {
  return detail::g_plans.load(std::memory_order_relaxed);
}

}  // namespace ptxdsl::kernels
