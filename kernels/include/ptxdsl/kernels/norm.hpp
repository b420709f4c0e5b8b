#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ptxdsl/dsl/contract.hpp"
#include "ptxdsl/dsl/module.hpp"
#include "ptxdsl/kernels/params.hpp"
#include "ptxdsl/kernels/plan.hpp"
#include "ptxdsl/kernels/spec.hpp"

// The norm kernel family: what to build (NormSpec, spec.hpp), how (Plan, plan.hpp), what comes out
// (BuiltNorm: PTX text plus the launch plan a host program follows).
namespace ptxdsl::kernels {

// How many CTAs a step launches for a batch.
struct GridRule {
  enum class Kind { RowsPerCta, Persistent, Columns };
  Kind kind = Kind::RowsPerCta;
  std::uint32_t rows_per_cta = 1;     // RowsPerCta, Persistent
  std::uint32_t max_ctas = 0;         // Persistent: at most this many CTAs
  std::uint32_t columns_per_cta = 0;  // Columns: ceil(width / columns_per_cta) CTAs
  // Persistent: each CTA walks at least this many row groups when the batch allows, which keeps
  // the partial rows (one per CTA) a small share of the traffic:
  // min(max_ctas, max(min_ctas, ceil(ceil(batch / rows_per_cta) / min_row_groups))).
  std::uint32_t min_row_groups = 1;
  // Persistent: at least this many CTAs (up to max_ctas) whatever the batch, for work beyond the
  // rows (the one-launch backward's tiles of columns); CTAs past the row groups take no rows.
  std::uint32_t min_ctas = 0;
  // The CTAs of the thread-block cluster each row group is split over (the contract's
  // .reqnctapercluster). RowsPerCta: ceil(batch / rows_per_cta) × cluster_ctas CTAs; Persistent:
  // as many clusters as the rule gives CTAs without them (max_ctas / cluster_ctas at most), each
  // cluster_ctas CTAs, one partial row a cluster.
  std::uint32_t cluster_ctas = 1;
  // Persistent, deterministic portable: min(Q / rows_per_cta, row groups) walkers, Q from the
  // batch alone, whatever max_ctas and min_row_groups say.
  PortablePartials portable;
  // Throws ptxdsl::Error when the grid would pass 2^31 − 1 CTAs.
  std::uint32_t grid(std::uint32_t batch, std::uint32_t width) const;
  std::string describe() const;  // "ceil(batch / 4)", ...
};

// One kernel launch of a norm, in the order the host runs them.
struct LaunchStep {
  KernelContract contract;
  GridRule grid;
  std::vector<NormArg> args;  // contract.params[i] is args[i]: a host binds by index
};

// What `build` produces. Each step's parameters are NormArgs (params.hpp), listed in the contract's
// order by LaunchStep::args; a host binds them by index (a foreign loader by their PTX names).
struct BuiltNorm {
  NormSpec spec;
  Plan plan;  // what it was built from
  std::string ptx;
  std::vector<LaunchStep> steps;
  // The IR the PTX was printed from (finalized): `module->find(steps[i].contract.entry)` is what
  // the CPU executor runs.
  std::shared_ptr<const Module> module;
  // plan.knobs(): the plan as knobs, every one that applies to the kernel (the spec's own where it
  // set them).
  NormKnobs chosen;
  // Where the plan's knobs came from: "" for the heuristic alone, else the tuning table's entry
  // ("NVIDIA H200 ln_fwd f16/f16 4096, timed at batch 4096").
  std::string tuned_by;
  // Backward: f32 elements from one partial row to the next (the width rounded up to 4); 0 for
  // the one-launch backward, which has no partial rows.
  std::uint32_t partial_pitch = 0;
  // Backward whose CTAs take rows from a counter (row_order tickets): its kernel has a
  // `row_counter` parameter, the first kRowCounterBytes of the workspace, which must be zero before
  // its first launch; every launch leaves them zero again (at every batch: they do not move).
  bool ticketed_rows = false;
  static constexpr std::uint64_t kRowCounterBytes = 16;
  // Where the partial rows start after the counter: on a 128-byte line, as they do without it
  // (16 bytes in, each row's stores and the column reduce's loads would straddle sectors).
  static constexpr std::uint64_t kRowCounterSpan = 256;
  // Scratch the backward needs for `batch` rows (the row counter, f32 partial dw/db rows); 0 for
  // the forward. Layout: the row counter at byte 0 (ticketed_rows), partial_dw at
  // partial_dw_offset(), partial_db (layer norm) at partial_db_offset(batch).
  std::uint64_t workspace_bytes(std::uint32_t batch) const;
  std::uint64_t partial_dw_offset() const;
  // Backward: rows of partials used (a walker's, or under deterministic portable a row slot's).
  std::uint32_t partial_rows(std::uint32_t batch) const;
  std::uint64_t partial_db_offset(std::uint32_t batch) const;
};

// The kernels of a plan (resolve(), plan.hpp): the one way from a spec to PTX.
BuiltNorm build(const Plan& plan);
// build(resolve(spec)).
BuiltNorm build_norm(const NormSpec& spec);

}  // namespace ptxdsl::kernels
