#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptxdsl/kernels/norm.hpp"

// Shape heuristics of the norm family, in one place: how threads cover a row, how many rows a CTA
// takes, where each thread's slice of the row lives, and how big the backward's persistent grid is.
// The rules themselves are tables, in rules.cpp.
namespace ptxdsl::kernels::detail {

// The plan's types live in ptxdsl/kernels/plan.hpp; the builders name them from here.
using kernels::Grid;
using kernels::Lookahead;
using kernels::Place;
using kernels::Plan;
using kernels::SharedLayout;
using kernels::Staging;
using kernels::WeightGrads;

// The CTAs of a cluster that split each row (the cluster_ctas knob, else by the row's bytes and
// the device's clusters); 1 for one CTA a row.
std::uint32_t cluster_ctas_for(const NormSpec& spec);

// A row split over `ctas` CTAs of a cluster: each takes `width` columns, whole vectors of `vec` (so
// every slice starts as aligned as the row), but the last, which takes what is left, `last_width`
// (≤ width; the same where the row divides evenly).
struct ClusterSlices {
  std::uint32_t ctas = 1;
  std::uint32_t width = 0;
  std::uint32_t last_width = 0;
  std::uint32_t vec = 1;
  std::uint32_t row_width() const { return (ctas - 1) * width + last_width; }
};
// The slices of a `width`-wide row over `ctas` CTAs in vectors of `vec` elements, or of the widest
// narrower vectors that leave the last CTA a column; nullopt where none do.
std::optional<ClusterSlices> cluster_slices(std::uint32_t width, std::uint32_t ctas,
                                            std::uint32_t vec);
// cluster_slices of the spec's row in its vectors (the knob's, else 16 bytes); throws
// ptxdsl::Error naming the cluster and the width where the last CTA would get no column.
ClusterSlices split_row(const NormSpec& spec, std::uint32_t ctas);

// Why a row split over `cluster_ctas` CTAs cannot take the spec's knobs (a strategy its slices do
// not have), as an error message; "" when it can. The planner then keeps one CTA a row, and
// validate refuses the cluster_ctas knob with them.
std::string cluster_knob_conflict(const NormSpec& spec, std::uint32_t cluster_ctas);

// A backward with dw (and db) whose knobs ask for deterministic portable.
bool portable_sums(const NormSpec& spec);

// The smallest alignment-free vector: 16 bytes of the dtype.
std::uint32_t default_vector_elems(DType d);
// The spec's vector: its vector_elems knob, else default_vector_elems.
inline std::uint32_t vector_elems_of(const NormSpec& spec) {
  return spec.knobs.vector_elems.value_or(default_vector_elems(spec.dtype));
}
// Shared memory kept back from the dynamic budget for the kernels' static reduction scratch.
inline constexpr std::uint32_t kStaticScratchBytes = 4096;
// Dynamic shared memory one CTA may use on the device (opt-in limit minus the static scratch).
std::uint32_t shared_budget(const DeviceModel& d);

// The heuristic's rules for a spec, keeping every knob it sets (a tuning table's row comes in as
// knobs): resolve() calls it, and checks what it gives. It splits the row over a cluster where
// cluster_ctas_for says so, and plans each slice by plan_rules.
Plan plan_heuristic(const NormSpec& spec);
// The rule tables (rules.cpp) for one CTA a row, or for each CTA's slice of a row split by
// `slices`: the spec's knobs pin their fields, the tables decide the rest.
Plan plan_rules(const NormSpec& spec, std::optional<ClusterSlices> slices);

// validate() in two halves, for a planner that checks a plan it then keeps: the spec and its knobs
// before planning, then the plan made from them (block, shared memory, the device's fit).
void check_spec(const NormSpec& spec);
void check_plan(const NormSpec& spec, const Plan& p);

// The backward's partial sums: dw and db (layer norm), or dw. Layer norm's variants without db (or
// dw) plan as if they had both: its dx keeps more values than RMS norm's, and those plans fit the
// registers.
std::uint32_t accumulators(const NormSpec& spec);
// CTAs of `block` threads at `registers` a thread that an SM holds by threads and registers.
std::uint32_t ctas_by_registers(const DeviceModel& d, std::uint32_t block, std::uint32_t registers);
// CTAs with `smem` bytes of dynamic shared memory that an SM holds by shared memory.
std::uint32_t ctas_by_shared(const DeviceModel& d, std::uint32_t smem);

// The one-launch backward's column pass: rows a warp loads at once.
inline constexpr std::uint32_t kColumnRowsInFlight = 8;
// Its wider loads: bytes a lane loads of a row where 4 leave rounds to spare (size_column_pass).
inline constexpr std::uint32_t kColumnLoadBytes = 8;

}  // namespace ptxdsl::kernels::detail
