// `ptxdsl run`: one kernel on seeded inputs, on the GPU through the host API (or on the CPU
// executor), compared with the float64 reference; the exit status follows PASS/FAIL.
#include <fmt/format.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <limits>
#include <vector>

#include "cli.hpp"
#include "norm_case.hpp"
#include "ptxdsl/cli/device.hpp"
#include "ptxdsl/cli/host_memory.hpp"
#include "ptxdsl/runtime/stream.hpp"

namespace ptxdsl::cli {
namespace {

// Bytes a run holds per element of its row tensors (batch × stride: the rows and their padding),
// at the peak of each phase. Inputs and float64 references are held throughout; then come the
// references' own copies of their inputs, or the run (the CPU executor's copies of the inputs and
// outputs, and each output downloaded: its bytes, as floats, and packed densely), or the check
// (each output as floats and the accuracy rule's float64 scales).
std::uint64_t bytes_per_element(const kernels::NormSpec& spec, bool strided, bool cpu) {
  const std::uint64_t s = kernels::dtype_bytes(spec.dtype);
  const std::uint64_t r = kernels::dtype_bytes(kernels::residual_dtype(spec));
  const bool residual = kernels::has_residual(spec), backward = is_backward(spec.kind);
  // x and dy (made for every kind), residual and dh: their dtype's bytes and floats.
  const std::uint64_t inputs = 2 * (s + 4) + (residual ? 2 * (r + 4) : 0);
  // The forward's rows (floats) and y (and h), and a backward's rows and dx.
  const std::uint64_t references = 4 + 8 + (residual ? 8 : 0) + (backward ? 4 + 8 : 0);
  const std::uint64_t reference_copies = backward ? 4 + (residual ? 8 : 0) : (residual ? 4 : 0);
  // Outputs a row long: y (and h), or dx.
  const std::vector<std::uint64_t> outputs = backward   ? std::vector{s}
                                             : residual ? std::vector{s, r}
                                                        : std::vector{s};
  std::uint64_t running = cpu ? 2 * s + (residual ? 2 * r : 0) : 0;
  std::uint64_t checking = 0;
  for (std::uint64_t out : outputs) {
    running += (cpu ? out : 0) + out + 4 + (strided ? 4 : 0);
    checking += 4 + 8;
  }
  const std::uint64_t buffers =
      inputs + references + std::max({reference_copies, running, checking});
  // And an eighth more for what the allocator holds beside the buffers.
  return buffers + buffers / 8;
}

// Bytes of host memory a run of `spec` over `batch` rows `stride` apart holds at its peak; a
// UsageError where they do not fit 64 bits.
std::uint64_t host_bytes_needed(const kernels::NormSpec& spec, std::uint32_t batch,
                                std::uint32_t stride, bool cpu) {
  // Per row: statistics in float64 and f32, downloaded and scaled; per column: the weights and
  // their gradients; and the process itself, its threads and the kernels' IR.
  constexpr std::uint64_t kPerRow = 128, kPerColumn = 128, kBase = 64ull << 20;
  const std::uint64_t per_element = bytes_per_element(spec, stride != spec.width, cpu);
  const std::uint64_t elements = std::uint64_t{batch} * stride;  // < 2^62
  std::uint64_t rows = 0, total = 0;
  const bool overflow = __builtin_mul_overflow(elements, per_element, &total) ||
                        __builtin_mul_overflow(std::uint64_t{batch}, kPerRow, &rows) ||
                        __builtin_add_overflow(total, rows, &total) ||
                        __builtin_add_overflow(total, spec.width * kPerColumn + kBase, &total);
  if (overflow) {
    throw UsageError(fmt::format(
        "{} {} rows {} elements apart need more host memory than 2^64 bytes; use a smaller "
        "--batch or --stride",
        kernels::kind_name(spec.kind), batch, stride));
  }
  return total;
}

// What one phase freed goes back to the system before the next allocates: the allocator keeps
// freed blocks it cannot reuse for the next phase's larger ones, which the estimate, a maximum
// over the phases, does not count.
void release_freed_memory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

// "412 MiB", "2.56 GiB".
std::string memory_text(std::uint64_t bytes) {
  if (bytes < (1ull << 30)) return fmt::format("{} MiB", (bytes + (1ull << 20) - 1) >> 20);
  return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1ull << 30));
}

class RunCommand : public Command {
 public:
  explicit RunCommand(CLI::App& sub) {
    options_.add_to(sub);
    sub.add_option("--batch", batch_, "rows, 1 to 2147483647")->required();
    sub.add_option("--stride", stride_,
                   "elements from one row (with --row-groups: group of rows) to the next, its "
                   "span to 2147483647 (default: the span); what lies between rows must stay "
                   "untouched");
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
    // The least stride: the width, or with row groups the span of a group of rows.
    const std::uint64_t span = kernels::row_span(spec);
    const auto stride = static_cast<std::uint32_t>(
        stride_.empty() ? span : parse_uint("--stride", stride_, span, 0x7fffffff));
    const std::uint64_t seed =
        parse_uint("--seed", seed_, 0, std::numeric_limits<std::uint64_t>::max());
    const int device = cpu_ ? 0 : options_.gpu_ordinal();
    if (cpu_) options_.device_preset();  // an ordinal means a GPU: refuse it here
    if (!cpu_) require_driver_one_line();
    const std::uint64_t needed = host_bytes_needed(spec, batch, stride, cpu_);
    const HostMemory available = host_memory_available();
    if (needed > available.bytes) {
      throw std::runtime_error(fmt::format(
          "{} {}x{} needs about {} of host memory (inputs, float64 references, outputs{}), and "
          "{} is available (limited by {}); use a smaller --batch or --width",
          kernels::kind_name(spec.kind), batch, spec.width, memory_text(needed),
          cpu_ ? ", the CPU executor's copies" : "", memory_text(available.bytes),
          available.limited_by));
    }

    const NormData data = make_norm_data(spec, batch, seed, false, stride);
    release_freed_memory();
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
    release_freed_memory();
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
