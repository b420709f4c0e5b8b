// NormSpec → BuiltNorm: validation, the plan, the kernels of each step, their launch rules.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "builders.hpp"
#include "ptxdsl/dsl/error.hpp"

namespace ptxdsl::kernels {
namespace detail {

std::string entry_name(const NormSpec& spec, std::string_view step) {
  // Narrower-vector variants (for unaligned rows) get their own names: "..._n4097_v2".
  const std::uint32_t vec = vector_elems_of(spec);
  const std::string variant =
      vec == default_vector_elems(spec.dtype) ? "" : fmt::format("_v{}", vec);
  return fmt::format("{}{}{}_{}_w{}_n{}{}{}", kind_name(spec.kind), step.empty() ? "" : "_", step,
                     dtype_name(spec.dtype), dtype_name(spec.weight_dtype), spec.width, variant,
                     variant_suffix(spec));
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

// A knob that is on emits instructions that need its table's least arch and PTX version.
template <class T>
void check_knob_target(const NormSpec& spec, const KnobInfo& info, T v) {
  if (!knob_on(v) || (spec.arch >= info.least_arch && spec.ptx_version >= info.least_ptx)) return;
  throw Error(fmt::format("{} {} needs {} and PTX {}.{} or newer, got {} and PTX {}.{}", info.name,
                          format_knob(v), arch_name(info.least_arch), info.least_ptx.major,
                          info.least_ptx.minor, arch_name(spec.arch), spec.ptx_version.major,
                          spec.ptx_version.minor));
}

// The variant fields: values of their enums, and combinations the kernels have.
void check_variant(const NormSpec& spec) {
  if (affine_name(spec.affine) == "?") {
    throw Error(fmt::format("affine must be one of full, weight, none, got enum value {}",
                            static_cast<int>(spec.affine)));
  }
  if (residual_name(spec.residual) == "?") {
    throw Error(fmt::format("residual must be one of none, add, add_f32, got enum value {}",
                            static_cast<int>(spec.residual)));
  }
  if (outputs_name(spec.outputs) == "?") {
    throw Error(fmt::format("outputs must be one of all, dx, got enum value {}",
                            static_cast<int>(spec.outputs)));
  }
  if (spec.affine == Affine::Weight && !is_layer_norm(spec.kind)) {
    throw Error(fmt::format(
        "affine weight is layer norm's w without b; {} has no bias (its full affine is w alone)",
        kind_name(spec.kind)));
  }
  if (spec.outputs != Outputs::All && !is_backward(spec.kind)) {
    throw Error(fmt::format("outputs {} chooses a backward's gradients; {} is a forward",
                            outputs_name(spec.outputs), kind_name(spec.kind)));
  }
  if (casting_name(spec.casting) == "?") {
    throw Error(fmt::format("casting must be one of none, llama, gemma, got enum value {}",
                            static_cast<int>(spec.casting)));
  }
  if (quant_name(spec.quant) == "?") {
    throw Error(
        fmt::format("quant must be one of none, fp8-e4m3, fp8-e5m2, int8, mxfp8, got enum value {}",
                    static_cast<int>(spec.quant)));
  }
  if (spec.quant != Quant::None && is_backward(spec.kind)) {
    throw Error(fmt::format("quant {} is a forward's output; {} is a backward",
                            quant_name(spec.quant), kind_name(spec.kind)));
  }
  if (quant_scale_name(spec.quant_scale) == "?") {
    throw Error(
        fmt::format("quant scale must be one of per-token, static, group128, got enum value {}",
                    static_cast<int>(spec.quant_scale)));
  }
  if (spec.quant == Quant::None && spec.quant_scale != QuantScale::PerToken) {
    throw Error(fmt::format("quant scale {} scales a quantized y; quant is none (give a format)",
                            quant_scale_name(spec.quant_scale)));
  }
  if (quant_block(spec.quant) > 0 && spec.quant_scale != QuantScale::PerToken) {
    throw Error(fmt::format(
        "quant {} has its own scales (one per {} elements); quant scale must be per-token "
        "(the default), got {}",
        quant_name(spec.quant), quant_block(spec.quant), quant_scale_name(spec.quant_scale)));
  }
  if (quant_block(spec.quant) > 0 && spec.arch != Arch::Sm100a) {
    throw Error(fmt::format(
        "quant {} feeds Blackwell's block-scaled matrix products: it needs sm_100a, got {}",
        quant_name(spec.quant), arch_name(spec.arch)));
  }
  if (quant_element_type(spec.quant) == ScalarType::E2M1x2) {
    if (spec.width % 2 != 0) {
      throw Error(fmt::format("quant {} packs two elements a byte: the width must be even, got {}",
                              quant_name(spec.quant), spec.width));
    }
    if (spec.row_groups != 1) {
      throw Error(fmt::format("quant {} takes rows of one level; row groups must be 1, got {}",
                              quant_name(spec.quant), spec.row_groups));
    }
  }
  if (quant_scale_layout_name(spec.quant_scale_layout) == "?") {
    throw Error(
        fmt::format("quant scale layout must be one of row-major, cublas, got enum value {}",
                    static_cast<int>(spec.quant_scale_layout)));
  }
  if (spec.quant_scale_layout != QuantScaleLayout::RowMajor && quant_block(spec.quant) == 0) {
    throw Error(
        fmt::format("quant scale layout {} lays out block scales (mxfp8, nvfp4); quant {} has none",
                    quant_scale_layout_name(spec.quant_scale_layout), quant_name(spec.quant)));
  }
  // The DSL's instruction table has cvt to e4m3x2/e5m2x2 from sm_90 (sm_89's PTX 8.1 aside).
  if ((spec.quant == Quant::Fp8E4m3 || spec.quant == Quant::Fp8E5m2) && spec.arch < Arch::Sm90) {
    throw Error(
        fmt::format("quant {} converts with cvt e4m3x2/e5m2x2, which needs sm_90 or newer, "
                    "got {}",
                    quant_name(spec.quant), arch_name(spec.arch)));
  }
  if (!std::isfinite(spec.weight_offset)) {
    throw Error(fmt::format("weight offset must be a finite number (Gemma's is 1), got {}",
                            spec.weight_offset));
  }
  if (spec.weight_offset != 0.0f && !has_weight(spec)) {
    throw Error(
        fmt::format("weight offset {} is added to w; affine none has no w (full or weight "
                    "take it)",
                    spec.weight_offset));
  }
  if (spec.residual == Residual::AddF32 && is_backward(spec.kind)) {
    throw Error(
        fmt::format("residual add_f32 is a forward's (h in f32); {} takes residual add, "
                    "with h and dh in the dtype",
                    kind_name(spec.kind)));
  }
}

// Two-level rows: groups within their range, a group's rows apart by at least the width, in whole
// vectors, and a group's span within 32 bits (row offsets within a group are 32-bit).
void check_row_groups(const NormSpec& spec) {
  const std::uint32_t g = spec.row_groups, s = spec.group_stride;
  if (g < 1 || g > kMaxRowGroups) {
    throw Error(fmt::format("row groups must be in [1, {}], got {}", kMaxRowGroups, g));
  }
  if (g == 1) {
    if (s != 0) {
      throw Error(fmt::format(
          "group stride {} spaces the rows of a group; row groups 1 has none (give row groups)",
          s));
    }
    return;
  }
  if (s < spec.width) {
    throw Error(fmt::format("group stride must be at least the width ({}), got {}", spec.width, s));
  }
  const std::uint32_t vec = detail::vector_elems_of(spec);
  if (s % vec != 0) {
    throw Error(fmt::format(
        "group stride must be a multiple of the vector ({} elements; narrower vectors by "
        "vector_elems), got {}",
        vec, s));
  }
  if (row_span(spec) > 0xffffffffu) {
    throw Error(fmt::format("row groups {} of group stride {} span {} elements, more than 2^32 - 1",
                            g, s, row_span(spec)));
  }
}

// Deterministic portable pins whatever would make the order of dw's and db's sums follow the
// plan: a plan that a knob moves off those pins is refused, naming the knob.
void check_portable(const NormSpec& spec, const detail::Plan& p) {
  if (!detail::portable_sums(spec)) return;
  const auto refuse = [](std::string_view why) {
    throw Error(
        fmt::format("deterministic portable sums dw and db in an order the batch alone "
                    "fixes; {}",
                    why));
  };
  if (p.weight_grads != detail::WeightGrads::PartialRows) {
    refuse("single_launch 1 sums them by the device's tiles of columns: leave it out");
  }
  if (p.row_order == RowOrder::Tickets) refuse("row_order tickets hands rows out as CTAs ask");
  if (p.partial_cluster > 1) {
    refuse(fmt::format("partial_cluster {} adds CTAs' partial rows up: leave it out",
                       p.partial_cluster));
  }
  if (p.reduce_slices != p.portable.slices) {
    refuse(fmt::format("its column reduce adds {} slices, got reduce_slices {}", p.portable.slices,
                       p.reduce_slices));
  }
  if (p.portable.least % p.rows_per_cta != 0) {
    refuse(fmt::format("a row of {} bytes takes rows_per_cta dividing {}, got {}",
                       std::uint64_t{spec.width} * dtype_bytes(spec.dtype), p.portable.least,
                       p.rows_per_cta));
  }
}

}  // namespace

PtxVersion default_ptx_version(Arch arch) {
  return std::max(arch >= Arch::Sm90 ? PtxVersion{8, 1} : PtxVersion{7, 8}, min_ptx_version(arch));
}

void detail::check_spec(const NormSpec& spec) {
  if (spec.kind != NormKind::LayerNormFwd && spec.kind != NormKind::LayerNormBwd &&
      spec.kind != NormKind::RmsNormFwd && spec.kind != NormKind::RmsNormBwd) {
    throw Error(
        fmt::format("kernel must be one of ln_fwd, ln_bwd, rms_fwd, rms_bwd, got enum value {}",
                    static_cast<int>(spec.kind)));
  }
  check_dtype(spec.dtype, "dtype");
  check_dtype(spec.weight_dtype, "weight dtype");
  check_variant(spec);
  check_weight_dtype(spec.dtype, spec.weight_dtype);
  if (spec.width < 1 || spec.width > kMaxWidth) {
    throw Error(fmt::format("width must be in [1, {}], got {}", kMaxWidth, spec.width));
  }
  if (spec.device.sm_count == 0) {
    throw Error("the device model is empty: take one from device_preset() or the runtime");
  }
  if (!spec.device.runs(spec.arch)) {
    throw Error(fmt::format(
        "{} code does not run on {} (cc {}.{}, whose newest target is {})", arch_name(spec.arch),
        spec.device.name, spec.device.cc_major, spec.device.cc_minor,
        arch_name(newest_arch_for_compute_capability(spec.device.cc_major, spec.device.cc_minor))));
  }
  const NormKnobs& kn = spec.knobs;
  // The vector's bound is the dtype's (16 bytes), tighter than the table's for f32.
  const std::uint32_t max_vec = max_vector_elems(detail::element_type(spec.dtype));
  if (kn.vector_elems && (*kn.vector_elems > max_vec || !std::has_single_bit(*kn.vector_elems))) {
    throw Error(fmt::format("vector_elems must be a power of two in [1, {}] for {}, got {}",
                            max_vec, dtype_name(spec.dtype), *kn.vector_elems));
  }
  check_row_groups(spec);
  for_each_knob(kn, [&](const KnobInfo& info, const auto& v) {
    if (!v) return;
    check_knob(info, *v);
    check_knob_target(spec, info, *v);
  });
  // A knob that launches clusters of c CTAs: sm_90 or newer, within the device's largest cluster.
  const auto check_cluster = [&](std::string_view knob, std::uint32_t c) {
    if (spec.arch < Arch::Sm90) {
      throw Error(fmt::format("{} {} needs thread-block clusters: sm_90 or newer, got {}", knob, c,
                              arch_name(spec.arch)));
    }
    if (c > spec.device.largest_cluster()) {
      throw Error(fmt::format("{} {} is more than the {} CTAs a cluster of {} may have", knob, c,
                              spec.device.largest_cluster(), spec.device.name));
    }
  };
  if (kn.cluster_ctas && *kn.cluster_ctas > 1) {
    const std::uint32_t c = *kn.cluster_ctas;
    check_cluster("cluster_ctas", c);
    detail::split_row(spec, c);
    const std::string conflict = detail::cluster_knob_conflict(spec, c);
    if (!conflict.empty()) throw Error(conflict);
  }
  if (kn.partial_cluster && *kn.partial_cluster > 1)
    check_cluster("partial_cluster", *kn.partial_cluster);
}

namespace {

// A scale over groups narrower than the row takes each group's absmax with shuffles among the
// lanes that hold it: a chunk holds whole groups, each within a warp (vectors of at least
// group / 32 elements). A row no wider than a group is one group, reduced as a per-token row.
void check_quant_groups(const NormSpec& spec, const detail::Plan& p) {
  if (quant_element_type(spec.quant) == ScalarType::E2M1x2 && p.vec < 2) {
    throw Error(fmt::format(
        "quant {} packs two elements a byte from one thread's vector: it needs vectors of at "
        "least 2 elements, got {} (the rows' stride and addresses allow no wider)",
        quant_name(spec.quant), p.vec));
  }
  const std::uint32_t group = quant_group(spec);
  if (group == 0 || spec.width <= group) return;
  const std::string what = quant_block(spec.quant) > 0
                               ? fmt::format("quant {}", quant_name(spec.quant))
                               : fmt::format("quant scale {}", quant_scale_name(spec.quant_scale));
  const std::uint32_t least_vec = std::max(1u, group / 32);
  if (p.vec < least_vec) {
    throw Error(fmt::format(
        "{} takes each {}-element group's absmax within a warp: it needs vectors of at least {} "
        "elements, got {} (the rows' stride and addresses allow no wider)",
        what, group, least_vec, p.vec));
  }
  if (p.threads_per_row * p.vec % group != 0) {
    throw Error(fmt::format(
        "{}: a chunk of threads_per_row {} × vector {} elements must hold whole {}-element groups",
        what, p.threads_per_row, p.vec, group));
  }
}

}  // namespace

void detail::check_plan(const NormSpec& spec, const detail::Plan& p) {
  const NormKnobs& kn = spec.knobs;
  // The one-launch backward (single_launch, which the runtime sets for small batches) has no
  // partial rows: the knob is moot there, as cluster-split rows and tickets are not.
  if (kn.partial_cluster.value_or(1) > 1 && is_backward(spec.kind) &&
      p.weight_grads == detail::WeightGrads::PartialRows) {
    if (p.partial_cluster == 1) {
      throw Error(fmt::format(
          "partial_cluster {} sums the partial rows of CTAs that each walk whole rows in a fixed "
          "order: it takes no row_order tickets",
          *kn.partial_cluster));
    }
    if (std::count(p.accum.begin(), p.accum.end(), detail::Place::Global) > 0) {
      throw Error(fmt::format(
          "partial_cluster {} adds up partial sums held in registers and shared memory, and "
          "this plan keeps some of a {}-wide row's in global memory: it takes none",
          *kn.partial_cluster, spec.width));
    }
  }
  check_portable(spec, p);
  if (spec.quant != Quant::None && p.cluster_ctas > 1) {
    throw Error(fmt::format(
        "quant {} takes absmax over a row held by one CTA; width {} ({} bytes of {}) splits "
        "over a cluster of {} CTAs on {}: quantized rows stop at the widest one CTA holds "
        "(64 KiB on h100 and h200)",
        quant_name(spec.quant), spec.width, spec.width * dtype_bytes(spec.dtype),
        dtype_name(spec.dtype), p.cluster_ctas, spec.device.name));
  }
  check_quant_groups(spec, p);
  if (p.block() % 32 != 0 || p.block() > 1024) {
    throw Error(
        fmt::format("threads_per_row × rows_per_cta must be a multiple of 32 in [32, 1024], "
                    "got {} × {} = {}",
                    p.threads_per_row, p.rows_per_cta, p.block()));
  }
  const bool ringed = p.lookahead == detail::Lookahead::Ring;
  if (ringed && p.register_chunks() != p.chunks) {
    throw Error(
        fmt::format("prefetch_rows {} needs every chunk of the row in registers, but {} of "
                    "the {} are not; use register_chunks {} or prefetch_rows 1",
                    p.ring_rows, p.chunks - p.register_chunks(), p.chunks, p.chunks));
  }
  const std::uint32_t vector_bytes = p.vec * static_cast<std::uint32_t>(dtype_bytes(spec.dtype));
  if (ringed && vector_bytes < 4) {
    throw Error(
        fmt::format("prefetch_rows {} copies vectors of 4 to 16 bytes by cp.async; "
                    "vector_elems {} of {} is {} bytes",
                    p.ring_rows, p.vec, dtype_name(spec.dtype), vector_bytes));
  }
  if (p.shared_weights && p.grid != detail::Grid::Persistent) {
    throw Error(
        "shared_weights 1 copies w and b into shared memory once for the rows a persistent CTA "
        "walks; this forward takes one row group a CTA: add prefetch_rows 1 to 4");
  }
  const std::uint32_t budget = detail::shared_budget(spec.device);
  const std::uint32_t shared = p.dynamic_shared_bytes(spec);
  if (shared > budget) {
    const std::string way_out =
        p.partial_cluster > 1
            ? fmt::format("partial_cluster {}'s merge region takes {} of them: leave it out",
                          p.partial_cluster, p.shared_layout(spec).merge.bytes)
            : std::string("use fewer rows_per_cta or more threads_per_row");
    throw Error(
        fmt::format("the kernel needs {} bytes of shared memory, more than the {} that {} "
                    "allows; {}",
                    shared, budget, spec.device.name, way_out));
  }
  if (const auto misfit = spec.device.block_misfit(p.block(), p.max_registers, shared)) {
    throw Error(fmt::format("the kernel does not fit the device: {}", *misfit));
  }
}

void validate(const NormSpec& spec) {
  resolve(spec);
}

bool knob_applies(KnobScope scope, NormKind kind) {
  switch (scope) {
    case KnobScope::All:
      return true;
    case KnobScope::Forwards:
      return !is_backward(kind);
    case KnobScope::Backwards:
      return is_backward(kind);
    case KnobScope::LayerNormForward:
      return kind == NormKind::LayerNormFwd;
  }
  return false;
}

void check_knobs_apply(const NormSpec& spec) {
  const NormKnobs& kn = spec.knobs;
  for_each_knob(kn, [&](const KnobInfo& info, const auto& v) {
    if (!v || knob_applies(info.scope, spec.kind)) return;
    const std::string_view to = info.scope == KnobScope::Forwards    ? "the forwards"
                                : info.scope == KnobScope::Backwards ? "the backwards"
                                                                     : "ln_fwd";
    throw Error(fmt::format("{} applies to {} only; {} would ignore {} {}", info.name, to,
                            kind_name(spec.kind), info.name, format_knob(*v)));
  });
  if (kn.row_order == RowOrder::Tickets) {
    if (!is_backward(spec.kind)) {
      throw Error(fmt::format(
          "row_order tickets takes rows from a counter in a backward's workspace; {} has none "
          "(use fixed)",
          kind_name(spec.kind)));
    }
    if (kn.single_launch == true) {
      throw Error(
          "row_order tickets hands out rows that a second launch reduces; single_launch 1 has no "
          "second launch (use single_launch 0, or row_order fixed)");
    }
  }
}

void check_weight_dtype(DType dtype, DType weight_dtype) {
  if (weight_dtype != dtype && weight_dtype != DType::F32) {
    if (dtype == DType::F32) {
      throw Error(
          fmt::format("weight dtype must be f32 for f32 inputs, got {}", dtype_name(weight_dtype)));
    }
    throw Error(fmt::format("weight dtype must be {} (the input's) or f32, got {}",
                            dtype_name(dtype), dtype_name(weight_dtype)));
  }
}

void check_batch(std::uint32_t batch) {
  if (batch < 1 || batch > kMaxBatch) {
    throw Error(fmt::format("batch must be in [1, {}], got {}", kMaxBatch, batch));
  }
}

void check_stride(std::uint32_t width, std::uint32_t stride) {
  if (stride < width) {
    throw Error(fmt::format("stride must be ≥ the width ({}), got {}", width, stride));
  }
}

std::uint32_t vector_elems_for(DType dtype, DType weight_dtype, std::uint32_t stride,
                               std::uint64_t row_address_bits, std::uint64_t weight_address_bits,
                               DType residual_dtype, std::uint64_t residual_address_bits) {
  const std::uint32_t v =
      ptxdsl::vector_elems_for(detail::element_type(dtype), stride, row_address_bits);
  // The weights have no stride, and the residual's rows share x's: only their addresses bound it.
  const ScalarType weights = detail::element_type(weight_dtype);
  const ScalarType residuals = detail::element_type(residual_dtype);
  for (std::uint32_t w = v; w > 1; w /= 2) {
    if (vector_aligned(weights, w, weight_address_bits) &&
        vector_aligned(residuals, w, residual_address_bits)) {
      return w;
    }
  }
  return 1;
}

std::uint32_t GridRule::grid(std::uint32_t batch, std::uint32_t width) const {
  switch (kind) {
    case Kind::RowsPerCta: {
      const std::uint64_t ctas = std::uint64_t{ceil_div(batch, rows_per_cta)} * cluster_ctas;
      if (ctas > kMaxBatch) {
        throw Error(
            fmt::format("batch {} split over clusters of {} CTAs needs {} CTAs, more than "
                        "a grid's {}: at most {} rows",
                        batch, cluster_ctas, ctas, kMaxBatch,
                        std::uint64_t{kMaxBatch} / cluster_ctas * rows_per_cta));
      }
      return static_cast<std::uint32_t>(ctas);
    }
    case Kind::Persistent: {
      // Clusters of cluster_ctas CTAs (1: single CTAs) walk the row groups.
      const std::uint32_t groups = ceil_div(batch, rows_per_cta);
      const std::uint32_t c = cluster_ctas;
      if (portable.on()) return c * std::min(portable.partial_rows(batch) / rows_per_cta, groups);
      const std::uint32_t walkers = std::max(
          1u, std::min(
                  std::max(1u, max_ctas / c),
                  std::max(ceil_div(min_ctas, c), ceil_div(groups, std::max(1u, min_row_groups)))));
      return c * walkers;
    }
    case Kind::Columns:
      return ceil_div(width, columns_per_cta);
  }
  return 0;
}

std::string GridRule::describe() const {
  switch (kind) {
    case Kind::RowsPerCta: {
      const std::string groups =
          rows_per_cta == 1 ? "batch" : fmt::format("ceil(batch / {})", rows_per_cta);
      return cluster_ctas == 1 ? groups : fmt::format("{} * {}", groups, cluster_ctas);
    }
    case Kind::Persistent:
      if (portable.on()) {
        return fmt::format(
            "{}min(Q / {}, ceil(batch / {})), Q = clamp(bit_ceil(ceil(batch / {})), {}, {})",
            cluster_ctas > 1 ? fmt::format("{} * ", cluster_ctas) : "", rows_per_cta, rows_per_cta,
            portable.rows_a_partial, portable.least, portable.most);
      }
      if (cluster_ctas > 1) {
        return fmt::format("{} * min({}, ceil(ceil(batch / {}) / {}))", cluster_ctas,
                           std::max(1u, max_ctas / cluster_ctas), rows_per_cta, min_row_groups);
      }
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
  // A partial row a cluster (a CTA where rows are not split); a row slot's under portable.
  const GridRule& g = steps[0].grid;
  return g.grid(batch, spec.width) / g.cluster_ctas * (g.portable.on() ? g.rows_per_cta : 1);
}

std::uint64_t BuiltNorm::partial_dw_offset() const {
  return ticketed_rows ? kRowCounterSpan : 0;
}

std::uint64_t BuiltNorm::partial_db_offset(std::uint32_t batch) const {
  return partial_dw_offset() + static_cast<std::uint64_t>(partial_rows(batch)) * partial_pitch * 4;
}

std::uint64_t BuiltNorm::workspace_bytes(std::uint32_t batch) const {
  if (!has_weight_grads(spec)) return 0;
  const std::uint64_t tensors = has_bias(spec) ? 2 : 1;
  return partial_dw_offset() + (partial_db_offset(batch) - partial_dw_offset()) * tensors;
}

BuiltNorm build_norm(const NormSpec& spec) {
  return build(resolve(spec));
}

BuiltNorm build(const Plan& plan) {
  const NormSpec& spec = plan.spec;
  auto module = std::make_shared<Module>(spec.arch, spec.ptx_version);
  BuiltNorm out;
  out.spec = spec;
  if (is_backward(spec.kind)) {
    out.steps.push_back(detail::build_backward(*module, spec, plan));
    const bool single = plan.weight_grads != detail::WeightGrads::PartialRows;
    if (!single) {
      out.steps.push_back(detail::build_column_reduce(*module, spec, plan));
      out.partial_pitch = detail::partial_pitch(spec.width);
    }
    out.ticketed_rows = plan.row_order == RowOrder::Tickets;
  } else {
    out.steps.push_back(detail::build_forward(*module, spec, plan));
  }
  out.chosen = plan.knobs();
  out.tuned_by = plan.tuned_by;
  for (LaunchStep& step : out.steps) step.args = args_of(step.contract);
  out.ptx = module->emit();
  out.module = std::move(module);
  out.plan = plan;
  return out;
}

}  // namespace ptxdsl::kernels
