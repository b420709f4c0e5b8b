// `ptxdsl bench`: BENCHMARKS.md's method. CUDA events around the host API call, a 256 MB buffer
// written before every repetition (L2 flush), median of the repetitions, the device-to-device copy
// bandwidth measured in the same run; checked against float64 before it is timed (a huge case on
// sampled rows, sampled_check.hpp).
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <limits>
#include <optional>

#include "case_timer.hpp"
#include "cli.hpp"
#include "empty_kernel.hpp"
#include "l2_flush.hpp"
#include "norm_case.hpp"
#include "ptxdsl/cli/device.hpp"
#include "ptxdsl/cli/json.hpp"
#include "ptxdsl/cli/output_file.hpp"
#include "ptxdsl/runtime/driver.hpp"
#include "ptxdsl/runtime/launch.hpp"
#include "ptxdsl/runtime/stream.hpp"
#include "sampled_check.hpp"

namespace ptxdsl::cli {
namespace {

using kernels::DType;
using kernels::NormKind;

// BENCHMARKS.md: cases moving ≤ 16 MB finish within 2 µs of max(a copy of their bytes, an empty
// kernel's launch-to-finish time).
constexpr std::uint64_t kSmallCaseBytes = 16'000'000;
constexpr double kSmallCaseSlackUs = 2.0;
// BENCHMARKS.md: cases moving ≥ 64 MB run at this share of the speed of a copy of their own bytes
// timed the same way (its µs over theirs), forward and backward.
constexpr std::uint64_t kLargeCaseBytes = 64'000'000;
constexpr double kForwardTargetRatio = 0.97;
constexpr double kBackwardTargetRatio = 0.92;

// BENCHMARKS.md's host targets: PTX generation of one norm kernel, and a host-API launch of a
// cached kernel over a bare cuLaunchKernel.
constexpr double kGenerationTargetMs = 2.0;
constexpr double kWideGenerationTargetMs = 10.0;  // beyond kWideGenerationColumns
constexpr std::uint32_t kWideGenerationColumns = 65536;
constexpr double kLaunchOverheadTargetUs = 1.0;
constexpr int kGenerationBuilds = 9;  // builds of each kernel; their median is reported
constexpr int kLaunchRounds = 30, kLaunchesARound = 200;

// What each run measures before the cases: the floors their targets are judged against.
struct Floors {
  double copy_gbps = 0;
  double empty_kernel_us = 0;
  double pct_of_copy(std::uint64_t bytes, double us) const {
    return 100.0 * gbps(bytes, us) / copy_gbps;
  }
  // The bound a case's median must meet where it moves ≤ 16 MB (`copy_us`: the same-size copy's
  // median); 0 for larger cases.
  double small_target_us(std::uint64_t bytes, double copy_us) const {
    if (bytes > kSmallCaseBytes) return 0;
    return std::max(copy_us, empty_kernel_us) + kSmallCaseSlackUs;
  }
};

// One shape of the suite; `bench` times its forward and its backward.
struct Shape {
  bool layer_norm;
  DType dtype;
  std::uint32_t batch, width;
  DType weight_dtype = dtype;
};

// BENCHMARKS.md, "The suite".
std::vector<Shape> standard_suite() {
  std::vector<Shape> s;
  for (std::uint32_t n : {1024u, 2048u, 4096u, 8192u, 16384u})
    s.push_back({true, DType::F16, 4096, n});
  s.push_back({true, DType::F16, 1151, 8192});
  s.push_back({true, DType::BF16, 16384, 8192});
  s.push_back({true, DType::F32, 4096, 8192});
  s.push_back({false, DType::F32, 2048, 8192});
  s.push_back({false, DType::F32, 256, 4096});
  s.push_back({false, DType::BF16, 4096, 4096});
  s.push_back({false, DType::BF16, 16384, 8192});
  s.push_back({false, DType::F16, 4096, 8192});
  s.push_back({false, DType::BF16, 4096, 16384});
  return s;
}

// BENCHMARKS.md, "Wide": QuACK's sweep, bf16 rows with f32 weights, both norms.
std::vector<Shape> wide_suite() {
  std::vector<Shape> s;
  for (bool layer_norm : {true, false}) {
    for (std::uint32_t n : {256u, 1024u, 4096u, 16384u, 32768u, 65536u}) {
      s.push_back({layer_norm, DType::BF16, 32768, n, DType::F32});
    }
    s.push_back({layer_norm, DType::BF16, 16384, 131072, DType::F32});
    s.push_back({layer_norm, DType::BF16, 8192, 262144, DType::F32});
  }
  return s;
}

struct CaseResult {
  kernels::NormSpec spec;
  std::uint32_t batch = 0;
  std::uint32_t stride = 0;  // elements from one row (group of rows) to the next (0: the span)
  std::uint64_t bytes = 0;
  bool pass = false;
  std::string error;    // a failure before or while timing
  std::string checked;  // checked_rows_text: "full" or "sampled 272 of 8192 rows"
  double max_abs = 0;
  double worst_ratio = 0;  // the accuracy rule's largest error / bound (≤ 1 passes)
  double us = 0, us_min = 0, us_max = 0;
  double gbps = 0, pct_copy = 0;
  double small_target_us = 0;  // Floors::small_target_us; 0 for cases moving more than 16 MB
  // A device-to-device copy of the case's bytes (half read, half written), timed as the case is:
  // it pays the same launch, first DRAM round trip and tail, so it shows how close to the copy
  // bandwidth anything that moves these bytes comes.
  double copy_us = 0, copy_pct_copy = 0;  // its median, and its bytes over it as % of copy
  // The same-size copy's µs over the case's: 1 is as fast as moving its bytes.
  double copy_ratio() const { return us > 0 ? copy_us / us : 0; }
  // Cases moving ≥ 64 MB: BENCHMARKS.md's copy_ratio for them; 0 below.
  double target_ratio() const {
    if (bytes < kLargeCaseBytes) return 0;
    return is_backward(spec.kind) ? kBackwardTargetRatio : kForwardTargetRatio;
  }
  std::string name() const {
    const std::string strided = stride == 0 ? "" : fmt::format(" (stride {})", stride);
    return fmt::format("{} {} {}x{}{}{}", kernels::kind_name(spec.kind),
                       kernels::dtype_name(spec.dtype), batch, spec.width, strided,
                       kernels::variant_suffix(spec));
  }
};

// The cases that move ≤ 16 MB against their target, after the table.
void print_small_targets(const std::vector<CaseResult>& results, const Floors& floors) {
  bool header = false;
  for (const CaseResult& r : results) {
    if (!r.pass || r.small_target_us == 0) continue;
    if (!header) {
      fmt::print(
          "cases moving ≤ 16 MB, within {:.0f} µs of max(a copy of their bytes, an empty "
          "kernel's {:.1f} µs):\n",
          kSmallCaseSlackUs, floors.empty_kernel_us);
      header = true;
    }
    fmt::print("  {:<26} {:>6.1f} µs, target ≤ {:.1f}: {}; a copy of its bytes {:.1f} µs\n",
               r.name(), r.us, r.small_target_us, r.us <= r.small_target_us ? "met" : "not met",
               r.copy_us);
  }
}

// The cases that move ≥ 64 MB against the speed of a copy of their own bytes.
void print_large_targets(const std::vector<CaseResult>& results) {
  bool header = false;
  for (const CaseResult& r : results) {
    if (!r.pass || r.target_ratio() == 0) continue;
    if (!header) {
      fmt::print(
          "cases moving ≥ 64 MB, forward ≥ {:.2f} and backward ≥ {:.2f} of a copy of their "
          "bytes (its µs over theirs):\n",
          kForwardTargetRatio, kBackwardTargetRatio);
      header = true;
    }
    fmt::print("  {:<26} {:.2f} ({:.1f} against {:.1f} µs), target ≥ {:.2f}: {}\n", r.name(),
               r.copy_ratio(), r.us, r.copy_us, r.target_ratio(),
               r.copy_ratio() >= r.target_ratio() ? "met" : "not met");
  }
}

// One kernel's PTX generation: the median of kGenerationBuilds builds.
struct GenerationTime {
  kernels::NormSpec spec;
  double ms = 0;
  double target_ms() const {
    return spec.width > kWideGenerationColumns ? kWideGenerationTargetMs : kGenerationTargetMs;
  }
  bool met() const { return ms <= target_ms(); }
  std::string name() const {
    return fmt::format("{} {} {}", kernels::kind_name(spec.kind), kernels::dtype_name(spec.dtype),
                       spec.width);
  }
};

// Host time per launch, medians of kLaunchRounds rounds of kLaunchesARound launches.
struct LaunchOverhead {
  std::string kernel;  // what the host API launched
  double api_us = 0;   // the host API's call
  double bare_us = 0;  // cuLaunchKernel of an empty kernel, as is
  double over_us() const { return api_us - bare_us; }
  bool met() const { return over_us() <= kLaunchOverheadTargetUs; }
};

struct HostResults {
  std::vector<GenerationTime> generation;
  std::optional<LaunchOverhead> launch;
  std::string launch_skipped;  // why there is no launch measurement
  const GenerationTime& slowest() const {
    return *std::max_element(generation.begin(), generation.end(),
                             [](const GenerationTime& a, const GenerationTime& b) {
                               return a.ms / a.target_ms() < b.ms / b.target_ms();
                             });
  }
};

std::vector<GenerationTime> measure_generation() {
  using Clock = std::chrono::steady_clock;
  std::vector<GenerationTime> out;
  for (NormKind kind : {NormKind::LayerNormFwd, NormKind::LayerNormBwd, NormKind::RmsNormFwd,
                        NormKind::RmsNormBwd}) {
    for (std::uint32_t width : {1024u, 4096u, 8192u, 16384u, 65536u, kernels::kMaxWidth}) {
      GenerationTime g;
      g.spec = make_spec(kind, DType::F16, width);
      std::vector<double> ms;
      for (int i = 0; i < kGenerationBuilds; ++i) {
        const auto start = Clock::now();
        const kernels::BuiltNorm built = kernels::build_norm(g.spec);
        ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
      }
      g.ms = median(ms);
      out.push_back(g);
    }
  }
  return out;
}

// The host API's forward of a one-row RMS norm, its kernel cached by the first call, against
// cuLaunchKernel of an empty kernel: what the API adds to the driver's own cost of a launch.
LaunchOverhead measure_launch_overhead(int device) {
  using Clock = std::chrono::steady_clock;
  const runtime::Context ctx(device);
  const runtime::Stream stream(ctx);
  const runtime::StreamRef on(stream);
  const kernels::NormSpec spec = make_spec(NormKind::RmsNormFwd, DType::F16, 4096);
  const NormData data = make_norm_data(spec, 1, 1);
  GpuNorm norm(ctx, data, runtime::NormOptions{});
  const runtime::Function empty = empty_kernel(ctx);
  norm.call(spec.kind, on);
  runtime::launch_raw(empty, 1, kEmptyKernelThreads, 0, on, nullptr);
  stream.synchronize();
  const auto per_launch_us = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::micro>(b - a).count() / kLaunchesARound;
  };
  std::vector<double> api, bare;
  for (int round = 0; round < kLaunchRounds; ++round) {
    const auto t0 = Clock::now();
    for (int i = 0; i < kLaunchesARound; ++i)
      runtime::launch_raw(empty, 1, kEmptyKernelThreads, 0, on, nullptr);
    const auto t1 = Clock::now();
    stream.synchronize();
    const auto t2 = Clock::now();
    for (int i = 0; i < kLaunchesARound; ++i) norm.call(spec.kind, on);
    const auto t3 = Clock::now();
    stream.synchronize();
    bare.push_back(per_launch_us(t0, t1));
    api.push_back(per_launch_us(t2, t3));
  }
  return {fmt::format("rms_fwd f16 1x{}", spec.width), median(api), median(bare)};
}

HostResults measure_host(int device) {
  HostResults r;
  r.generation = measure_generation();
  std::string why;
  if (!runtime::driver_available(&why)) {
    std::replace(why.begin(), why.end(), '\n', ' ');
    r.launch_skipped = why.empty() ? std::string("no CUDA driver found") : why;
  } else {
    r.launch = measure_launch_overhead(device);
  }
  return r;
}

void print_host(const HostResults& r) {
  const GenerationTime& worst = r.slowest();
  const auto failing = std::count_if(r.generation.begin(), r.generation.end(),
                                     [](const GenerationTime& g) { return !g.met(); });
  fmt::print(
      "host: PTX generation, median of {} builds of each of {} kernels: slowest {} in {:.3f} ms, "
      "target ≤ {:.0f} ms: {} ({} of {} over their target)\n",
      kGenerationBuilds, r.generation.size(), worst.name(), worst.ms, worst.target_ms(),
      failing == 0 ? "met" : "not met", failing, r.generation.size());
  if (r.launch) {
    const LaunchOverhead& l = *r.launch;
    fmt::print(
        "host: a host-API launch of a cached kernel ({}) {:.2f} µs of host time, a bare "
        "cuLaunchKernel {:.2f} µs: {:+.2f} µs, target ≤ {:.0f} µs over: {}\n",
        l.kernel, l.api_us, l.bare_us, l.over_us(), kLaunchOverheadTargetUs,
        l.met() ? "met" : "not met");
  } else {
    fmt::print("host: launch overhead skipped: {}\n", r.launch_skipped);
  }
}

void write_host_json(JsonWriter& j, const HostResults& r) {
  j.key("host").begin_object();
  j.key("ptx_generation").begin_object();
  j.field("builds_per_kernel", kGenerationBuilds);
  j.field("target_ms", kGenerationTargetMs);
  j.field("wide_target_ms", kWideGenerationTargetMs);
  j.field("wide_beyond_columns", kWideGenerationColumns);
  const GenerationTime& worst = r.slowest();
  j.field("slowest", worst.name());
  j.field("slowest_ms", worst.ms);
  j.field("met", std::all_of(r.generation.begin(), r.generation.end(),
                             [](const GenerationTime& g) { return g.met(); }));
  j.key("kernels").begin_array();
  for (const GenerationTime& g : r.generation) {
    j.begin_object(true);
    j.field("kernel", kernels::kind_name(g.spec.kind));
    j.field("dtype", kernels::dtype_name(g.spec.dtype));
    j.field("width", g.spec.width);
    j.field("ms", g.ms);
    j.field("target_ms", g.target_ms());
    j.field("met", g.met());
    j.end_object();
  }
  j.end_array();
  j.end_object();
  j.key("launch_overhead");
  if (r.launch) {
    const LaunchOverhead& l = *r.launch;
    j.begin_object();
    j.field("kernel", l.kernel);
    j.field("host_api_us", l.api_us);
    j.field("bare_cu_launch_kernel_us", l.bare_us);
    j.field("over_us", l.over_us());
    j.field("target_us", kLaunchOverheadTargetUs);
    j.field("met", l.met());
    j.field("rounds", kLaunchRounds);
    j.field("launches_a_round", kLaunchesARound);
    j.end_object();
  } else {
    j.null();
    j.field("launch_overhead_skipped", r.launch_skipped);
  }
  j.end_object();
}

std::string host_only_json(const HostResults& r) {
  JsonWriter j;
  j.begin_object();
  j.field("tool", "ptxdsl bench");
  write_host_json(j, r);
  j.end_object();
  return j.str();
}

std::string results_json(const runtime::DeviceInfo& info, int driver, const Floors& floors,
                         const Timing& timing, bool tuning_table, std::uint64_t seed,
                         const std::vector<CaseResult>& results,
                         const std::optional<HostResults>& host) {
  JsonWriter j;
  j.begin_object();
  j.field("tool", "ptxdsl bench");
  j.field("device", info.name);
  j.field("compute_capability", fmt::format("{}.{}", info.model.cc_major, info.model.cc_minor));
  j.field("sm_count", info.model.sm_count);
  j.field("driver", fmt::format("{}.{}", driver / 1000, driver % 1000 / 10));
  j.field("copy_gbps", floors.copy_gbps);
  j.field("empty_kernel_us", floors.empty_kernel_us);
  j.field("copy_bytes", 2 * kCopyBytes);
  j.field("flush_bytes", kFlushBytes);
  j.field("flush", flush_method_name(timing.flush));
  j.field("stream", timing.default_stream ? "default" : "own");
  j.field("plans", tuning_table ? "tuning table" : "heuristic");
  j.field("reps", timing.reps);
  j.field("warmup", timing.warmup);
  j.field("warmup_ms", timing.warmup_ms);
  j.field("seed", seed);
  j.field("eps", kEps);
  j.key("cases").begin_array();
  for (const CaseResult& r : results) {
    j.begin_object(true);
    j.field("kernel", kernels::kind_name(r.spec.kind));
    j.field("dtype", kernels::dtype_name(r.spec.dtype));
    j.field("weight_dtype", kernels::dtype_name(r.spec.weight_dtype));
    j.field("affine", kernels::affine_name(r.spec.affine));
    j.field("residual", kernels::residual_name(r.spec.residual));
    j.field("outputs", kernels::outputs_name(r.spec.outputs));
    j.field("batch", r.batch);
    j.field("width", r.spec.width);
    j.field("stride", r.stride == 0 ? kernels::row_span(r.spec) : r.stride);
    // The model options where they are not the defaults (the entry names' suffix spells them).
    if (r.spec.weight_offset != 0.0f) {
      j.field("weight_offset", static_cast<double>(r.spec.weight_offset));
    }
    if (r.spec.casting != kernels::Casting::None) {
      j.field("casting", kernels::casting_name(r.spec.casting));
    }
    if (r.spec.quant != kernels::Quant::None) j.field("quant", kernels::quant_name(r.spec.quant));
    if (r.spec.row_groups != 1) {
      j.field("row_groups", r.spec.row_groups);
      j.field("group_stride", r.spec.group_stride);
    }
    j.field("bytes", r.bytes);
    j.field("pass", r.pass);
    if (!r.checked.empty()) j.field("checked", r.checked);
    const auto timed = [&](std::string_view name, double v) {
      j.key(name);
      if (r.pass) {
        j.value(v);
      } else {
        j.null();
      }
    };
    timed("us", r.us);
    timed("us_min", r.us_min);
    timed("us_max", r.us_max);
    timed("gbps", r.gbps);
    timed("pct_copy", r.pct_copy);
    j.field("max_abs_err", r.max_abs);
    j.field("worst_error_over_bound", r.worst_ratio);
    j.key("small_target_us");
    if (r.small_target_us > 0) {
      j.value(r.small_target_us);
    } else {
      j.null();
    }
    j.key("target_copy_ratio");
    if (r.target_ratio() > 0) {
      j.value(r.target_ratio());
    } else {
      j.null();
    }
    timed("copy_us", r.copy_us);
    timed("copy_pct_copy", r.copy_pct_copy);
    timed("copy_ratio", r.copy_ratio());
    if (!r.error.empty()) j.field("error", r.error);
    j.end_object();
  }
  j.end_array();
  if (host) write_host_json(j, *host);
  j.end_object();
  return j.str();
}

class BenchCommand : public Command {
 public:
  explicit BenchCommand(CLI::App& sub) {
    sub.add_option("--suite", suite_,
                   "standard or wide: every case of that suite of BENCHMARKS.md, forward and "
                   "backward");
    sub.add_option("--only", only_,
                   "with --suite: only its cases whose name contains TEXT (e.g. 'ln_bwd', "
                   "'x65536'), so a suite can be timed in parts");
    options_.add_to(sub, /*required=*/false, /*device_option=*/false);
    sub.add_option("--batch", batch_, "rows, 1 to 2147483647 (one case, without --suite)");
    sub.add_option("--stride", stride_,
                   "elements from one row to the next, the width to 2147483647 (one case; "
                   "default: the width)");
    sub.add_option("--json", json_, "also write the results as JSON to FILE");
    sub.add_flag("--host", host_,
                 "the host-side targets: PTX generation time, and with a driver a launch's host "
                 "cost over a bare cuLaunchKernel (alone, or after the suite or case)");
    sub.add_flag("--heuristic", heuristic_,
                 "plan by the heuristic alone, without the GPU's tuning table (to check a table "
                 "against it)");
    sub.add_option("--reps", reps_, "timed repetitions per case, 100 to 100000 (default 100)");
    sub.add_option("--warmup", warmup_, "untimed calls before timing, 0 to 1000 (default 10)");
    sub.add_option("--warmup-ms", warmup_ms_,
                   "then untimed flushed calls for this long, 0 to 10000 ms (default 25)");
    sub.add_option("--seed", seed_, "input seed (default 1)");
    sub.add_option("--device", device_, "GPU ordinal (default 0)");
    sub.add_option("--flush", flush_,
                   "how the L2 is flushed before each repetition: kernel (16-byte stores, as "
                   "torch's zero_; default) or memset (the driver's)");
    sub.add_option("--stream", stream_,
                   "default (the legacy default stream, torch's; default) or own (a stream of "
                   "its own)");
  }

