#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "cli.hpp"
#include "ptxdsl/dsl/error.hpp"

namespace ptxdsl::cli {

std::uint64_t parse_uint(std::string_view what, std::string_view text, std::uint64_t lo,
                         std::uint64_t hi) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ptr != end || ec != std::errc()) {
    // A leading '-' is a negative number: say it is out of range rather than malformed.
    const bool negative =
        !text.empty() && text[0] == '-' && text.size() > 1 &&
        std::all_of(text.begin() + 1, text.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (negative)
      throw UsageError(fmt::format("{} must be in [{}, {}], got {}", what, lo, hi, text));
    throw UsageError(
        fmt::format("{} must be an integer in [{}, {}], got '{}'", what, lo, hi, text));
  }
  if (value < lo || value > hi) {
    throw UsageError(fmt::format("{} must be in [{}, {}], got {}", what, lo, hi, value));
  }
  return value;
}

void SpecOptions::add_to(CLI::App& app, bool required) {
  auto* k = app.add_option("kernel", kernel, "ln_fwd, ln_bwd, rms_fwd or rms_bwd");
  auto* w = app.add_option("--width", width, "elements per row, 1 to 65536");
  auto* d = app.add_option("--dtype", dtype, "x, y, dy, dx: f32, f16 or bf16");
  if (required) {
    k->required();
    w->required();
    d->required();
  }
  app.add_option("--weight-dtype", weight_dtype,
                 "w, b, dw, db: the input's dtype (default) or f32");
  app.add_option("--arch", arch, "sm_80, sm_90 or sm_100 (default sm_90; run/bench: the device's)");
  app.add_option("--ptx-version", ptx_version, "7.0 to 9.0 (default 7.8, or the arch's least)");
  add_knobs_to(app);
}

void SpecOptions::add_knobs_to(CLI::App& app) {
  const std::string group = "Knobs (unset: the shape heuristic decides)";
  app.add_option("--threads-per-row", threads_per_row, "a power of two <= 32, or a multiple of 32")
      ->group(group);
  app.add_option("--rows-per-cta", rows_per_cta, "rows one CTA handles")->group(group);
  app.add_option("--vector-elems", vector_elems, "elements per vector access: 1, 2, 4 or 8")
      ->group(group);
  app.add_option("--ctas-per-sm", ctas_per_sm, "persistent grid = SMs x this")->group(group);
  app.add_option("--sm-count", sm_count, "backward: SMs assumed when sizing the grid")
      ->group(group);
  app.add_option("--register-chunks", register_chunks,
                 "chunks of x (and dy) a thread keeps in registers between passes")
      ->group(group);
  app.add_option("--staged-chunks", staged_chunks,
                 "of the chunks not in registers, how many to stage in shared memory (the rest "
                 "are read again from global memory each pass)")
      ->group(group);
  app.add_option("--accumulator-register-chunks", accumulator_register_chunks,
                 "backward: chunks of the dw/db partials kept in registers")
      ->group(group);
  app.add_option("--max-registers", max_registers, "registers a thread (.maxnreg), 32 to 255")
      ->group(group);
  app.add_option("--prefetch-rows", prefetch_rows,
                 "1: persistent CTAs load the next row while working on this one; 2: the next "
                 "two rows, through shared memory; 0: not")
      ->group(group);
  app.add_option("--single-launch", single_launch,
                 "backward: 1 sums dw/db by columns in the same launch (x and dy read again); 0 "
                 "writes partial rows for a second launch (default: by batch)")
      ->group(group);
  app.add_option("--min-row-groups", min_row_groups,
                 "backward: rows (row groups) each CTA walks at least before the grid grows")
      ->group(group);
  app.add_option("--l2-stream", l2_stream,
                 "1: rows read and written with an L2 evict_first policy, weights evict_last")
      ->group(group);
}

