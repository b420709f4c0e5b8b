// A kernel tool's commands over its registry: list, emit, check and run.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <thread>

#include "ptxdsl/cli/app.hpp"
#include "ptxdsl/cli/check.hpp"
#include "ptxdsl/cli/contract_json.hpp"
#include "ptxdsl/cli/device.hpp"
#include "ptxdsl/cli/gpu_run.hpp"
#include "ptxdsl/cli/json.hpp"
#include "ptxdsl/cli/output_file.hpp"
#include "ptxdsl/dsl/error.hpp"
#include "ptxdsl/tool/registry.hpp"
#include "ptxdsl/tool/run.hpp"

#ifndef PTXDSL_VERSION
#error "PTXDSL_VERSION must be the project's version (tools/kernel_tool/CMakeLists.txt defines it)"
#endif

namespace ptxdsl::cli {
namespace {

using tool::KernelDefinition;
using tool::Parameter;
using tool::ParamKind;
using tool::Params;
using tool::Registry;

std::string values_of(const Parameter& p) {
  if (p.kind == ParamKind::Uint) return fmt::format("{} to {}", p.min, p.max);
  return fmt::format("{}", fmt::join(p.choices, ", "));
}

std::string metavar(const Parameter& p) {
  return p.kind == ParamKind::Uint ? "N" : "V";
}

// The options that name a kernel and its build: KERNEL, one option per parameter name in the
// registry (shared by the kernels that have it), --param NAME=VALUE, --arch, --ptx-version.
class KernelOptions {
 public:
  explicit KernelOptions(const Registry& registry) : registry_(registry) {}

  void add_to(CLI::App& sub) {
    std::vector<std::string> names;
    for (const KernelDefinition& k : registry_.kernels()) names.push_back(k.name);
    sub.add_option("kernel", kernel_, fmt::format("{}", fmt::join(names, ", ")));
    for (const KernelDefinition& k : registry_.kernels()) {
      for (const Parameter& p : k.params) {
        if (values_.contains(p.name)) continue;
        sub.add_option("--" + p.name, values_[p.name], fmt::format("{}: {}", p.help, values_of(p)))
            ->group("Parameters (`list` says which kernel takes which)");
      }
    }
    sub.add_option("--param", pairs_, "a parameter as NAME=VALUE (as --NAME VALUE)");
    sub.add_option("--arch", arch_, all_arch_names() + " (default sm_90, or the kernel's first)");
    sub.add_option("--ptx-version", ptx_version_, "7.0 to 9.0 (default 7.8, or the arch's least)");
  }

  const KernelDefinition& definition() const {
    if (kernel_.empty()) throw UsageError("kernel is required");
    return *usage([&] { return &registry_.find(kernel_); });
  }

  Params params() const {
    const KernelDefinition& def = definition();
    std::map<std::string, std::string> given;
    for (const auto& [name, text] : values_) {
      if (!text.empty()) given[name] = text;
    }
    for (const std::string& pair : pairs_) {
      const auto eq = pair.find('=');
      if (eq == std::string::npos || eq == 0) {
        throw UsageError(fmt::format("--param takes NAME=VALUE, got '{}'", pair));
      }
      const std::string name = pair.substr(0, eq);
      if (given.contains(name)) {
        throw UsageError(fmt::format("parameter '{}' is given twice (--{} or --param {}=..., once)",
                                     name, name, name));
      }
      given[name] = pair.substr(eq + 1);
    }
    return usage([&] { return Params::parse(def, given, arch_, ptx_version_); });
  }