  bool sized_by_options() const override { return true; }

  int run() override {
    const std::vector<CaseResult> planned = plan();
    Timing timing;
    timing.reps = static_cast<int>(parse_uint("--reps", reps_, 100, 100000));
    timing.warmup = static_cast<int>(parse_uint("--warmup", warmup_, 0, 1000));
    timing.warmup_ms = static_cast<int>(parse_uint("--warmup-ms", warmup_ms_, 0, 10000));
    const std::uint64_t seed =
        parse_uint("--seed", seed_, 0, std::numeric_limits<std::uint64_t>::max());
    const int device = static_cast<int>(parse_uint("--device", device_, 0, 1023));
    timing.flush = parse_flush_method(flush_);
    if (stream_ != "own" && stream_ != "default") {
      throw UsageError(fmt::format("--stream must be 'own' or 'default', got '{}'", stream_));
    }
    timing.default_stream = stream_ == "default";
    // Opened first, beside the file: a path that cannot be written fails before minutes of work,
    // and the file itself changes only when the results are complete.
    std::optional<OutputFile> json_out;
    if (!json_.empty()) json_out.emplace(json_);
    if (host_ && !one_case_given() && suite_.empty()) {
      const HostResults host = measure_host(device);
      print_host(host);
      if (json_out) json_out->commit(host_only_json(host));
      return kExitOk;
    }
    require_driver_one_line();

    CaseTimer bench(device, timing);
    const runtime::DeviceInfo& info = bench.ctx().info();
    fmt::print(stderr, "bench: {}; measuring the copy bandwidth (1 GiB device to device)\n",
               describe_device(info));
    Floors floors;
    floors.copy_gbps = bench.copy_gbps();
    floors.empty_kernel_us = bench.empty_kernel_us();
    fmt::print(stderr,
               "bench: copy {:.0f} GB/s, an empty kernel {:.1f} µs; {} cases, {} reps each\n",
               floors.copy_gbps, floors.empty_kernel_us, planned.size(), timing.reps);

    std::vector<CaseResult> results = planned;
    // Cases come in (forward, backward) pairs of one shape, or alone: one set of inputs each,
    // prepared a few shapes ahead on other threads (the float64 side is most of the run's time).
    std::vector<std::span<CaseResult>> groups;
    for (std::size_t i = 0; i < results.size();) {
      const std::size_t n =
          i + 1 < results.size() && same_shape(results[i], results[i + 1]) ? 2 : 1;
      groups.push_back(std::span(results).subspan(i, n));
      i += n;
    }
    std::vector<std::future<NormData>> data(groups.size());
    const auto prepare = [&](std::size_t g) {
      if (g >= groups.size()) return;
      const CaseResult& lead = groups[g].front();
      const bool backward =
          std::any_of(groups[g].begin(), groups[g].end(),
                      [](const CaseResult& r) { return is_backward(r.spec.kind); });
      data[g] = std::async(
          std::launch::async, [spec = lead.spec, batch = lead.batch, stride = lead.stride, seed,
                               backward, planned = as_the_runtime_plans(lead.spec, info)] {
            return make_norm_data(
                spec, batch, seed, backward, stride,
                rows_to_check(planned, batch, stride == 0 ? spec.width : stride, seed));
          });
    };
    constexpr std::size_t kAhead = 3;
    for (std::size_t g = 0; g < kAhead; ++g) prepare(g);
    for (std::size_t g = 0, first = 0; g < groups.size(); first += groups[g].size(), ++g) {
      run_shape(bench, data[g], groups[g], first, results.size(), floors);
      prepare(g + kAhead);
    }

    fmt::print(
        "ptxdsl bench on {}, driver {}.{}: copy {:.0f} GB/s (1 GiB device to device, read + "
        "written), an empty kernel {:.1f} µs; median of {} reps, L2 flushed ({} MB written by {}) "
        "before each, {} ms of warm-up\n",
        describe_device(info), runtime::driver_version() / 1000,
        runtime::driver_version() % 1000 / 10, floors.copy_gbps, floors.empty_kernel_us,
        timing.reps, kFlushBytes >> 20, flush_method_name(timing.flush), timing.warmup_ms);
    fmt::print("{:<26} {:>10} {:>9} {:>8} {:>10} {:>8} {:>7} {:>12}  {}\n", "case", "µs", "GB/s",
               "% copy", "copy µs", "% copy", "÷ copy", "err / bound", "check");
    bool all_pass = true;
    for (const CaseResult& r : results) {
      all_pass = all_pass && r.pass;
      if (r.pass) {
        fmt::print(
            "{:<26} {:>10.1f} {:>9.0f} {:>7.1f}% {:>10.1f} {:>7.1f}% {:>7.2f} {:>12.2e}  PASS, "
            "{}\n",
            r.name(), r.us, r.gbps, r.pct_copy, r.copy_us, r.copy_pct_copy, r.copy_ratio(),
            r.worst_ratio, r.checked);
      } else {
        fmt::print("{:<26} {:>10} {:>9} {:>8} {:>10} {:>8} {:>7} {:>12.2e}  FAIL ({}): {}\n",
                   r.name(), "-", "-", "-", "-", "-", "-", r.worst_ratio,
                   r.checked.empty() ? "unchecked" : r.checked, r.error);
      }
    }
    fmt::print(
        "copy µs: a device-to-device copy of the case's bytes (half read, half written), timed as "
        "the case; ÷ copy: its µs over the case's\n");
    fmt::print(
        "check: full, or past {} elements sampled rows (every CTA's first and last row group, "
        "the first and last rows, {} seeded ones) in full, every row written, dw and db of every "
        "row\n",
        kFullCheckElements, kRandomSampleRows);
    print_small_targets(results, floors);
    print_large_targets(results);
    std::optional<HostResults> host;
    if (host_) {
      host = measure_host(device);
      print_host(*host);
    }
    if (json_out) {
      json_out->commit(results_json(info, runtime::driver_version(), floors, timing, !heuristic_,
                                    seed, results, host));
    }
    return all_pass ? kExitOk : kExitFailure;
  }

