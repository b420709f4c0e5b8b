// `ptxdsl run`: one kernel on seeded inputs, on the GPU through the host API (or on the CPU
// executor), compared with the float64 reference; the exit status follows PASS/FAIL.
#include <fmt/format.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include "cli.hpp"
#include "norm_case.hpp"
#include "ptxdsl/cli/device.hpp"
#include "ptxdsl/runtime/stream.hpp"

namespace ptxdsl::cli {
namespace {

// Bytes of host memory a run of `spec` over `batch` rows `stride` apart holds at its peak, per
// element of the rows (their padding included): the inputs (floats and their dtype's bytes), the
// float64 references and the reference functions' own results before they are copied in, what
// came back as floats, and on the CPU executor its copies of the rows in and out.
std::uint64_t host_bytes_needed(const kernels::NormSpec& spec, std::uint32_t batch,
                                std::uint32_t stride, bool cpu) {
  const std::uint64_t s = static_cast<std::uint64_t>(kernels::dtype_bytes(spec.dtype));
  const std::uint64_t rows_in = is_backward(spec.kind) ? 2 : 1;     // x (and dy)
  const std::uint64_t references = is_backward(spec.kind) ? 2 : 1;  // y (and dx), in float64
  std::uint64_t per_element = rows_in * (4 + s) + references * 2 * 8 + 4;
  if (cpu) per_element += (rows_in + 2) * s;  // the executor's rows in and out, and the download
  const std::uint64_t elements = std::uint64_t{batch} * stride;
  // The per-row and per-column vectors, and the process itself, are small beside the rows.
  constexpr std::uint64_t kBase = 64ull << 20;
  return elements * per_element + std::uint64_t{batch} * 64 + kBase;
}

// The host memory this process may still take: MemAvailable, and an address-space limit if set.
std::uint64_t host_bytes_available() {
  std::uint64_t available = std::numeric_limits<std::uint64_t>::max();
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    std::istringstream fields(line);
    std::string key;
    std::uint64_t kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") available = kib * 1024;
  }
  if (available == std::numeric_limits<std::uint64_t>::max()) {
    const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) available = static_cast<std::uint64_t>(pages) * page;
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    available = std::min<std::uint64_t>(available, limit.rlim_cur);
  return available;
}

std::string gib(std::uint64_t bytes) {
  return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1ull << 30));
}

class RunCommand : public Command {
 public:
  explicit RunCommand(CLI::App& sub) {
    options_.add_to(sub);
    sub.add_option("--batch", batch_, "rows, 1 to 2147483647")->required();
    sub.add_option("--stride", stride_,
                   "elements from one row to the next, the width to 2147483647 (default: the "
                   "width); what lies between rows must stay untouched");
    sub.add_option("--seed", seed_, "input seed (default 1)");
    sub.add_flag("--cpu", cpu_, "run on the CPU executor instead of the GPU");
    sub.add_option("--trace", trace_, "traces one launch of a kernel tool's kernel, not a norm's");
  }

  bool sized_by_options() const override { return true; }

  int run() override {
    if (!trace_.empty()) {
      // A norm runs as the launches of its plan, on rows the executor splits over host threads.
      throw UsageError(
          "--trace traces one launch of a kernel tool's kernel (ptxdsl_add_kernel_tool; "
          "docs/cli.md); a norm runs as a plan of launches and is not traced");
    }
    const kernels::NormSpec spec = options_.spec();
    const auto batch = static_cast<std::uint32_t>(parse_uint("--batch", batch_, 1, 0x7fffffff));
    const auto stride = static_cast<std::uint32_t>(
        stride_.empty() ? spec.width : parse_uint("--stride", stride_, spec.width, 0x7fffffff));
    const std::uint64_t seed =
        parse_uint("--seed", seed_, 0, std::numeric_limits<std::uint64_t>::max());
    const int device = cpu_ ? 0 : options_.gpu_ordinal();
    if (cpu_) options_.device_preset();  // an ordinal means a GPU: refuse it here
    if (!cpu_) require_driver_one_line();
    const std::uint64_t needed = host_bytes_needed(spec, batch, stride, cpu_);
    const std::uint64_t available = host_bytes_available();
    if (needed > available) {
      throw std::runtime_error(fmt::format(
          "{} {}x{} needs about {} of host memory (inputs, float64 references, outputs{}), and "
          "{} is available; use a smaller --batch or --width",
          kernels::kind_name(spec.kind), batch, spec.width, gib(needed),
          cpu_ ? ", the CPU executor's copies" : "", gib(available)));
    }

    const NormData data = make_norm_data(spec, batch, seed, false, stride);
    std::vector<Output> got;
    std::string where;
    if (cpu_) {
      where = "CPU executor";
      got = run_on_cpu(data);
    } else {
      const runtime::Context ctx(device);
      where = describe_device(ctx.info());
      const runtime::Stream stream(ctx);
      GpuNorm norm(ctx, data, options_.norm_options(spec));
      norm.poison(spec.kind);
      norm.call(spec.kind, stream);
      stream.synchronize();
      got = norm.download(spec.kind);
    }
    const CaseCheck check = compare(spec.kind, data, got);
    fmt::print("{} {} {}x{}, seed {}, on {}\n", kernels::kind_name(spec.kind),
               kernels::dtype_name(spec.dtype), batch, spec.width, seed, where);
    fmt::print("  {:<6} {:>12} {:>13} {:>8} {:>10} {:>9}\n", "output", "max abs err",
               "worst / bound", "at", "its bound", "nonfinite");
    for (const kernels::OutputVerdict& o : check.verdict.outputs) {
      fmt::print("  {:<6} {:>12.3e} {:>13.3e} {:>8} {:>10.2e} {:>9}\n", o.name, o.max_abs,
                 o.ratio(), o.worst, o.bound, o.nonfinite);
    }
    fmt::print("{}: {}\n", check.pass() ? "PASS" : "FAIL", check.summary());
    return check.pass() ? kExitOk : kExitFailure;
  }

 private:
  SpecOptions options_;
  std::string batch_;
  std::string stride_;
  std::string seed_ = "1";
  bool cpu_ = false;
  std::string trace_;
};

}  // namespace

Registered add_run(CLI::App& app) {
  auto* sub = app.add_subcommand("run", "run a kernel on seeded inputs; compare with float64");
  return {sub, std::make_unique<RunCommand>(*sub)};
}

}  // namespace ptxdsl::cli
