#pragma once

#include <string>

#include "ptxdsl/tool/run.hpp"

namespace ptxdsl::cli {

// One launch of a built definition on GPU `ordinal`, its buffers uploaded from `run` and its
// outputs downloaded after the launch; `where` receives the device's description.
tool::Outputs run_on_gpu(const tool::BuiltKernel& built, const tool::PreparedRun& run, int ordinal,
                         std::string& where);

// How `bench` times: `warmup` launches, then launches for `warmup_ms`, then `reps` launches each
// between two CUDA events with the L2 flushed before it (a 256 MB fill), as the norms' benches
// and tools/bench/compare_peers.py's Timer do.
struct BenchOptions {
  int warmup = 10;
  int warmup_ms = 25;
  int reps = 100;
};
struct BenchTimes {
  double median_us = 0;
  double min_us = 0;
  int reps = 0;
};
BenchTimes bench_on_gpu(const tool::BuiltKernel& built, const tool::PreparedRun& run, int ordinal,
                        const BenchOptions& options, std::string& where);

}  // namespace ptxdsl::cli