 private:
  // The cases to run, from the command line; throws UsageError.
  // The suite's cases whose name contains --only's text; none is a usage error naming them all.
  std::vector<CaseResult> only_cases(const std::vector<CaseResult>& cases) const {
    std::vector<CaseResult> kept;
    std::string names;
    for (const CaseResult& c : cases) {
      if (c.name().find(only_) != std::string::npos) kept.push_back(c);
      names += fmt::format("{}{}", names.empty() ? "" : ", ", c.name());
    }
    if (kept.empty()) {
      throw UsageError(
          fmt::format("--only '{}' matches no case of the {} suite: {}", only_, suite_, names));
    }
    return kept;
  }
  bool one_case_given() const {
    return !options_.kernel.empty() || !options_.width.empty() || !options_.dtype.empty() ||
           !batch_.empty() || !stride_.empty();
  }

  std::vector<CaseResult> plan() const {
    const bool one_case = one_case_given();
    std::vector<CaseResult> cases;
    if (!suite_.empty()) {
      if (suite_ != "standard" && suite_ != "wide") {
        throw UsageError(fmt::format("--suite must be 'standard' or 'wide', got '{}'", suite_));
      }
      if (one_case) {
        throw UsageError(
            "--suite takes no KERNEL, --batch, --width, --dtype or --stride: give a suite or one "
            "case");
      }
      if (options_.any_knob())
        throw UsageError("--suite takes no knobs: the heuristics choose for each case");
      // The suites are BENCHMARKS.md's: the device's arch, the default PTX version, and the
      // suite's weights (the input's dtype, or f32 in the wide one), as the peers are timed.
      for (const auto& [flag, value] :
           {std::pair{"--arch", &options_.arch}, std::pair{"--ptx-version", &options_.ptx_version},
            std::pair{"--weight-dtype", &options_.weight_dtype}}) {
        if (!value->empty()) {
          throw UsageError(fmt::format(
              "--suite takes no {}: its cases are built for the device's arch and the default "
              "PTX version, with the suite's weight dtype; time one case to choose them",
              flag));
        }
      }
      for (const auto& [flag, value] :
           {std::pair{"--weight-offset", &options_.weight_offset},
            std::pair{"--casting", &options_.casting}, std::pair{"--quant", &options_.quant},
            std::pair{"--row-groups", &options_.row_groups},
            std::pair{"--group-stride", &options_.group_stride}}) {
        if (!value->empty()) {
          throw UsageError(fmt::format(
              "--suite takes no {}: its cases are the default norms; time one case to give it",
              flag));
        }
      }
      for (const Shape& s : suite_ == "wide" ? wide_suite() : standard_suite()) {
        for (NormKind k : s.layer_norm ? std::vector{NormKind::LayerNormFwd, NormKind::LayerNormBwd}
                                       : std::vector{NormKind::RmsNormFwd, NormKind::RmsNormBwd}) {
          CaseResult r;
          r.spec = make_spec(k, s.dtype, s.width);
          r.spec.weight_dtype = s.weight_dtype;
          r.batch = s.batch;
          cases.push_back(r);
        }
      }
      return only_.empty() ? cases : only_cases(cases);
    }
    if (!only_.empty()) throw UsageError("--only picks cases of a suite: give --suite too");
    if (!one_case) {
      if (host_) return cases;
      throw UsageError(
          "bench needs --suite standard, --host, or KERNEL --batch B --width N --dtype T");
    }
    if (options_.kernel.empty())
      throw UsageError("KERNEL is required without --suite: ln_fwd, ln_bwd, rms_fwd or rms_bwd");
    if (batch_.empty()) throw UsageError("--batch is required without --suite");
    if (options_.width.empty()) throw UsageError("--width is required without --suite");
    if (options_.dtype.empty()) throw UsageError("--dtype is required without --suite");
    CaseResult r;
    r.spec = options_.spec();
    options_.norm_options(r.spec);  // what the runtime cannot take, refused before the driver loads
    r.batch = static_cast<std::uint32_t>(parse_uint("--batch", batch_, 1, 0x7fffffff));
    if (!stride_.empty()) {
      r.stride = static_cast<std::uint32_t>(
          parse_uint("--stride", stride_, kernels::row_span(r.spec), 0x7fffffff));
    }
    cases.push_back(r);
    return cases;
  }

