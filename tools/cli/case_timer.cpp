#include "case_timer.hpp"

#include <algorithm>

#include "empty_kernel.hpp"
#include "ptxdsl/runtime/launch.hpp"

namespace ptxdsl::cli {
namespace {

constexpr int kCopyReps = 20;
// The unit a same-size copy moves whole (same_size_copy_us says why).
constexpr std::uint64_t kCopyGranule = 4096;

}  // namespace

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double gbps(std::uint64_t bytes, double us) {
  return static_cast<double>(bytes) / (us * 1e3);
}

CaseTimer::CaseTimer(int device, const Timing& timing)
    : ctx_(device),
      stream_(ctx_),
      timing_stream_(timing.default_stream ? runtime::StreamRef(nullptr)
                                           : runtime::StreamRef(stream_)),
      flush_(ctx_, kFlushBytes, timing.flush),
      reps_(timing.reps),
      warmup_(timing.warmup),
      warmup_time_(std::chrono::milliseconds(timing.warmup_ms)) {
  for (int i = 0; i < reps_; ++i) {
    starts_.emplace_back(ctx_);
    stops_.emplace_back(ctx_);
  }
}

CaseTimer::Times CaseTimer::time_us(const std::function<void()>& call) {
  for (int i = 0; i < warmup_; ++i) call();
  // Then flushed calls, as the timed loop makes them, for warmup_time_: triton's do_bench warms
  // up for 25 ms, and the peers are timed the same way, so that neither side starts colder.
  const auto warm_start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - warm_start < warmup_time_) {
    for (std::uint32_t i = 0; i < 8; ++i) {
      flush_.run(timing_stream_, i);
      call();
    }
    ctx_.synchronize();
  }
  for (int i = 0; i < reps_; ++i) {
    flush_.run(timing_stream_, static_cast<std::uint32_t>(i));
    starts_[static_cast<std::size_t>(i)].record(timing_stream_);
    call();
    stops_[static_cast<std::size_t>(i)].record(timing_stream_);
  }
  ctx_.synchronize();
  std::vector<double> us;
  for (int i = 0; i < reps_; ++i) {
    const auto k = static_cast<std::size_t>(i);
    us.push_back(1e3 * stops_[k].elapsed_ms_since(starts_[k]));
  }
  return {median(us), *std::min_element(us.begin(), us.end()),
          *std::max_element(us.begin(), us.end())};
}

CaseTimer::Checked CaseTimer::run_case(GpuNorm& norm, const NormData& data,
                                       kernels::NormKind kind) {
  Checked r;
  norm.poison(kind);
  norm.call(kind, timing_stream_);
  ctx_.synchronize();
  const CaseCheck check = compare(kind, data, norm.download(kind));
  r.max_abs = check.max_abs();
  r.worst_ratio = check.worst_ratio();
  if (!check.pass()) {
    r.error = "wrong result: " + check.summary();
    return r;
  }
  r.times = time_case(norm, kind);
  r.pass = true;
  return r;
}

CaseTimer::Times CaseTimer::time_case(GpuNorm& norm, kernels::NormKind kind) {
  return time_us([&] { norm.call(kind, timing_stream_); });
}

double CaseTimer::copy_gbps() {
  runtime::DeviceBuffer<std::uint32_t> src(ctx_, kCopyBytes / 4), dst(ctx_, kCopyBytes / 4);
  src.fill(0x3f800000u);
  std::vector<double> ms;
  for (int i = -2; i < kCopyReps; ++i) {
    runtime::Event start(ctx_), stop(ctx_);
    start.record();
    runtime::copy_device(ctx_, dst.address(), src.address(), kCopyBytes);
    stop.record();
    stop.synchronize();
    if (i >= 0) ms.push_back(stop.elapsed_ms_since(start));
  }
  return gbps(2 * kCopyBytes, median(ms) * 1e3);
}

double CaseTimer::same_size_copy_us(std::uint64_t bytes) {
  // The driver's copy runs 4-11% slower when its size is not a multiple of 4 KiB (H100, driver
  // 580: 50,311,152 bytes in 41.3 µs, 50,307,072 in 38.0), so the half rounds down to 4 KiB: at
  // most 4095 bytes fewer, the copy at its own speed.
  const std::uint64_t granule = bytes / 2 >= kCopyGranule ? kCopyGranule : 16;
  const std::uint64_t half = bytes / 2 / granule * granule;
  if (copy_src_.size() < half / 4) {
    // The smaller pair freed before the larger one is allocated.
    copy_src_ = runtime::DeviceBuffer<std::uint32_t>();
    copy_dst_ = runtime::DeviceBuffer<std::uint32_t>();
    copy_src_ = runtime::DeviceBuffer<std::uint32_t>(ctx_, half / 4);
    copy_dst_ = runtime::DeviceBuffer<std::uint32_t>(ctx_, half / 4);
    copy_src_.fill(0x3f800000u);
  }
  return time_us([&] {
           runtime::copy_device_async(ctx_, copy_dst_.address(), copy_src_.address(), half,
                                      timing_stream_);
         })
      .median;
}

double CaseTimer::empty_kernel_us() {
  const runtime::Function empty = empty_kernel(ctx_);
  return time_us([&] { runtime::launch(empty, 1, kEmptyKernelThreads, 0, timing_stream_); }).median;
}

}  // namespace ptxdsl::cli
