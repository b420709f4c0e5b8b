#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ptxdsl/dsl/contract.hpp"
#include "ptxdsl/dsl/executor.hpp"
#include "ptxdsl/dsl/module.hpp"
#include "ptxdsl/tool/definition.hpp"

// What `emit`, `check` and `run` of a kernel tool do with a definition, for a kernel author's own
// tests too: build it, make its seeded arguments, run it on the CPU executor, judge the outputs.
namespace ptxdsl::tool {

struct BuiltKernel {
  std::unique_ptr<Module> module;
  const Kernel* kernel = nullptr;  // the launched entry, finalized
  KernelContract contract;
  Dim3 grid;
  Dim3 block;  // the Launch's, or the kernel's own
  std::string ptx;
};
// Builds `def` for `params` and checks its Launch: an entry the module has, a block the kernel
// allows, a grid of at least one CTA. Throws ptxdsl::Error naming the kernel.
BuiltKernel build_kernel(const KernelDefinition& def, const Params& params);

// One run's arguments, checked against the contract (a buffer for each pointer parameter, a
// value for each scalar, nothing else) and rounded to the parameters' types.
struct PreparedRun {
  RunData data;                                         // the values as the kernel sees them
  std::map<std::string, std::vector<std::byte>> bytes;  // each buffer's initial contents
};
// The type a buffer's elements are run and compared in: the one its RunData declares, else the
// pointer parameter's.
ScalarType buffer_element(const RunData& data, const ParamSpec& p);
// Throws ptxdsl::Error when `def` has no inputs or they do not match the contract.
PreparedRun prepare_run(const KernelDefinition& def, const Params& params, const BuiltKernel& built,
                        std::uint64_t seed);

// What the run left in each output buffer, as doubles.
using Outputs = std::map<std::string, std::vector<double>>;
// One launch on the CPU executor; `stats`, when given, receives its counts (and trace).
Outputs run_on_cpu(const BuiltKernel& built, const PreparedRun& run, const ExecOptions& options,
                   LaunchStats* stats = nullptr);
// Bytes of a buffer of `count` elements of `element`, and back.
std::vector<std::byte> to_bytes(const std::vector<double>& values, ScalarType element,
                                std::string_view what);
std::vector<double> from_bytes(const std::vector<std::byte>& bytes, ScalarType element);

// One output against its reference: the worst element as a share of its bound (<= 1 passes).
struct OutputVerdict {
  std::string name;
  ScalarType element = ScalarType::F32;  // what the values were compared as
  Tolerance tolerance;
  std::size_t count = 0;
  std::size_t worst = 0;  // the element whose error is the most of its bound
  double max_abs = 0;     // the largest |got - want|
  double worst_ratio = 0;
  double worst_bound = 0;
  double worst_got = 0, worst_want = 0;
  std::size_t nonfinite = 0;  // NaN or infinite where the reference is finite
  bool pass() const { return nonfinite == 0 && worst_ratio <= 1; }
};
struct Verdict {
  std::vector<OutputVerdict> outputs;
  bool pass() const;
  // "max abs err 1.2e-07, worst y[17]: 2.5e-01 of its bound 4.8e-07 (got .., want ..)"; an
  // output of another type than f32 names it: "worst q[3] (e4m3): ..."
  std::string summary() const;
};
// Throws ptxdsl::Error when `def` has no reference, or it misses an output or has the wrong size.
Verdict judge(const KernelDefinition& def, const Params& params, const BuiltKernel& built,
              const PreparedRun& run, const Outputs& got);

}  // namespace ptxdsl::tool
