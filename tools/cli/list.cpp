// `ptxdsl list`: the kernels, the values each option takes, the knobs and their defaults.
#include <fmt/format.h>

#include "cli.hpp"

namespace ptxdsl::cli {
namespace {

struct KernelLine {
  const char* name;
  const char* what;
  const char* reads;
  const char* writes;
};

constexpr KernelLine kKernels[] = {
    {"ln_fwd", "layer norm forward, y = (x - mean) * rstd * w + b", "x, w, b", "y, mean, rstd"},
    {"ln_bwd", "layer norm backward", "x, dy, w, mean, rstd", "dx, dw, db"},
    {"rms_fwd", "RMS norm forward, y = x * rstd * w", "x, w", "y, rstd"},
    {"rms_bwd", "RMS norm backward", "x, dy, w, rstd", "dx, dw"},
};

class ListCommand : public Command {
 public:
  int run() override {
    fmt::print("kernels\n");
    for (const KernelLine& k : kKernels) {
      fmt::print("  {:<8} {}; reads {}; writes {}\n", k.name, k.what, k.reads, k.writes);
    }
    fmt::print(
        "\n"
        "options                 values                                  default\n"
        "  --width N             1 to {:<33} (required)\n"
        "  --dtype T             f32, f16, bf16 (x, y, dy, dx)           (required)\n"
        "  --weight-dtype T      the input's dtype or f32 (w, b, dw, db) the input's dtype\n"
        "  --arch A              sm_80, sm_89, sm_90(a), sm_100(a)       the device's\n"
        "  --device D            a preset below (emit, check, run --cpu), h200\n"
        "                        or a GPU's ordinal (run)                0\n"
        "  --ptx-version V       7.0 to 9.0, at least the arch's least   8.1 (sm_80 7.8,\n"
        "                                                                sm_100 8.6)\n"
        "  --batch B (run/bench) 1 to 2147483647 rows                    (required)\n"
        "  --seed S (run)        0 to 2^64-1                             1\n"
        "\n"
        "knobs (unset: the planner decides: the device's tuning table, then the heuristic)\n",
        kernels::kMaxWidth);
    for (const kernels::KnobInfo& info : kernels::knob_table()) {
      const std::string_view scope = info.scope == kernels::KnobScope::Forwards    ? "forwards: "
                                     : info.scope == kernels::KnobScope::Backwards ? "backwards: "
                                     : info.scope == kernels::KnobScope::LayerNormForward
                                         ? "ln_fwd: "
                                         : "";
      const std::string flag = fmt::format("{} {}", info.flag(), info.values());
      // Long flags take a line of their own, so that the help column stays one column.
      if (flag.size() > 21) {
        fmt::print("  {}\n  {:<21} {}{}\n", flag, "", scope, info.help);
      } else {
        fmt::print("  {:<21} {}{}\n", flag, scope, info.help);
      }
    }
    fmt::print("\ndevices (--device; a GPU run plans for the GPU itself)\n");
    for (const DeviceModel& d : device_presets()) fmt::print("  {}\n", d.summary());
    fmt::print(
        "\n`ptxdsl emit KERNEL --width N --dtype T --json` shows what the heuristic chose.\n");
    return kExitOk;
  }
};

}  // namespace

Registered add_list(CLI::App& app) {
  auto* sub = app.add_subcommand("list", "the kernels, their options and knobs, and defaults");
  return {sub, std::make_unique<ListCommand>()};
}

}  // namespace ptxdsl::cli
