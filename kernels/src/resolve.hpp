#pragma once

#include <optional>

#include "ptxdsl/kernels/plan.hpp"
#include "ptxdsl/kernels/tuning.hpp"

// The tuning table's part of resolve(): which entry a spec takes, with the plan its knobs give.
namespace ptxdsl::kernels::detail {

// Whether a spec takes a tuning table's knobs at all: spec.tuning, no knob set but `deterministic`
// 1 and `vector_elems` at the dtype's widest (what the runtime sets on aligned calls).
bool takes_tuning(const NormSpec& spec);
// The spec planned by an entry's knobs, keeping its own determinism and vector width.
NormSpec with_entry(const NormSpec& spec, const TuningEntry& e);

// The nearest entry of the spec's device, kernel and dtypes whose knobs plan validly at the spec's
// width (an entry without knobs, the heuristic's own, needs no plan), with that plan.
struct FittingEntry {
  const TuningEntry* entry = nullptr;
  std::optional<Plan> plan;  // unset for an entry without knobs
};
std::optional<FittingEntry> fitting_entry(const NormSpec& spec, const TuningTable& table);

}  // namespace ptxdsl::kernels::detail
