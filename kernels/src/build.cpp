// NormSpec → BuiltNorm: validation, the plan, the kernels of each step, their launch rules.
#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "builders.hpp"
#include "ptxdsl/dsl/error.hpp"

namespace ptxdsl::kernels {
namespace detail {

std::string entry_name(const NormSpec& spec, std::string_view step) {
  // Narrower-vector variants (for unaligned rows) get their own names: "..._n4097_v2".
  const std::uint32_t vec = spec.knobs.vector_elems.value_or(default_vector_elems(spec.dtype));
  const std::string variant =
      vec == default_vector_elems(spec.dtype) ? "" : fmt::format("_v{}", vec);
  return fmt::format("{}{}{}_{}_w{}_n{}{}", kind_name(spec.kind), step.empty() ? "" : "_", step,
                     dtype_name(spec.dtype), dtype_name(spec.weight_dtype), spec.width, variant);
}

}  // namespace detail

namespace {

std::uint32_t ceil_div(std::uint32_t a, std::uint32_t b) {
  return (a + b - 1) / b;
}

void check_dtype(DType d, std::string_view what) {
  if (d != DType::F32 && d != DType::F16 && d != DType::BF16) {
    throw Error(fmt::format("{} must be one of f32, f16, bf16, got enum value {}", what,
                            static_cast<int>(d)));
  }
}

// A knob, when set, within [lo, hi].
void check_range(std::optional<std::uint32_t> v, std::string_view name, std::uint32_t lo,
                 std::uint32_t hi) {
  if (v && (*v < lo || *v > hi)) {
    throw Error(fmt::format("{} must be in [{}, {}], got {}", name, lo, hi, *v));
  }
}

// A knob, when set, one of 0, 1, ..., most ("0 or 1", "0, 1 or 2").
void check_choice(std::optional<std::uint32_t> v, std::string_view name, std::uint32_t most) {
  if (!v || *v <= most) return;
  std::string allowed = "0";
  for (std::uint32_t i = 1; i <= most; ++i)
    allowed += fmt::format("{}{}", i == most ? " or " : ", ", i);
  throw Error(fmt::format("{} must be {}, got {}", name, allowed, *v));
}

// A knob that, set above 0, needs sm_90 and PTX `least` for the instructions it emits.
void check_hopper_knob(const NormSpec& spec, std::optional<std::uint32_t> v, std::string_view name,
                       PtxVersion least, std::string_view instructions) {
  if (v.value_or(0) == 0 || (spec.arch >= Arch::Sm90 && spec.ptx_version >= least)) return;
  throw Error(fmt::format("{} {} needs sm_90 and PTX {}.{} or newer ({}), got {} and PTX {}.{}",
                          name, *v, least.major, least.minor, instructions, arch_name(spec.arch),
                          spec.ptx_version.major, spec.ptx_version.minor));
}

}  // namespace

void validate(const NormSpec& spec) {
  if (spec.kind != NormKind::LayerNormFwd && spec.kind != NormKind::LayerNormBwd &&
      spec.kind != NormKind::RmsNormFwd && spec.kind != NormKind::RmsNormBwd) {
    throw Error(
        fmt::format("kernel must be one of ln_fwd, ln_bwd, rms_fwd, rms_bwd, got enum value {}",
                    static_cast<int>(spec.kind)));
  }
  check_dtype(spec.dtype, "dtype");
  check_dtype(spec.weight_dtype, "weight dtype");
  if (spec.weight_dtype != spec.dtype && spec.weight_dtype != DType::F32) {
    if (spec.dtype == DType::F32) {
      throw Error(fmt::format("weight dtype must be f32 for f32 inputs, got {}",
                              dtype_name(spec.weight_dtype)));
    }
    throw Error(fmt::format("weight dtype must be {} (the input's) or f32, got {}",
                            dtype_name(spec.dtype), dtype_name(spec.weight_dtype)));
  }
  if (spec.width < 1 || spec.width > kMaxWidth) {
    throw Error(fmt::format("width must be in [1, {}], got {}", kMaxWidth, spec.width));
  }
  if (spec.device.sm_count == 0) {
    throw Error("the device model is empty: take one from device_preset() or the runtime");
  }
  if (spec.arch > spec.device.arch()) {
    throw Error(fmt::format("{} code does not run on {} (cc {}.{}, {} and older)",
                            arch_name(spec.arch), spec.device.name, spec.device.cc_major,
                            spec.device.cc_minor, arch_name(spec.device.arch())));
  }
  const NormKnobs& kn = spec.knobs;
  const std::uint32_t max_vec = 16 / static_cast<std::uint32_t>(dtype_bytes(spec.dtype));
  if (kn.vector_elems) {
    const std::uint32_t v = *kn.vector_elems;
    if (v == 0 || v > max_vec || !std::has_single_bit(v)) {
      throw Error(fmt::format("vector_elems must be a power of two in [1, {}] for {}, got {}",
                              max_vec, dtype_name(spec.dtype), v));
    }
  }
  if (kn.threads_per_row) {
    const std::uint32_t t = *kn.threads_per_row;
    const bool ok =
        (t >= 1 && t <= 32 && std::has_single_bit(t)) || (t % 32 == 0 && t >= 32 && t <= 1024);
    if (!ok) {
      throw Error(
          fmt::format("threads_per_row must be a power of two ≤ 32 or a multiple of 32 in "
                      "[32, 1024], got {}",
                      t));
    }
  }
  check_range(kn.rows_per_cta, "rows_per_cta", 1, 1024);
  check_range(kn.ctas_per_sm, "ctas_per_sm", 1, 32);
  check_range(kn.max_registers, "max_registers", 32, 255);
  check_choice(kn.prefetch_rows, "prefetch_rows", 4);
  check_choice(kn.single_launch, "single_launch", 1);
  check_range(kn.loop_group, "loop_group", 1, 16);
  check_choice(kn.l1_rereads, "l1_rereads", 1);
  if (const std::uint32_t bytes = kn.l2_prefetch.value_or(0);
      bytes != 0 && bytes != 64 && bytes != 128 && bytes != 256) {
    throw Error(fmt::format("l2_prefetch must be 0, 64, 128 or 256 (bytes), got {}", bytes));
  }
  check_choice(kn.one_pass_stats, "one_pass_stats", 1);
  check_choice(kn.weight_prefetch, "weight_prefetch", 1);
  check_choice(kn.row_nc, "row_nc", 1);
  check_choice(kn.early_weights, "early_weights", 1);
  check_choice(kn.bulk_rows, "bulk_rows", 1);
  check_choice(kn.row_order, "row_order", 4);
  check_choice(kn.deterministic, "deterministic", 1);
  check_hopper_knob(spec, kn.bulk_rows, "bulk_rows", {8, 0}, "cp.async.bulk");
  check_choice(kn.overlap_reduce, "overlap_reduce", 2);
  check_hopper_knob(spec, kn.overlap_reduce, "overlap_reduce", {7, 8}, "griddepcontrol");
  if (kn.reduce_slices && (*kn.reduce_slices > 32 || !std::has_single_bit(*kn.reduce_slices))) {
    throw Error(
        fmt::format("reduce_slices must be 1, 2, 4, 8, 16 or 32, got {}", *kn.reduce_slices));
  }
  check_range(kn.min_row_groups, "min_row_groups", 1, 1024);
  check_choice(kn.l2_stream, "l2_stream", 2);
  if (kn.l2_stream.value_or(0) > 0 && spec.ptx_version < PtxVersion{7, 4}) {
    throw Error(fmt::format("l2_stream {} needs PTX 7.4 or newer (createpolicy), got {}.{}",
                            *kn.l2_stream, spec.ptx_version.major, spec.ptx_version.minor));
  }
  check_range(kn.sm_count, "sm_count", 1, 1024);
  const detail::Plan p = detail::plan_norm(spec);
  if (p.block() % 32 != 0 || p.block() > 1024) {
    throw Error(
        fmt::format("threads_per_row × rows_per_cta must be a multiple of 32 in [32, 1024], "
                    "got {} × {} = {}",
                    p.threads_per_row, p.rows_per_cta, p.block()));
  }
  if (p.ring && p.register_chunks() != p.chunks) {
    throw Error(
        fmt::format("prefetch_rows {} needs every chunk of the row in registers, but {} of "
                    "the {} are not; use register_chunks {} or prefetch_rows 1",
                    p.ring_rows, p.chunks - p.register_chunks(), p.chunks, p.chunks));
  }
  const std::uint32_t vector_bytes = p.vec * static_cast<std::uint32_t>(dtype_bytes(spec.dtype));
  if (p.ring && vector_bytes < 4) {
    throw Error(
        fmt::format("prefetch_rows {} copies vectors of 4 to 16 bytes by cp.async; "
                    "vector_elems {} of {} is {} bytes",
                    p.ring_rows, p.vec, dtype_name(spec.dtype), vector_bytes));
  }
  const std::uint32_t budget = detail::shared_budget(spec.device);
  const std::uint32_t shared = p.dynamic_shared_bytes(spec);
  if (shared > budget) {
    throw Error(
        fmt::format("the kernel needs {} bytes of shared memory, more than the {} that {} "
                    "allows; use fewer rows_per_cta or more threads_per_row",
                    shared, budget, spec.device.name));
  }
  if (const auto misfit = spec.device.block_misfit(p.block(), p.max_registers, shared)) {
    throw Error(fmt::format("the kernel does not fit the device: {}", *misfit));
  }
}

void check_knobs_apply(const NormSpec& spec) {
  const NormKnobs& kn = spec.knobs;
  const bool backward = is_backward(spec.kind);
  struct Scoped {
    const std::optional<std::uint32_t>& value;
    std::string_view name;
    bool applies;
    std::string_view to;  // the kernels it applies to
  };
  const Scoped scoped[] = {
      {kn.single_launch, "single_launch", backward, "the backwards"},
      {kn.accumulator_register_chunks, "accumulator_register_chunks", backward, "the backwards"},
      {kn.overlap_reduce, "overlap_reduce", backward, "the backwards"},
      {kn.reduce_slices, "reduce_slices", backward, "the backwards"},
      {kn.deterministic, "deterministic", backward, "the backwards"},
      {kn.min_row_groups, "min_row_groups", backward, "the backwards"},
      {kn.weight_prefetch, "weight_prefetch", !backward, "the forwards"},
      {kn.early_weights, "early_weights", !backward, "the forwards"},
      {kn.bulk_rows, "bulk_rows", !backward, "the forwards"},
      {kn.one_pass_stats, "one_pass_stats", spec.kind == NormKind::LayerNormFwd, "ln_fwd"},
  };
  for (const Scoped& k : scoped) {
    if (k.value && !k.applies) {
      throw Error(fmt::format("{} applies to {} only; {} would ignore {} {}", k.name, k.to,
                              kind_name(spec.kind), k.name, *k.value));
    }
  }
  const std::uint32_t order = kn.row_order.value_or(0);
  if (order == 2 || order == 3) {
    if (!backward) {
      throw Error(fmt::format(
          "row_order {} takes rows from a counter in a backward's workspace; {} has none (use "
          "0, 1 or 4)",
          order, kind_name(spec.kind)));
    }
    if (kn.single_launch.value_or(0) == 1) {
      throw Error(fmt::format(
          "row_order {} hands out rows that a second launch reduces; single_launch 1 has no "
          "second launch (use single_launch 0, or row_order 0, 1 or 4)",
          order));
    }
  }
  validate(spec);
}

void check_batch(std::uint32_t batch) {
  if (batch < 1) throw Error(fmt::format("batch must be ≥ 1, got {}", batch));
}

void check_stride(std::uint32_t width, std::uint32_t stride) {
  if (stride < width) {
    throw Error(fmt::format("stride must be ≥ the width ({}), got {}", width, stride));
  }
}

std::uint32_t vector_elems_for(DType dtype, DType weight_dtype, std::uint32_t stride,
                               std::uint64_t row_address_bits, std::uint64_t weight_address_bits) {
  const auto s = static_cast<std::uint64_t>(dtype_bytes(dtype));
  const auto ws = static_cast<std::uint64_t>(dtype_bytes(weight_dtype));
  for (std::uint32_t v = static_cast<std::uint32_t>(16 / s); v > 1; v /= 2) {
    const bool rows = stride % v == 0 && row_address_bits % (v * s) == 0;
    const bool weights = weight_address_bits % std::min<std::uint64_t>(16, v * ws) == 0;
    if (rows && weights) return v;
  }
  return 1;
}

std::uint32_t GridRule::grid(std::uint32_t batch, std::uint32_t width) const {
  switch (kind) {
    case Kind::RowsPerCta:
      return ceil_div(batch, rows_per_cta);
    case Kind::Persistent: {
      const std::uint32_t groups = ceil_div(batch, rows_per_cta);
      return std::max(
          1u,
          std::min(max_ctas, std::max(min_ctas, ceil_div(groups, std::max(1u, min_row_groups)))));
    }
    case Kind::Columns:
      return ceil_div(width, columns_per_cta);
  }
  return 0;
}

std::string GridRule::describe() const {
  switch (kind) {
    case Kind::RowsPerCta:
      return rows_per_cta == 1 ? "batch" : fmt::format("ceil(batch / {})", rows_per_cta);
    case Kind::Persistent:
      if (min_ctas > 0) {
        return fmt::format("min({}, max({}, ceil(ceil(batch / {}) / {})))", max_ctas, min_ctas,
                           rows_per_cta, min_row_groups);
      }
      return fmt::format("min({}, ceil(ceil(batch / {}) / {}))", max_ctas, rows_per_cta,
                         min_row_groups);
    case Kind::Columns:
      return fmt::format("ceil(width / {})", columns_per_cta);
  }
  return "?";
}

std::uint32_t BuiltNorm::partial_rows(std::uint32_t batch) const {
  if (!is_backward(spec.kind) || steps.size() < 2) return 0;  // the forward, or one launch
  return steps[0].grid.grid(batch, spec.width);
}

std::uint64_t BuiltNorm::partial_dw_offset() const {
  return ticketed_rows ? kRowCounterSpan : 0;
}

std::uint64_t BuiltNorm::partial_db_offset(std::uint32_t batch) const {
  return partial_dw_offset() + static_cast<std::uint64_t>(partial_rows(batch)) * partial_pitch * 4;
}

std::uint64_t BuiltNorm::workspace_bytes(std::uint32_t batch) const {
  const std::uint64_t tensors = spec.kind == NormKind::LayerNormBwd ? 2 : 1;
  return partial_dw_offset() + (partial_db_offset(batch) - partial_dw_offset()) * tensors;
}

BuiltNorm build_norm(const NormSpec& spec) {
  validate(spec);
  const detail::Plan plan = detail::plan_norm(spec);
  auto module = std::make_shared<Module>(spec.arch, spec.ptx_version);
  BuiltNorm out;
  out.spec = spec;
  if (is_backward(spec.kind)) {
    out.steps.push_back(detail::build_backward(*module, spec, plan));
    if (!plan.single_launch) {
      out.steps.push_back(detail::build_column_reduce(*module, spec, plan));
      out.partial_pitch = detail::partial_pitch(spec.width);
    }
    out.chosen.single_launch = plan.single_launch ? 1u : 0u;
    out.ticketed_rows = plan.ticketed_rows;
    out.chosen.overlap_reduce = plan.overlap_reduce;
    if (!plan.single_launch) out.chosen.reduce_slices = plan.reduce_slices;
    // dw and db add up in a fixed order unless CTAs take their rows from a counter.
    out.chosen.deterministic = plan.ticketed_rows ? 0u : 1u;
    out.chosen.accumulator_register_chunks = static_cast<std::uint32_t>(
        std::count(plan.accum.begin(), plan.accum.end(), detail::Place::Registers));
  } else {
    out.steps.push_back(detail::build_forward(*module, spec, plan));
  }
  if (plan.persistent) {
    out.chosen.row_order = plan.ticketed_tail   ? 3u
                           : plan.ticketed_rows ? 2u
                           : plan.blocked_rows  ? 1u
                           : plan.rotated_rows  ? 4u
                                                : 0u;
    out.chosen.ctas_per_sm = plan.ctas_per_sm;
    out.chosen.sm_count = plan.sm_count;
  }
  out.chosen.prefetch_rows = plan.ring ? plan.ring_rows : plan.prefetch ? 1u : 0u;
  out.chosen.threads_per_row = plan.threads_per_row;
  out.chosen.rows_per_cta = plan.rows_per_cta;
  out.chosen.vector_elems = plan.vec;
  out.chosen.max_registers = plan.max_registers;
  out.chosen.register_chunks = static_cast<std::uint32_t>(
      std::count(plan.data.begin(), plan.data.end(), detail::Place::Registers));
  out.chosen.staged_chunks = plan.staged_chunks();
  out.chosen.l2_stream = plan.l2_stream;
  out.chosen.loop_group = plan.loop_group;
  out.chosen.l1_rereads = plan.l1_rereads ? 1u : 0u;
  out.chosen.l2_prefetch = plan.l2_prefetch;
  out.chosen.row_nc = plan.row_nc ? 1u : 0u;
  if (!is_backward(spec.kind)) {
    out.chosen.weight_prefetch = plan.weight_prefetch ? 1u : 0u;
    out.chosen.bulk_rows = plan.bulk_rows ? 1u : 0u;
    // Held only where some chunk of the row is in registers.
    out.chosen.early_weights = plan.early_weights && std::count(plan.data.begin(), plan.data.end(),
                                                                detail::Place::Registers) > 0
                                   ? 1u
                                   : 0u;
  }
  if (is_backward(spec.kind)) out.chosen.min_row_groups = plan.min_row_groups_per_cta;
  if (spec.kind == NormKind::LayerNormFwd)
    out.chosen.one_pass_stats = plan.one_pass_stats ? 1u : 0u;
  out.ptx = module->emit();
  out.module = std::move(module);
  return out;
}

}  // namespace ptxdsl::kernels
