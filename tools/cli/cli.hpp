#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ptxdsl/cli/app.hpp"
#include "ptxdsl/kernels/norm.hpp"
#include "ptxdsl/runtime/norms.hpp"

// The norms' side of `ptxdsl`: the options that name one norm kernel, and the commands. The
// machinery every tool shares (exit statuses, UsageError, parse_uint, Command) is
// ptxdsl/cli/app.hpp.
namespace ptxdsl::cli {

// The options that say which kernel to build: KERNEL --width --dtype [--weight-dtype] [--arch]
// [--ptx-version] and the tuning knobs. Values are kept as text and parsed here, so that every
// bad value gets a message naming it and what is allowed.
struct SpecOptions {
  std::string kernel;
  std::string width;
  std::string dtype;
  std::string weight_dtype;
  std::string arch;  // empty: the device's
  std::string ptx_version;
  // The variant (kernels::Affine, Residual, Outputs by name; empty: the default).
  std::string affine;
  std::string residual;
  std::string outputs;
  // The model's numerics (NormSpec::weight_offset as text, Casting by name; empty: the default).
  std::string weight_offset;
  std::string casting;
  // The forward's quantized output and its scales (kernels::Quant, QuantScale by name; empty:
  // none, per-token).
  std::string quant;
  std::string quant_scale;
  std::string quant_scale_layout;
  // Two-level rows (NormSpec::row_groups, group_stride as text; empty: one level).
  std::string row_groups;
  std::string group_stride;
  // A device preset to plan for (empty: h200); `run` on a GPU takes its ordinal here instead.
  std::string device;
  // The knobs' text, one per entry of kernels::knob_table(), in its order (empty: not given).
  std::vector<std::string> knobs = std::vector<std::string>(kernels::kKnobCount);

  // KERNEL is the first positional argument; it, --width and --dtype are required if `required`.
  // --device is registered where `device_option` (bench has an ordinal of its own).
  void add_to(CLI::App& app, bool required = true, bool device_option = true);
  void add_knobs_to(CLI::App& app);
  bool any_knob() const;
  // KERNEL, --width and --dtype, where add_to did not make CLI11 require them; a UsageError
  // naming the first that is missing.
  void require_named() const;
  // Parses and checks the knobs apply to the kernel; throws UsageError. Plans nothing. For the
  // --device preset (an ordinal there leaves the default preset: a GPU run plans for the GPU).
  kernels::NormSpec parsed() const;
  // parsed(), validated (a plan made and dropped); throws UsageError.
  kernels::NormSpec spec() const;
  // parsed()'s plan, and both batch classes' (the spec as given and its small-batch variant);
  // throw UsageError.
  kernels::Plan plan() const;
  kernels::BatchPlans batch_plans() const;
  // --device as a preset name (empty: the default); an ordinal is refused, naming the presets.
  const DeviceModel& device_preset() const;
  // --device as a GPU ordinal (empty: 0); a preset name is refused.
  int gpu_ordinal() const;
  // What a host API object takes: the knobs, and the arch and PTX version where they were given.
  runtime::NormOptions norm_options(const kernels::NormSpec& spec) const;
};

// Norm spec from already-parsed pieces (the bench suite's cases); the weights take the input's
// dtype.
kernels::NormSpec make_spec(kernels::NormKind kind, kernels::DType dtype, std::uint32_t width);

Registered add_list(CLI::App& app);
Registered add_emit(CLI::App& app);
Registered add_check(CLI::App& app);
Registered add_run(CLI::App& app);
Registered add_bench(CLI::App& app);
Registered add_info(CLI::App& app);
Registered add_tune(CLI::App& app);

}  // namespace ptxdsl::cli