 private:
  const Registry& registry_;
  std::string kernel_;
  std::map<std::string, std::string> values_;  // by parameter name; node addresses are stable
  std::vector<std::string> pairs_;
  std::string arch_;
  std::string ptx_version_;
};

tool::BuiltKernel build(const KernelDefinition& def, const Params& params) {
  try {
    return tool::build_kernel(def, params);
  } catch (const Error& e) {
    // What a builder refuses is the parameters it was given (a width it cannot tile): bad input,
    // named with them.
    throw UsageError(fmt::format("{} with {}: {}", def.name, params.describe(), e.what()));
  }
}

class ListCommand : public Command {
 public:
  explicit ListCommand(const Registry& registry) : registry_(registry) {}
  int run() override {
    fmt::print("kernels\n");
    std::size_t width = 0;
    for (const KernelDefinition& k : registry_.kernels()) width = std::max(width, k.name.size());
    for (const KernelDefinition& k : registry_.kernels()) {
      fmt::print("  {:<{}}  {}\n", k.name, width, k.description);
      for (const Parameter& p : k.params) {
        const std::string flag = fmt::format("--{} {}", p.name, metavar(p));
        const std::string dflt =
            p.default_value.empty() ? "required" : "default " + p.default_value;
        fmt::print("    {:<20} {}: {} ({})\n", flag, p.help, values_of(p), dflt);
      }
      std::vector<std::string> archs;
      for (Arch a : k.archs) archs.emplace_back(arch_name(a));
      fmt::print("    targets: {}; run: {}\n",
                 archs.empty() ? all_arch_names() : fmt::format("{}", fmt::join(archs, ", ")),
                 !k.inputs     ? "no inputs (emit and check only)"
                 : k.reference ? "seeded inputs against a float64 reference"
                               : "seeded inputs, no reference (not compared)");
    }
    fmt::print(
        "\n"
        "options of every kernel\n"
        "  --NAME V / --param NAME=V  a parameter, as listed above\n"
        "  --arch A                   {} (default sm_90,\n"
        "                             or the kernel's first)\n"
        "  --ptx-version V            7.0 to 9.0 (default 7.8, or the arch's least)\n"
        "emit: -o FILE, --json (the launch contract); check: --ptx FILE (any PTX)\n"
        "run: --cpu (the CPU executor), --seed S (default 1), --device N (the GPU's ordinal),\n"
        "     --trace [CTA:]THREAD with --cpu (each instruction that thread runs), --trace-limit "
        "N\n"
        "bench: --reps N (default 100), --warmup N (10), --warmup-ms MS (25), --seed S, "
        "--device N, --json\n",
        all_arch_names());
    return kExitOk;
  }

 private:
  const Registry& registry_;
};

std::string contract_json(const KernelDefinition& def, const Params& params,
                          const tool::BuiltKernel& built, const std::string& ptx_file) {
  JsonWriter j;
  j.begin_object();
  j.field("kernel", def.name);
  j.key("params").begin_object(true);
  for (std::size_t i = 0; i < def.params.size(); ++i) {
    const auto& [name, text] = params.values()[i];
    j.key(name);
    if (def.params[i].kind == ParamKind::Uint) {
      j.value(params.uint(name));
    } else {
      j.value(text);
    }
  }
  j.end_object();
  j.field("arch", arch_name(params.arch()));
  j.field("ptx_version",
          fmt::format("{}.{}", params.ptx_version().major, params.ptx_version().minor));
  j.key("steps").begin_array();
  j.begin_object();
  write_contract_fields(j, built.contract, built.block);
  j.key("grid").begin_array(true).value(built.grid.x).value(built.grid.y).value(built.grid.z);
  j.end_array();
  j.end_object();
  j.end_array();
  if (def.tensor_maps) {
    // What cuTensorMapEncodeTiled takes, the buffer's address aside: innermost dimension first.
    j.key("tensor_maps").begin_object();
    for (const auto& [name, map] : def.tensor_maps(params)) {
      const TensorMapSpec& s = map.spec;
      const auto list = [&](std::string_view key, const auto& values) {
        j.key(key).begin_array(true);
        for (const auto v : values) j.value(static_cast<std::uint64_t>(v));
        j.end_array();
      };
      j.key(name).begin_object(true);
      j.field("buffer", map.buffer);
      j.field("element", ptx_name(s.element));
      list("dims", s.dims);
      list("strides_bytes", s.strides_bytes);
      list("box", s.box);
      j.field("swizzle_bytes", s.swizzle == Swizzle::None  ? 0
                               : s.swizzle == Swizzle::B32 ? 32
                               : s.swizzle == Swizzle::B64 ? 64
                                                           : 128);
      j.field("nan_fill", s.nan_fill);
      j.field("l2_promotion_bytes", map.l2_promotion_bytes);
      j.end_object();
    }
    j.end_object();
  }
  write_ptx_field(j, built.ptx, ptx_file);
  j.end_object();
  return j.str();
}

class EmitCommand : public Command {
 public:
  EmitCommand(CLI::App& sub, const Registry& registry) : options_(registry) {
    options_.add_to(sub);
    sub.add_option("-o,--output", output_, "write the PTX to FILE instead of stdout");
    sub.add_flag("--json", json_, "print the launch contract as JSON (with the PTX unless -o)");
  }
  int run() override {
    const KernelDefinition& def = options_.definition();
    const Params params = options_.params();
    const tool::BuiltKernel built = build(def, params);
    if (!output_.empty()) write_text_file(output_, built.ptx);
    if (json_) {
      std::fputs(contract_json(def, params, built, output_).c_str(), stdout);
    } else if (output_.empty()) {
      std::fputs(built.ptx.c_str(), stdout);
    }
    return kExitOk;
  }

