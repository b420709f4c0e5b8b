#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ptxdsl/dsl/device_model.hpp"
#include "ptxdsl/kernels/norm.hpp"

// Measured tuning tables: for one GPU product, per (kernel, dtype, weight dtype, width) the knobs
// that `ptxdsl tune` timed fastest at that width, written over the heuristic's own choices. The
// planner takes the entry whose width is nearest (by ratio, within a factor √2: the row's bucket)
// among those whose knobs give a valid plan at the width asked for; without one, or for a spec that
// sets knobs itself, the heuristic decides alone. Tables live in kernels/tuning/ as CSV and are
// compiled in.
namespace ptxdsl::kernels {

struct TuningEntry {
  std::string device;  // DeviceModel::product, the driver's name ("NVIDIA H200")
  NormKind kind = NormKind::RmsNormFwd;
  DType dtype = DType::F16;
  DType weight_dtype = DType::F16;
  std::uint32_t width = 0;
  std::uint32_t batch = 0;  // the batch it was timed at
  NormKnobs knobs;          // unset: the heuristic's; none set where the heuristic won
  double us = 0;            // the winner's median (µs), and the heuristic's in the same run
  double heuristic_us = 0;
};

class TuningTable {
 public:
  // CSV with a header line: device,kernel,dtype,weight_dtype,width,batch,us,heuristic_us,knobs;
  // knobs as "name=value" pairs separated by spaces (empty: the heuristic's). Throws ptxdsl::Error
  // naming `source`, the line and what is wrong with it.
  static TuningTable parse_csv(std::string_view text, std::string_view source);
  std::string to_csv() const;

  // The entries for this spec's device, kernel and dtypes within √2 of its width, nearest first
  // (the table's data alone: nothing is planned).
  std::vector<const TuningEntry*> candidates(const NormSpec& spec) const;
  // Of the candidates, the nearest whose knobs plan validly at spec.width (planning each in turn,
  // as resolve() does); nullptr where there is none.
  const TuningEntry* find(const NormSpec& spec) const;

  std::vector<TuningEntry> entries;
};

// The tables in kernels/tuning/, one table for all devices.
const TuningTable& builtin_tuning();

// What resolve() takes from the table, for the tests and `tune`: the spec with its tuning entry's
// knobs where the table applies: spec.tuning, the spec sets no
// knob but `deterministic` 1 (the default) and `vector_elems` at the dtype's widest (what the
// runtime sets for aligned calls; narrower vectors were not timed), and the device has an entry
// for the kernel and dtypes. The small-batch variants (spec_for_batch) set a knob, so the
// heuristic plans them.
NormSpec with_tuning(const NormSpec& spec, const TuningTable& table = builtin_tuning());
// The entry with_tuning takes its knobs from; nullptr where it takes none.
const TuningEntry* applied_tuning(const NormSpec& spec,
                                  const TuningTable& table = builtin_tuning());

// The alternatives `ptxdsl tune` times against a plan (`chosen`: its knobs, Plan::knobs()), each as
// knobs over the heuristic: every knob's move in the knob table (KnobMove), for the kernels its
// row names, and the moves that set knobs together (search.cpp). Those the device or the width do
// not allow fail to build, and tune leaves them out.
std::vector<NormKnobs> tune_candidates(const NormSpec& spec, const NormKnobs& chosen);

// "name=value ..." of every knob set (the table's form), and back (throws ptxdsl::Error).
std::string format_knobs(const NormKnobs& knobs);
NormKnobs parse_knobs(std::string_view text);

}  // namespace ptxdsl::kernels
