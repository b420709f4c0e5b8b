#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ptxdsl/dsl/executor.hpp"
#include "ptxdsl/kernels/norm.hpp"

// Runs a built norm on the CPU executor: every launch step in order, parameters bound by name, as a
// host program runs it on a GPU. Shared by the executor tests, the GPU comparison test and
// `ptxdsl run --cpu`.
namespace ptxdsl::kernels {

struct CpuNormRun {
  std::uint64_t launches = 0;
  std::uint64_t lane_instructions = 0;
  std::uint64_t warp_instructions = 0;
  double seconds = 0;
};

// `buffers` maps pointer parameter names (x, w, y, mean, ...) to allocations on `dev`; the
// backward's workspace (partial_dw/partial_db) is allocated here when `buffers` lacks it.
CpuNormRun run_norm_on_cpu(const BuiltNorm& built, CpuDevice& dev,
                           std::map<std::string, ExecutorAddress> buffers, std::uint32_t batch,
                           std::uint32_t stride, float eps, const ExecOptions& options = {});

}  // namespace ptxdsl::kernels
