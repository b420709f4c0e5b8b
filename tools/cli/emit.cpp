// `ptxdsl emit` (PTX text, or the launch contract as JSON) and the norms for `ptxdsl check`
// (ptxas's resource report per entry; the command is every tool's, ptxdsl/cli/check.hpp).
#include <fmt/format.h>

#include "cli.hpp"
#include "norm_case.hpp"
#include "ptxdsl/cli/check.hpp"
#include "ptxdsl/cli/contract_json.hpp"
#include "ptxdsl/cli/json.hpp"
#include "ptxdsl/cli/output_file.hpp"
#include "ptxdsl/runtime/norms.hpp"

namespace ptxdsl::cli {
namespace {

std::string_view grid_kind_name(kernels::GridRule::Kind k) {
  switch (k) {
    case kernels::GridRule::Kind::RowsPerCta:
      return "rows_per_cta";
    case kernels::GridRule::Kind::Persistent:
      return "persistent";
    case kernels::GridRule::Kind::Columns:
      return "columns";
  }
  return "?";
}

void write_step(JsonWriter& j, const kernels::LaunchStep& step, std::uint32_t width,
                std::optional<std::uint32_t> batch) {
  const KernelContract& c = step.contract;
  j.begin_object();
  write_contract_fields(j, c, Dim3(c.block_threads));
  j.key("grid_rule").begin_object();
  j.field("kind", grid_kind_name(step.grid.kind));
  j.field("rows_per_cta", step.grid.rows_per_cta);
  j.field("max_ctas", step.grid.max_ctas);
  j.field("columns_per_cta", step.grid.columns_per_cta);
  j.field("min_row_groups", step.grid.min_row_groups);
  if (step.grid.min_ctas > 0) j.field("min_ctas", step.grid.min_ctas);
  if (step.grid.cluster_ctas > 1) j.field("cluster_ctas", step.grid.cluster_ctas);
  if (const kernels::PortablePartials& q = step.grid.portable; q.on()) {
    // Deterministic portable: the grid by the batch alone, not max_ctas and min_row_groups.
    j.key("portable").begin_object(true);
    j.field("rows_a_partial", q.rows_a_partial);
    j.field("least", q.least);
    j.field("most", q.most);
    j.end_object();
  }
  j.field("grid_x", step.grid.describe());
  j.end_object();
  if (batch)
    j.key("grid")
        .begin_array(true)
        .value(step.grid.grid(*batch, width))
        .value(1)
        .value(1)
        .end_array();
  j.end_object();
}

// A quantized forward's output, for a loader that allocates and reads it: y's codes, the scales
// and the scale it reads, their sizes from the runtime's quant_output (the one statement of them).
void write_quantized(JsonWriter& j, const kernels::NormSpec& s) {
  const runtime::NormType type{
      kernels::is_layer_norm(s.kind),
      s.dtype,
      s.weight_dtype,
      s.width,
      {.quant = s.quant, .quant_scale = s.quant_scale, .quant_scale_layout = s.quant_scale_layout}};
  const runtime::QuantOutput out = runtime::quant_output(type);
  const bool blocks = kernels::quant_block(s.quant) > 0;
  j.field("quant", kernels::quant_name(s.quant));
  j.key("quantized").begin_object();
  j.field("y_element", ptx_name(out.element));
  j.field("y_element_bits", out.element_bits);
  j.field("scale", blocks ? "block" : kernels::quant_scale_name(s.quant_scale));
  j.field("scales_per_row", out.scales_per_row);
  j.field("largest", static_cast<double>(kernels::quant_max(s.quant)));
  if (out.scales_per_row > 0) {
    j.field("scale_element", ptx_name(out.scale));
    j.field("scale_layout", kernels::quant_scale_layout_name(s.quant_scale_layout));
    j.field("y_scale_bytes",
            s.quant_scale_layout == kernels::QuantScaleLayout::Cublas
                ? fmt::format("ceil(batch / 128) * {}", runtime::quant_scale_bytes(type, 128))
                : fmt::format("batch * {}", runtime::quant_scale_bytes(type, 1)));
    j.field("y_scale", blocks
                           ? fmt::format("{}[batch][{}] ({}): each block of {} elements' scale",
                                         ptx_name(out.scale), out.scales_per_row,
                                         kernels::quant_scale_layout_name(s.quant_scale_layout),
                                         kernels::quant_block(s.quant))
                           : fmt::format("f32[batch * {}]: max |y| of {} (f32, before rounding) / "
                                         "largest; 0 for {} of zeros",
                                         out.scales_per_row,
                                         out.scales_per_row == 1 ? "the row" : "each 128 elements",
                                         out.scales_per_row == 1 ? "a row" : "a group"));
  }
  if (out.reads_scale_in) {
    j.field("quant_scale_in",
            blocks ? "f32[1], read: the global scale; y = code * block scale * global"
                   : "f32[1], read: the static scale of every element");
  }
  j.field("y", fmt::format(
                   "the code nearest y / scale (y / 1 where a dynamic scale is 0), ties to "
                   "even, saturated to +-largest; y = code * scale{}",
                   out.element_bits == 4 ? "; two codes a byte, the first in the low nibble" : ""));
  j.end_object();
}

// The launch contract of a built norm: what a foreign loader needs to launch its PTX.
std::string contract_json(const kernels::BuiltNorm& built, std::uint32_t small_batch_limit,
                          std::optional<std::uint32_t> batch, const std::string& ptx_file) {
  const kernels::NormSpec& s = built.spec;
  JsonWriter j;
  j.begin_object();
  j.field("kernel", kernels::kind_name(s.kind));
  j.field("dtype", kernels::dtype_name(s.dtype));
  j.field("weight_dtype", kernels::dtype_name(s.weight_dtype));
  j.field("width", s.width);
  // What the kernel computes beyond the norm, where it is not the default: y = x^ (weight_offset
  // + w) (+ b), and where it rounds to the dtype (docs/kernels.md, "The model's numerics").
  if (s.weight_offset != 0.0f) j.field("weight_offset", static_cast<double>(s.weight_offset));
  if (s.casting != kernels::Casting::None) j.field("casting", kernels::casting_name(s.casting));
  if (s.quant != kernels::Quant::None) write_quantized(j, s);
  if (s.row_groups != 1) {
    j.field("row_groups", s.row_groups);
    j.field("group_stride", s.group_stride);
    j.field("row_start",
            "(r / row_groups) * stride + (r % row_groups) * group_stride elements "
            "(x, y, residual, h, dy, dx, dh); mean, rstd, y_scale: one a row");
  }
  j.field("arch", arch_name(s.arch));
  j.field("ptx_version", fmt::format("{}.{}", s.ptx_version.major, s.ptx_version.minor));
  // The limits the plan was made for: a loader on another device should build for that one.
  const DeviceModel& d = s.device;
  j.key("device").begin_object();
  j.field("name", d.name);
  j.field("compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor));
  j.field("sm_count", d.sm_count);
  j.field("max_threads_per_sm", d.max_threads_per_sm);
  j.field("max_threads_per_block", d.max_threads_per_block);
  j.field("max_blocks_per_sm", d.max_blocks_per_sm);
  j.field("registers_per_sm", d.registers_per_sm);
  j.field("registers_per_block", d.registers_per_block);
  j.field("shared_per_sm", d.shared_per_sm);
  j.field("shared_per_block_optin", d.shared_per_block_optin);
  j.field("shared_reserved_per_block", d.shared_reserved_per_block);
  j.field("l2_bytes", d.l2_bytes);
  j.field("max_cluster_size", d.max_cluster_size);
  j.end_object();
  const auto knobs = [&](std::string_view name, const kernels::NormKnobs& k) {
    j.key(name).begin_object(true);
    kernels::for_each_knob(k, [&](const kernels::KnobInfo& info, const auto& v) {
      j.key(info.name);
      if (!v) {
        j.null();
      } else if constexpr (std::is_same_v<std::decay_t<decltype(*v)>, kernels::RowOrder>) {
        j.value(kernels::row_order_name(*v));
      } else if constexpr (std::is_same_v<std::decay_t<decltype(*v)>, kernels::Determinism>) {
        // true and false as when it was a switch; "portable" by name.
        if (*v == kernels::Determinism::Portable) {
          j.value(kernels::determinism_name(*v));
        } else {
          j.value(static_cast<bool>(*v));
        }
      } else {
        j.value(*v);
      }
    });
    j.end_object();
  };
  knobs("knobs", s.knobs);        // as given (null: the heuristic's)
  knobs("chosen", built.chosen);  // as built
  j.key("tuned_by");  // the tuning table's entry the plan took its knobs from; null: the heuristic
  if (built.tuned_by.empty()) {
    j.null();
  } else {
    j.value(built.tuned_by);
  }
  if (!is_backward(s.kind) && !s.knobs.prefetch_rows) {
    // The runtime's choice per call: persistent prefetching CTAs up to this batch.
    j.field("prefetch_batch_limit", small_batch_limit);
  }
  if (is_backward(s.kind) && !s.knobs.single_launch) {
    // The runtime's choice per call: the one-launch backward up to this batch.
    j.field("single_launch_batch_limit", small_batch_limit);
  }
  j.key("scalars").begin_object();
  j.field("batch", "rows in this launch (u32)");
  j.field("stride", s.row_groups == 1 ? "elements from one row to the next, >= width (u32)"
                                      : "elements from one group of rows to the next, >= "
                                        "(row_groups - 1) * group_stride + width (u32)");
  j.field("eps", "added to the variance (f32), 1e-5 in the suite");
  j.field("partial_rows", "rows of partials the first backward step wrote: its grid (u32)");
  j.end_object();
  j.key("steps").begin_array();
  for (const kernels::LaunchStep& step : built.steps) write_step(j, step, s.width, batch);
  j.end_array();
  j.key("workspace").begin_object();
  j.field("element", "f32");
  j.field("partial_pitch", built.partial_pitch);
  // The offsets come from BuiltNorm, so the text cannot drift from the layout it describes.
  const std::uint64_t dw_at = built.partial_dw_offset();
  const std::string counter =
      built.ticketed_rows
          ? fmt::format(
                "row_counter: {} bytes at byte 0, zero before the first launch (each "
                "launch leaves it zero); ",
                kernels::BuiltNorm::kRowCounterBytes)
          : "";
  const std::string db_at = dw_at != 0 ? fmt::format("{} + ", dw_at) : "";
  j.field("layout",
          !is_backward(s.kind)
              ? std::string("none: the forward needs no workspace")
              : fmt::format("{}partial_rows(batch) = the first step's grid ÷ its cluster's "
                            "CTAs; partial_dw at byte {}, rows partial_pitch floats apart "
                            "(columns in the kernels' own order); partial_db (ln_bwd) at "
                            "{}partial_rows * partial_pitch * 4",
                            counter, dw_at, db_at));
  if (batch) {
    j.field("batch", *batch);
    j.field("partial_rows", built.partial_rows(*batch));
    j.field("partial_dw_offset", built.partial_dw_offset());
    j.field("partial_db_offset", built.partial_db_offset(*batch));
    j.field("bytes", built.workspace_bytes(*batch));
  }
  j.end_object();
  write_ptx_field(j, built.ptx, ptx_file);
  j.end_object();
  return j.str();
}

class EmitCommand : public Command {
 public:
  explicit EmitCommand(CLI::App& sub) {
    options_.add_to(sub);
    sub.add_option("-o,--output", output_, "write the PTX to FILE instead of stdout");
    sub.add_flag("--json", json_, "print the launch contract as JSON (with the PTX unless -o)");
    sub.add_option("--batch", batch_, "with --json: also the grid and workspace for B rows");
  }
  int run() override {
    options_.device_preset();  // the plan is a preset's: an ordinal names no GPU here
    std::optional<std::uint32_t> batch;
    if (!batch_.empty() && !json_) {
      throw UsageError("--batch sizes the launch contract's grid and workspace: give --json too");
    }
    if (!batch_.empty())
      batch = static_cast<std::uint32_t>(parse_uint("--batch", batch_, 1, 0x7fffffff));
    // The spec as given, planned once; --json also says up to which batch the runtime takes the
    // small-batch variant, which plans that variant once more.
    std::optional<kernels::BatchPlans> plans;
    if (json_) plans = options_.batch_plans();
    const kernels::BuiltNorm built = kernels::build(plans ? plans->large : options_.plan());
    if (!output_.empty()) write_text_file(output_, built.ptx);
    if (json_) {
      std::fputs(contract_json(built, plans->small_batch_limit, batch, output_).c_str(), stdout);
    } else if (output_.empty()) {
      std::fputs(built.ptx.c_str(), stdout);
    }
    return kExitOk;
  }

 private:
  SpecOptions options_;
  std::string output_;
  bool json_ = false;
  std::string batch_;
};

// `check`'s norm kernels: the options `emit` takes, none required (`check --ptx FILE` takes none).
class NormSource : public PtxSource {
 public:
  void add_options(CLI::App& sub) override { options_.add_to(sub, false); }
  CheckedPtx build() override {
    options_.require_named();
    options_.device_preset();  // the plan is a preset's: an ordinal names no GPU here
    const kernels::Plan plan = options_.plan();
    return {kernels::build(plan).ptx, std::string(arch_name(plan.spec.arch))};
  }

 private:
  SpecOptions options_;
};

}  // namespace

Registered add_emit(CLI::App& app) {
  auto* sub = app.add_subcommand("emit", "print the PTX of a kernel (or its launch contract)");
  return {sub, std::make_unique<EmitCommand>(*sub)};
}

Registered add_check(CLI::App& app) {
  return add_check(app, std::make_unique<NormSource>());
}

}  // namespace ptxdsl::cli