  // The spec as the runtime plans it on this GPU (its device, arch and tuning table), for the rows
  // a sampled check covers.
  kernels::NormSpec as_the_runtime_plans(kernels::NormSpec spec,
                                         const runtime::DeviceInfo& info) const {
    spec.device = info.model;
    if (options_.arch.empty()) spec.arch = spec.device.arch();
    spec.tuning = !heuristic_;
    return spec;
  }

  static bool same_shape(const CaseResult& a, const CaseResult& b) {
    return a.spec.width == b.spec.width && a.batch == b.batch && a.stride == b.stride &&
           a.spec.dtype == b.spec.dtype && is_layer_norm(a.spec.kind) == is_layer_norm(b.spec.kind);
  }

  void run_shape(CaseTimer& bench, std::future<NormData>& prepared, std::span<CaseResult> cases,
                 std::size_t first, std::size_t total, const Floors& floors) const {
    const CaseResult& lead = cases.front();
    try {
      const NormData data = prepared.get();
      runtime::NormOptions options =
          suite_.empty() ? options_.norm_options(lead.spec) : runtime::NormOptions{};
      options.tuning_table = !heuristic_;
      GpuNorm norm(bench.ctx(), data, options);
      for (std::size_t i = 0; i < cases.size(); ++i) {
        CaseResult& r = cases[i];
        r.bytes = floor_bytes(r.spec, r.batch);
        r.checked = checked_rows_text(data);
        try {
          const CaseTimer::Checked c = bench.run_case(norm, data, r.spec.kind);
          r.pass = c.pass;
          r.error = c.error;
          r.max_abs = c.max_abs;
          r.worst_ratio = c.worst_ratio;
          r.us = c.times.median;
          r.us_min = c.times.min;
          r.us_max = c.times.max;
        } catch (const std::exception& e) {
          r.error = e.what();
        }
        if (r.pass) {
          r.gbps = gbps(r.bytes, r.us);
          r.pct_copy = floors.pct_of_copy(r.bytes, r.us);
          r.copy_us = bench.same_size_copy_us(r.bytes);
          r.small_target_us = floors.small_target_us(r.bytes, r.copy_us);
          r.copy_pct_copy = floors.pct_of_copy(r.bytes, r.copy_us);
          fmt::print(stderr, "[{}/{}] {}: {:.1f} µs, {:.0f} GB/s, {:.1f}% of copy; checked {}\n",
                     first + i + 1, total, r.name(), r.us, r.gbps, r.pct_copy, r.checked);
        } else {
          fmt::print(stderr, "[{}/{}] {}: FAIL: {}\n", first + i + 1, total, r.name(), r.error);
        }
      }
    } catch (const std::exception& e) {
      for (CaseResult& r : cases) {
        if (r.error.empty() && !r.pass) r.error = e.what();
      }
      fmt::print(stderr, "[{}/{}] {}: FAIL: {}\n", first + 1, total, lead.name(), e.what());
    }
  }

  SpecOptions options_;
  std::string suite_;
  std::string only_;
  std::string batch_;
  std::string stride_;
  std::string json_;
  std::string reps_ = std::to_string(Timing{}.reps);
  std::string warmup_ = std::to_string(Timing{}.warmup);
  std::string warmup_ms_ = std::to_string(Timing{}.warmup_ms);
  std::string seed_ = "1";
  std::string device_ = "0";
  std::string flush_ = "kernel";
  std::string stream_ = "default";
  bool host_ = false;
  bool heuristic_ = false;
};

}  // namespace

Registered add_bench(CLI::App& app) {
  auto* sub = app.add_subcommand("bench", "time kernels by the method of BENCHMARKS.md");
  return {sub, std::make_unique<BenchCommand>(*sub)};
}

}  // namespace ptxdsl::cli