 private:
  KernelOptions options_;
  std::string output_;
  bool json_ = false;
};

class DefinitionSource : public PtxSource {
 public:
  explicit DefinitionSource(const Registry& registry) : options_(registry) {}
  void add_options(CLI::App& sub) override { options_.add_to(sub); }
  CheckedPtx build() override {
    const Params params = options_.params();
    tool::BuiltKernel built = cli::build(options_.definition(), params);
    return {std::move(built.ptx), std::string(arch_name(params.arch()))};
  }

 private:
  KernelOptions options_;
};

// --trace [CTA:]THREAD: linear indices into the grid and the block.
TraceTarget trace_target(const std::string& text, const tool::BuiltKernel& built,
                         std::size_t limit) {
  const auto colon = text.find(':');
  const std::uint64_t last_thread = built.block.count() - 1, last_cta = built.grid.count() - 1;
  const std::uint64_t cta = colon == std::string::npos
                                ? 0
                                : parse_uint("--trace CTA", text.substr(0, colon), 0, last_cta);
  const std::uint64_t thread = parse_uint(
      "--trace THREAD", colon == std::string::npos ? text : text.substr(colon + 1), 0, last_thread);
  const auto unravel = [](std::uint64_t i, Dim3 d) {
    return Dim3(static_cast<std::uint32_t>(i % d.x), static_cast<std::uint32_t>(i / d.x % d.y),
                static_cast<std::uint32_t>(i / d.x / d.y));
  };
  return {unravel(cta, built.grid), unravel(thread, built.block), limit};
}

class RunCommand : public Command {
 public:
  RunCommand(CLI::App& sub, const Registry& registry) : options_(registry) {
    options_.add_to(sub);
    sub.add_flag("--cpu", cpu_, "run on the CPU executor instead of the GPU");
    sub.add_option("--seed", seed_, "input seed, 0 to 2^64-1 (default 1)");
    sub.add_option("--device", device_, "the GPU's ordinal (default 0)");
    sub.add_option(
        "--trace", trace_,
        "with --cpu: print each instruction thread [CTA:]THREAD runs and what it writes");
    trace_limit_option_ = sub.add_option("--trace-limit", trace_limit_,
                                         "at most N traced instructions (default 10000)");
    sub.add_option("--dump", dump_,
                   "write every output element and its reference to FILE, one a line: output, "
                   "type, index, got, want");
  }

  bool sized_by_options() const override { return true; }

