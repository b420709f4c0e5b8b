#include "ptxdsl/kernels/cpu_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace ptxdsl::kernels {

CpuNormRun run_norm_on_cpu(const BuiltNorm& built, CpuDevice& dev,
                           std::map<std::string, ExecutorAddress> buffers, std::uint32_t batch,
                           std::uint32_t stride, float eps, const ExecOptions& options) {
  if (built.module == nullptr) throw Error("run_norm_on_cpu: the built norm carries no module");
  const std::uint32_t width = built.spec.width;
  const std::uint64_t workspace = built.workspace_bytes(batch);
  if (workspace > 0 && buffers.count("partial_dw") == 0) {
    const ExecutorAddress base = dev.alloc(std::max<std::uint64_t>(workspace, 4), "workspace");
    buffers["partial_dw"] = base + static_cast<std::int64_t>(built.partial_dw_offset());
    buffers["partial_db"] = base + static_cast<std::int64_t>(built.partial_db_offset(batch));
    if (built.ticketed_rows) {
      // Zero before the first launch, as the host must; the partial rows stay poisoned.
      const std::uint32_t zeros[4] = {};
      dev.write(base, std::span<const std::uint32_t>(zeros));
      buffers["row_counter"] = base;
    }
  }
  const std::map<std::string, Arg> scalars{{"batch", Arg(batch)},
                                           {"stride", Arg(stride)},
                                           {"eps", Arg(eps)},
                                           {"partial_rows", Arg(built.partial_rows(batch))}};
  CpuNormRun run;
  for (const LaunchStep& step : built.steps) {
    const Kernel& kernel = built.module->find(step.contract.entry);
    std::vector<Arg> args;
    for (const ParamSpec& p : kernel.params()) {
      const bool known = p.pointer ? buffers.count(p.name) == 1 : scalars.count(p.name) == 1;
      if (!known) {
        throw Error(fmt::format("run_norm_on_cpu: no {} for parameter '{}' of '{}'",
                                p.pointer ? "buffer" : "value", p.name, kernel.name()));
      }
      if (p.pointer) {
        args.emplace_back(buffers.at(p.name));
      } else {
        args.push_back(scalars.at(p.name));
      }
    }
    const LaunchConfig config{step.grid.grid(batch, width), step.contract.block_threads,
                              step.contract.dynamic_shared_bytes};
    const LaunchStats s = dev.launch(kernel, config, args, options);
    ++run.launches;
    run.lane_instructions += s.lane_instructions;
    run.warp_instructions += s.warp_instructions;
    run.seconds += s.seconds;
  }
  return run;
}

}  // namespace ptxdsl::kernels