namespace {

// Errors from the kernels' own parsers and `validate` name the value; on the command line they
// are usage errors.
template <class F>
auto usage(F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

std::optional<std::uint32_t> knob(std::string_view name, const std::string& text) {
  if (text.empty()) return std::nullopt;
  return static_cast<std::uint32_t>(parse_uint(name, text, 1, 1u << 20));
}

// A knob where 0 means "none" (chunk counts).
std::optional<std::uint32_t> knob0(std::string_view name, const std::string& text) {
  if (text.empty()) return std::nullopt;
  return static_cast<std::uint32_t>(parse_uint(name, text, 0, 1u << 20));
}

PtxVersion default_ptx_version(Arch arch) {
  return std::max(PtxVersion{7, 8}, min_ptx_version(arch));
}

}  // namespace

kernels::NormSpec SpecOptions::spec() const {
  kernels::NormSpec s;
  s.kind = usage([&] { return kernels::parse_kind(kernel); });
  s.dtype = usage([&] { return kernels::parse_dtype(dtype); });
  s.weight_dtype =
      weight_dtype.empty() ? s.dtype : usage([&] { return kernels::parse_dtype(weight_dtype); });
  if (s.weight_dtype != s.dtype && s.weight_dtype != kernels::DType::F32) {
    throw UsageError(fmt::format("--weight-dtype must be the input's dtype ({}) or f32, got '{}'",
                                 kernels::dtype_name(s.dtype), weight_dtype));
  }
  s.width = static_cast<std::uint32_t>(parse_uint("--width", width, 1, kernels::kMaxWidth));
  s.arch = arch.empty() ? Arch::Sm90 : usage([&] { return parse_arch(arch); });
  s.ptx_version = ptx_version.empty() ? default_ptx_version(s.arch)
                                      : usage([&] { return parse_ptx_version(ptx_version); });
  if (s.ptx_version < min_ptx_version(s.arch)) {
    const PtxVersion least = min_ptx_version(s.arch);
    throw UsageError(fmt::format("--ptx-version must be at least {}.{} for {}, got '{}'",
                                 least.major, least.minor, arch_name(s.arch), ptx_version));
  }
  s.knobs.threads_per_row = knob("--threads-per-row", threads_per_row);
  s.knobs.rows_per_cta = knob("--rows-per-cta", rows_per_cta);
  s.knobs.vector_elems = knob("--vector-elems", vector_elems);
  s.knobs.ctas_per_sm = knob("--ctas-per-sm", ctas_per_sm);
  s.knobs.sm_count = knob("--sm-count", sm_count);
  s.knobs.register_chunks = knob0("--register-chunks", register_chunks);
  s.knobs.staged_chunks = knob0("--staged-chunks", staged_chunks);
  s.knobs.accumulator_register_chunks =
      knob0("--accumulator-register-chunks", accumulator_register_chunks);
  s.knobs.max_registers = knob("--max-registers", max_registers);
  s.knobs.prefetch_rows = knob0("--prefetch-rows", prefetch_rows);
  s.knobs.single_launch = knob0("--single-launch", single_launch);
  s.knobs.l2_stream = knob0("--l2-stream", l2_stream);
  s.knobs.min_row_groups = knob("--min-row-groups", min_row_groups);
  usage([&] { kernels::validate(s); });
  return s;
}

runtime::NormOptions SpecOptions::norm_options(const kernels::NormSpec& spec) const {
  runtime::NormOptions o;
  o.knobs = spec.knobs;
  if (!arch.empty()) o.arch = spec.arch;
  if (!ptx_version.empty()) o.ptx_version = spec.ptx_version;
  return o;
}

kernels::NormSpec make_spec(kernels::NormKind kind, kernels::DType dtype, std::uint32_t width) {
  kernels::NormSpec s;
  s.kind = kind;
  s.dtype = dtype;
  s.weight_dtype = dtype;
  s.width = width;
  return s;
}

}  // namespace ptxdsl::cli