  int run() override {
    const KernelDefinition& def = options_.definition();
    const Params params = options_.params();
    const std::uint64_t seed =
        parse_uint("--seed", seed_, 0, std::numeric_limits<std::uint64_t>::max());
    const std::uint64_t limit = parse_uint("--trace-limit", trace_limit_, 1, 100000000);
    if (cpu_ && !device_.empty()) {
      throw UsageError(
          fmt::format("--device is the GPU's ordinal; --cpu runs on none, got '{}'", device_));
    }
    if (!cpu_ && !trace_.empty()) {
      throw UsageError("--trace needs --cpu: the trace is the CPU executor's");
    }
    if (trace_.empty() && trace_limit_option_->count() > 0) {
      throw UsageError("--trace-limit bounds a trace: give --trace [CTA:]THREAD too");
    }
    const int ordinal =
        device_.empty() ? 0 : static_cast<int>(parse_uint("--device", device_, 0, 1023));
    if (!def.inputs) {
      throw UsageError(fmt::format(
          "kernel '{}' registers no inputs (KernelDefinition::inputs): emit and check it, or "
          "give it inputs to run",
          def.name));
    }
    // Checked before the run: a dump that cannot be written fails at once.
    std::optional<OutputFile> dump;
    if (!dump_.empty()) dump.emplace(dump_);
    const tool::BuiltKernel built = build(def, params);
    const tool::PreparedRun prepared = tool::prepare_run(def, params, built, seed);
    tool::Outputs got;
    std::string where;
    LaunchStats stats;
    if (cpu_) {
      where = "CPU executor";
      ExecOptions options;
      options.threads = std::max(1u, std::thread::hardware_concurrency());
      if (!trace_.empty()) {
        options.trace = true;
        options.trace_target = trace_target(trace_, built, limit);
      }
      got = tool::run_on_cpu(built, prepared, options, &stats);
    } else {
      got = run_on_gpu(built, prepared, ordinal, where);
    }
    fmt::print("{} {} ({}), grid ({}, {}, {}) x block ({}, {}, {}), seed {}, on {}\n", def.name,
               params.describe(), arch_name(params.arch()), built.grid.x, built.grid.y,
               built.grid.z, built.block.x, built.block.y, built.block.z, seed, where);
    if (!trace_.empty()) print_trace(stats, limit);
    if (dump) {
      const tool::Expected want =
          def.reference ? def.reference(params, prepared.data) : tool::Expected{};
      dump->commit(dump_text(def, params, built, prepared, got, want, seed, where));
    }
    if (!def.reference) {
      for (const auto& [name, values] : got) {
        const auto bad =
            std::count_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); });
        fmt::print("  {}: {} elements, {} NaN or infinite\n", name, values.size(), bad);
      }
      fmt::print("not compared: kernel '{}' registers no reference\n", def.name);
      return kExitOk;
    }
    const tool::Verdict verdict = tool::judge(def, params, built, prepared, got);
    fmt::print("  {:<8} {:>12} {:>13} {:>8} {:>10} {:>9}\n", "output", "max abs err",
               "worst / bound", "at", "its bound", "nonfinite");
    for (const tool::OutputVerdict& o : verdict.outputs) {
      fmt::print("  {:<8} {:>12.3e} {:>13.3e} {:>8} {:>10.2e} {:>9}\n", o.name, o.max_abs,
                 o.worst_ratio, o.worst, o.worst_bound, o.nonfinite);
    }
    fmt::print("{}: {}\n", verdict.pass() ? "PASS" : "FAIL", verdict.summary());
    return verdict.pass() ? kExitOk : kExitFailure;
  }

 private:
  // Every output element beside its reference (`-` where there is none), in the output's type.
  static std::string dump_text(const KernelDefinition& def, const Params& params,
                               const tool::BuiltKernel& built, const tool::PreparedRun& prepared,
                               const tool::Outputs& got, const tool::Expected& want,
                               std::uint64_t seed, const std::string& where) {
    std::string out =
        fmt::format("# {} {} ({}), seed {}, on {}\n# output type index got want\n", def.name,
                    params.describe(), arch_name(params.arch()), seed, where);
    for (const ParamSpec& p : built.contract.params) {
      const auto g = got.find(p.name);
      if (g == got.end()) continue;
      const auto w = want.find(p.name);
      const std::string_view type = ptx_name(tool::buffer_element(prepared.data, p));
      for (std::size_t i = 0; i < g->second.size(); ++i) {
        const bool has_want = w != want.end() && i < w->second.size();
        out += fmt::format("{} {} {} {} {}\n", p.name, type, i, g->second[i],
                           has_want ? fmt::format("{}", w->second[i]) : std::string("-"));
      }
    }
    return out;
  }

  void print_trace(const LaunchStats& stats, std::uint64_t limit) const {
    fmt::print("trace of thread {} (index, instruction, registers written):\n", trace_);
    fmt::print("{}", format_trace(stats.trace));
    if (stats.trace.size() >= limit) {
      fmt::print("(the trace stops at --trace-limit {} instructions)\n", limit);
    } else {
      fmt::print("({} instructions)\n", stats.trace.size());
    }
  }

  KernelOptions options_;
  bool cpu_ = false;
  std::string seed_ = "1";
  std::string device_;
  std::string trace_;
  std::string trace_limit_ = "10000";
  const CLI::Option* trace_limit_option_ = nullptr;
  std::string dump_;
};

class BenchCommand : public Command {
 public:
  BenchCommand(CLI::App& sub, const Registry& registry) : options_(registry) {
    options_.add_to(sub);
    sub.add_option("--reps", reps_, "timed launches, 1 to 100000 (default 100)");
    sub.add_option("--warmup", warmup_, "untimed launches first, 0 to 1000 (default 10)");
    sub.add_option("--warmup-ms", warmup_ms_,
                   "then untimed launches for this long, 0 to 10000 (default 25)");
    sub.add_option("--seed", seed_, "input seed, 0 to 2^64-1 (default 1)");
    sub.add_option("--device", device_, "the GPU's ordinal (default 0)");
    sub.add_flag("--json", json_, "print the result as JSON");
  }

