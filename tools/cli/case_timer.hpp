#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "l2_flush.hpp"
#include "norm_case.hpp"
#include "ptxdsl/runtime/context.hpp"
#include "ptxdsl/runtime/memory.hpp"
#include "ptxdsl/runtime/stream.hpp"

// BENCHMARKS.md's timing method, shared by `bench` and `tune`: CUDA events around the host API
// call, a 256 MB buffer written before every repetition (the L2 flush), a warm-up by count and by
// time, the median of the repetitions; every case checked against float64 before it is timed.
namespace ptxdsl::cli {

inline constexpr std::uint64_t kFlushBytes = 256ull << 20;
inline constexpr std::uint64_t kCopyBytes = 1ull << 30;  // the copy-bandwidth floor's buffer

// How each case is timed (the command line's --reps, --warmup, --warmup-ms, --flush, --stream).
struct Timing {
  int reps = 100;
  int warmup = 10;     // calls before timing
  int warmup_ms = 25;  // then flushed calls, as timed, for at least this long
  FlushMethod flush = FlushMethod::Kernel;
  // The legacy default stream, on which the peers' harness times torch (its current stream), or
  // a stream of the timer's own.
  bool default_stream = true;
};

double median(std::vector<double> v);

class CaseTimer {
 public:
  CaseTimer(int device, const Timing& timing);
  const runtime::Context& ctx() const { return ctx_; }

  struct Times {
    double median, min, max;  // µs
  };
  // `call` warmed up, then timed by events reps times, the L2 flushed before each.
  Times time_us(const std::function<void()>& call);

  // What one case gave: checked first (outputs poisoned, then against float64), then timed.
  struct Checked {
    bool pass = false;
    std::string error;  // why it did not pass
    double max_abs = 0;
    double worst_ratio = 0;  // the accuracy rule's largest error / bound (≤ 1 passes)
    Times times{};
  };
  Checked run_case(GpuNorm& norm, const NormData& data, kernels::NormKind kind);
  // The same call timed again, unchecked (a case run_case has checked).
  Times time_case(GpuNorm& norm, kernels::NormKind kind);

  // 1 GiB device to device through the driver's copy; bytes read plus written over the median.
  double copy_gbps();
  // A device-to-device copy of `bytes` read plus written, timed as the cases are; the buffers stay
  // for the next case.
  double same_size_copy_us(std::uint64_t bytes);
  // An empty kernel's launch-to-finish time, timed as the cases are.
  double empty_kernel_us();

 private:
  runtime::Context ctx_;
  runtime::Stream stream_;
  runtime::StreamRef timing_stream_;  // stream_, or the legacy default stream
  L2Flush flush_;
  std::vector<runtime::Event> starts_, stops_;
  runtime::DeviceBuffer<std::uint32_t> copy_src_, copy_dst_;  // same_size_copy_us
  int reps_, warmup_;
  std::chrono::milliseconds warmup_time_;
};

// GB/s of `bytes` moved in `us` microseconds.
double gbps(std::uint64_t bytes, double us);

}  // namespace ptxdsl::cli
