// `ptxdsl run`: one kernel on seeded inputs, on the GPU through the host API (or on the CPU
// executor), compared with the float64 reference; the exit status follows PASS/FAIL.
#include <fmt/format.h>

#include <limits>

#include "cli.hpp"
#include "device.hpp"
#include "norm_case.hpp"
#include "ptxdsl/runtime/stream.hpp"

namespace ptxdsl::cli {
namespace {

class RunCommand : public Command {
 public:
  explicit RunCommand(CLI::App& sub) {
    options_.add_to(sub);
    sub.add_option("--batch", batch_, "rows, 1 to 2147483647")->required();
    sub.add_option("--seed", seed_, "input seed (default 1)");
    sub.add_flag("--cpu", cpu_, "run on the CPU executor instead of the GPU");
    sub.add_option("--device", device_, "GPU ordinal (default 0)");
  }

  int run() override {
    const kernels::NormSpec spec = options_.spec();
    const auto batch = static_cast<std::uint32_t>(parse_uint("--batch", batch_, 1, 0x7fffffff));
    const std::uint64_t seed =
        parse_uint("--seed", seed_, 0, std::numeric_limits<std::uint64_t>::max());
    const int device = static_cast<int>(parse_uint("--device", device_, 0, 1023));
    if (!cpu_) require_driver_one_line();

    const NormData data = make_norm_data(spec, batch, seed);
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
    fmt::print("  {:<6} {:>12} {:>12} {:>10} {:>9}\n", "output", "max abs err", "max rel err",
               "tolerance", "nonfinite");
    for (const OutputCheck& o : check.outputs) {
      fmt::print("  {:<6} {:>12.3e} {:>12.3e} {:>10.1e} {:>9}\n", o.name, o.deviation.max_abs,
                 o.deviation.max_rel, o.tolerance, o.deviation.nonfinite);
    }
    fmt::print("{}: {}\n", check.pass() ? "PASS" : "FAIL", check.summary());
    return check.pass() ? kExitOk : kExitFailure;
  }

 private:
  SpecOptions options_;
  std::string batch_;
  std::string seed_ = "1";
  std::string device_ = "0";
  bool cpu_ = false;
};

}  // namespace

Registered add_run(CLI::App& app) {
  auto* sub = app.add_subcommand("run", "run a kernel on seeded inputs; compare with float64");
  return {sub, std::make_unique<RunCommand>(*sub)};
}

}  // namespace ptxdsl::cli