  bool sized_by_options() const override { return true; }

  int run() override {
    const KernelDefinition& def = options_.definition();
    const Params params = options_.params();
    BenchOptions timing;
    timing.reps = static_cast<int>(parse_uint("--reps", reps_, 1, 100000));
    timing.warmup = static_cast<int>(parse_uint("--warmup", warmup_, 0, 1000));
    timing.warmup_ms = static_cast<int>(parse_uint("--warmup-ms", warmup_ms_, 0, 10000));
    const std::uint64_t seed =
        parse_uint("--seed", seed_, 0, std::numeric_limits<std::uint64_t>::max());
    const int ordinal = static_cast<int>(parse_uint("--device", device_, 0, 1023));
    if (!def.inputs) {
      throw UsageError(fmt::format(
          "kernel '{}' registers no inputs (KernelDefinition::inputs): there is nothing to "
          "launch it on",
          def.name));
    }
    const tool::BuiltKernel built = build(def, params);
    require_driver_one_line();  // before the inputs, which take a while at large sizes
    const tool::PreparedRun prepared = tool::prepare_run(def, params, built, seed);
    std::string where;
    const BenchTimes t = bench_on_gpu(built, prepared, ordinal, timing, where);
    const double flops = def.flops ? def.flops(params) : 0;
    const double tflops = flops / (t.median_us * 1e6);
    if (json_) {
      JsonWriter j;
      j.begin_object();
      j.field("kernel", def.name);
      j.field("params", params.describe());
      j.field("arch", arch_name(params.arch()));
      j.field("device", where);
      j.field("reps", t.reps);
      j.field("median_us", t.median_us);
      j.field("min_us", t.min_us);
      if (def.flops) {
        j.field("flops", flops);
        j.field("tflops", tflops);
      }
      j.end_object();
      std::fputs(j.str().c_str(), stdout);
      return kExitOk;
    }
    fmt::print("{} {} ({}), grid ({}, {}, {}) x block ({}, {}, {}), on {}\n", def.name,
               params.describe(), arch_name(params.arch()), built.grid.x, built.grid.y,
               built.grid.z, built.block.x, built.block.y, built.block.z, where);
    fmt::print("  median {:.2f} us, least {:.2f} us, of {} launches (L2 flushed before each){}\n",
               t.median_us, t.min_us, t.reps,
               def.flops ? fmt::format("; {:.1f} TFLOP/s", tflops) : std::string());
    return kExitOk;
  }

 private:
  KernelOptions options_;
  std::string reps_ = std::to_string(BenchOptions{}.reps);
  std::string warmup_ = std::to_string(BenchOptions{}.warmup);
  std::string warmup_ms_ = std::to_string(BenchOptions{}.warmup_ms);
  std::string seed_ = "1";
  std::string device_ = "0";
  bool json_ = false;
};

}  // namespace
}  // namespace ptxdsl::cli

namespace ptxdsl::tool {

int run_kernel_tool(int argc, char** argv, const Registry& registry, std::string_view name) {
  const cli::ToolInfo info{
      .name = std::string(name),
      .description = fmt::format("{}: kernels written in the ptxdsl C++ PTX builder; list, emit, "
                                 "check, run and bench them",
                                 name),
      .version = fmt::format("{} (ptxdsl {})", name, PTXDSL_VERSION)};
  return cli::run_app(argc, argv, info, [&](CLI::App& app) {
    std::vector<cli::Registered> commands;
    auto* list = app.add_subcommand("list", "the kernels, their parameters and defaults");
    commands.emplace_back(list, std::make_unique<cli::ListCommand>(registry));
    auto* emit = app.add_subcommand("emit", "print the PTX of a kernel (or its launch contract)");
    commands.emplace_back(emit, std::make_unique<cli::EmitCommand>(*emit, registry));
    commands.push_back(cli::add_check(app, std::make_unique<cli::DefinitionSource>(registry)));
    auto* run = app.add_subcommand("run", "run a kernel on seeded inputs; compare with float64");
    commands.emplace_back(run, std::make_unique<cli::RunCommand>(*run, registry));
    auto* bench = app.add_subcommand(
        "bench", "time a kernel on the GPU: median of launches, L2 flushed (TFLOP/s where known)");
    commands.emplace_back(bench, std::make_unique<cli::BenchCommand>(*bench, registry));
    return commands;
  });
}

}  // namespace ptxdsl::tool
