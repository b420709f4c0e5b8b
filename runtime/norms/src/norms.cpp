#include "ptxdsl/runtime/norms.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>

#include <fmt/format.h>

#include "ptxdsl/runtime/driver.hpp"
#include "ptxdsl/runtime/error.hpp"
#include "ptxdsl/runtime/launch.hpp"
#include "ptxdsl/runtime/memory.hpp"

namespace ptxdsl::runtime {

using kernels::NormKind;

namespace {

bool given(const DeviceView& v) {
  return v.address != 0;
}

using kernels::quant_name;

// The formats kernels::Quant names, for errors: "none, fp8-e4m3, ...".
std::string quant_names() {
  std::string names;
  for (int q = 0; quant_name(static_cast<kernels::Quant>(q)) != "?"; ++q) {
    names += fmt::format("{}{}", q == 0 ? "" : ", ", quant_name(static_cast<kernels::Quant>(q)));
  }
  return names;
}

// A call's variant from the views it gave, each combination that none has refused by name.
NormVariant forward_variant(const DeviceView& w, const DeviceView* b, const DeviceView& residual,
                            const DeviceView& h, bool residual_in_f32) {
  NormVariant v;
  if (!given(w)) {
    if (b != nullptr && given(*b)) {
      throw Error("b is given without w: a bias alone is not a variant (give w too, or neither)");
    }
    v.affine = kernels::Affine::None;
  } else if (b != nullptr && !given(*b)) {
    v.affine = kernels::Affine::Weight;
  }
  if (given(residual) != given(h)) {
    throw Error(
        fmt::format("{} is given without {}: the residual add reads residual and writes "
                    "h = x + residual (give both, or neither)",
                    given(h) ? "h" : "residual", given(h) ? "residual" : "h"));
  }
  if (given(residual)) {
    v.residual = residual_in_f32 ? kernels::Residual::AddF32 : kernels::Residual::Add;
  } else if (residual_in_f32) {
    throw Error("residual_in_f32 is set without a residual (give residual and h)");
  }
  return v;
}

NormVariant backward_variant(const DeviceView& w, const DeviceView& dw, const DeviceView* db,
                             const DeviceView& dh) {
  NormVariant v;
  if (given(dh)) v.residual = kernels::Residual::Add;
  const bool has_db = db != nullptr && given(*db);
  if (!given(w)) {
    if (given(dw) || has_db) {
      throw Error(
          fmt::format("{} is given without w: a norm without weights has no weight "
                      "gradients (leave dw and db empty, or give w)",
                      given(dw) ? "dw" : "db"));
    }
    v.affine = kernels::Affine::None;
    return v;
  }
  if (!given(dw) && has_db) {
    throw Error("db is given without dw: the backward writes dx, dx and dw, or dx, dw and db");
  }
  if (!given(dw)) {
    v.outputs = kernels::Outputs::Dx;
  } else if (db != nullptr && !has_db) {
    v.affine = kernels::Affine::Weight;
  }
  return v;
}

// Which norm and direction take each tensor, stated once: a (norm, direction)'s tensors are its
// rows here, in order, which is the order of its kernels' parameters.
struct TensorRow {
  NormTensor tensor;
  Direction direction;
  bool layer_only;  // layer norm's b, mean and db
};
using A = kernels::NormArg;
using L = TensorLayout;
constexpr Direction kFwd = Direction::Forward;
constexpr Direction kBwd = Direction::Backward;
constexpr TensorRow kTensorRows[] = {
    // {arg, field, layout, required, written}, direction, layer norm's only
    {{A::X, &NormCall::x, L::Rows, true, false}, kFwd, false},
    {{A::W, &NormCall::w, L::Weights, false, false}, kFwd, false},
    {{A::B, &NormCall::b, L::Weights, false, false}, kFwd, true},
    {{A::Residual, &NormCall::residual, L::ResidualRows, false, false}, kFwd, false},
    {{A::Y, &NormCall::y, L::OutputRows, true, true}, kFwd, false},
    {{A::YScale, &NormCall::y_scale, L::Scales, false, true}, kFwd, false},
    {{A::QuantScaleIn, &NormCall::quant_scale_in, L::ScaleIn, false, false}, kFwd, false},
    {{A::H, &NormCall::h, L::ResidualRows, false, true}, kFwd, false},
    {{A::Mean, &NormCall::mean, L::PerRow, true, true}, kFwd, true},
    {{A::Rstd, &NormCall::rstd, L::PerRow, true, true}, kFwd, false},
    {{A::Dy, &NormCall::dy, L::Rows, true, false}, kBwd, false},
    {{A::X, &NormCall::x, L::Rows, true, false}, kBwd, false},
    {{A::W, &NormCall::w, L::Weights, false, false}, kBwd, false},
    {{A::Mean, &NormCall::mean, L::PerRow, true, false}, kBwd, true},
    {{A::Rstd, &NormCall::rstd, L::PerRow, true, false}, kBwd, false},
    {{A::Dh, &NormCall::dh, L::ResidualRows, false, false}, kBwd, false},
    {{A::Dx, &NormCall::dx, L::Rows, true, true}, kBwd, false},
    {{A::Dw, &NormCall::dw, L::Weights, false, true}, kBwd, false},
    {{A::Db, &NormCall::db, L::Weights, false, true}, kBwd, true},
};

struct TensorList {
  std::array<NormTensor, std::size(kTensorRows)> tensors{};
  std::size_t count = 0;
};
constexpr TensorList tensor_list(bool layer, Direction direction) {
  TensorList list;
  for (const TensorRow& row : kTensorRows) {
    if (row.direction == direction && (layer || !row.layer_only)) {
      list.tensors[list.count++] = row.tensor;
    }
  }
  return list;
}
// [layer][backward]
constexpr TensorList kTensorLists[2][2] = {
    {tensor_list(false, kFwd), tensor_list(false, kBwd)},
    {tensor_list(true, kFwd), tensor_list(true, kBwd)},
};

// A view the call's norm and direction do not take, refused: it would be ignored, and so would
// the slip that gave it.
void refuse_untaken(bool layer, const NormCall& c) {
  const std::span<const NormTensor> taken = norm_tensors(layer, c.direction);
  const bool forward = c.direction == Direction::Forward;
  for (const TensorRow& row : kTensorRows) {
    const auto takes = [&](const NormTensor& t) { return t.view == row.tensor.view; };
    if (!given(c.*row.tensor.view) || std::any_of(taken.begin(), taken.end(), takes)) continue;
    std::string names;
    for (const NormTensor& t : taken) {
      names += fmt::format("{}{}", names.empty() ? "" : ", ", kernels::arg_name(t.arg));
    }
    throw Error(fmt::format("{} is given to {} {}, which does not take it (it takes {})",
                            kernels::arg_name(row.tensor.arg),
                            layer ? "a layer norm's" : "an RMS norm's",
                            forward ? "forward" : "backward", names));
  }
  if (!forward && c.residual_in_f32) {
    throw Error("residual_in_f32 is set on a backward, which takes x and dh in the dtype");
  }
  if (forward && (c.workspace.address != 0 || c.workspace.bytes != 0)) {
    throw Error("a workspace is given to a forward, which needs none");
  }
}

}  // namespace

std::span<const NormTensor> norm_tensors(bool layer, Direction direction) {
  const TensorList& list = kTensorLists[layer ? 1 : 0][direction == Direction::Backward ? 1 : 0];
  return {list.tensors.data(), list.count};
}

NormVariant variant_of(bool layer, const NormCall& c) {
  refuse_untaken(layer, c);
  if (c.direction == Direction::Forward) {
    return forward_variant(c.w, layer ? &c.b : nullptr, c.residual, c.h, c.residual_in_f32);
  }
  return backward_variant(c.w, c.dw, layer ? &c.db : nullptr, c.dh);
}

kernels::NormSpec norm_spec(const NormType& type, Direction direction, const NormVariant& variant) {
  const bool backward = direction == Direction::Backward;
  kernels::NormSpec s;
  s.kind = type.layer ? (backward ? NormKind::LayerNormBwd : NormKind::LayerNormFwd)
                      : (backward ? NormKind::RmsNormBwd : NormKind::RmsNormFwd);
  s.dtype = type.dtype;
  s.weight_dtype = type.weight_dtype;
  s.width = type.width;
  s.affine = variant.affine;
  s.residual = variant.residual;
  if (backward) s.outputs = variant.outputs;
  s.weight_offset = type.model.weight_offset;
  s.casting = type.model.casting;
  s.row_groups = type.model.row_groups;
  s.group_stride = type.model.group_stride;
  if (!backward) {
    s.quant = type.model.quant;
    s.quant_scale = type.model.quant_scale;
    s.quant_scale_layout = type.model.quant_scale_layout;
  }
  return s;
}

QuantOutput quant_output(const NormType& type) {
  const kernels::Quant q = type.model.quant;
  if (quant_name(q) == "?") {
    throw Error(fmt::format("quant must be one of {}, got enum value {}", quant_names(),
                            static_cast<int>(q)));
  }
  if (q == kernels::Quant::None) {
    const ScalarType rows = type.dtype == DType::F32   ? ScalarType::F32
                            : type.dtype == DType::F16 ? ScalarType::F16
                                                       : ScalarType::BF16;
    return {.element = rows,
            .element_bits = 8 * static_cast<std::uint32_t>(kernels::dtype_bytes(type.dtype))};
  }
  const kernels::NormSpec spec = norm_spec(type, Direction::Forward);
  QuantOutput out;
  out.element = kernels::quant_element_type(q);
  // A pair type (e2m1x2) holds two elements in its bytes.
  out.element_bits = out.element == ScalarType::E2M1x2 ? 4 : 8 * size_bytes(out.element);
  out.scale = kernels::quant_scale_type(q);
  out.scales_per_row = kernels::quant_scales_per_row(spec);
  out.scale_bytes = out.scales_per_row > 0 ? size_bytes(out.scale) : 0;
  out.reads_scale_in = kernels::reads_quant_scale(spec);
  return out;
}

std::uint64_t quant_scale_bytes(const NormType& type, std::uint32_t batch) {
  const QuantOutput out = quant_output(type);
  if (out.scale_bytes == 0) return 0;
  return kernels::quant_scale_entries(norm_spec(type, Direction::Forward), batch) * out.scale_bytes;
}

Arch target_arch(const NormType& type, const DeviceModel& device) {
  if (kernels::quant_block(type.model.quant) > 0) {
    return newest_arch_for_compute_capability(device.cc_major, device.cc_minor);
  }
  return device.arch();
}

namespace {

// A typed call's fields, each a NormCall field of the same name (a typed struct has a subset).
template <class Args>
NormCall call_of(Direction direction, const Args& a) {
  NormCall c{.direction = direction,
             .batch = a.batch,
             .stride = a.stride,
             .width = a.width,
             .stream = a.stream};
  c.x = a.x;
  c.w = a.w;
  c.rstd = a.rstd;
  if constexpr (requires { a.b; }) c.b = a.b;
  if constexpr (requires { a.y; }) c.y = a.y;
  if constexpr (requires { a.y_scale; }) c.y_scale = a.y_scale;
  if constexpr (requires { a.quant_scale_in; }) c.quant_scale_in = a.quant_scale_in;
  if constexpr (requires { a.mean; }) c.mean = a.mean;
  if constexpr (requires { a.residual; }) c.residual = a.residual;
  if constexpr (requires { a.h; }) c.h = a.h;
  if constexpr (requires { a.dy; }) c.dy = a.dy;
  if constexpr (requires { a.dx; }) c.dx = a.dx;
  if constexpr (requires { a.dw; }) c.dw = a.dw;
  if constexpr (requires { a.db; }) c.db = a.db;
  if constexpr (requires { a.dh; }) c.dh = a.dh;
  if constexpr (requires { a.residual_in_f32; }) c.residual_in_f32 = a.residual_in_f32;
  if constexpr (requires { a.eps; }) c.eps = a.eps;
  if constexpr (requires { a.workspace; }) c.workspace = a.workspace;
  return c;
}

}  // namespace

NormCall norm_call(const LayerNormForwardArgs& a) {
  return call_of(Direction::Forward, a);
}
NormCall norm_call(const LayerNormBackwardArgs& a) {
  return call_of(Direction::Backward, a);
}
NormCall norm_call(const RmsNormForwardArgs& a) {
  return call_of(Direction::Forward, a);
}
NormCall norm_call(const RmsNormBackwardArgs& a) {
  return call_of(Direction::Backward, a);
}

NormVariant variant_of(const LayerNormForwardArgs& a) {
  return variant_of(true, norm_call(a));
}
NormVariant variant_of(const LayerNormBackwardArgs& a) {
  return variant_of(true, norm_call(a));
}
NormVariant variant_of(const RmsNormForwardArgs& a) {
  return variant_of(false, norm_call(a));
}
NormVariant variant_of(const RmsNormBackwardArgs& a) {
  return variant_of(false, norm_call(a));
}

namespace detail {
namespace {

// What a kernel parameter is bound to: the kernels' own list of their arguments (by index into
// each step's contract, LaunchStep::args).
using Bind = kernels::NormArg;
constexpr int kPointerBinds = kernels::kNormPointerArgs;

// One tensor of a call: its row of norm_tensors() and the caller's view.
struct PointerArg {
  Bind bind;
  TensorLayout layout;
  bool written;
  const DeviceView* view;
};

// A call's pointer arguments in the order of its kernels' parameters: every one its kernels
// always take (a null one is refused), and the optional ones it was given (an empty view is a
// tensor the variant lacks).
struct PointerArgs {
  std::array<PointerArg, 10> args{};
  std::size_t count = 0;
  std::span<const PointerArg> view() const { return {args.data(), count}; }
};

PointerArgs pointers_of(bool layer, const NormCall& c) {
  PointerArgs ptrs;
  for (const NormTensor& t : norm_tensors(layer, c.direction)) {
    const DeviceView& v = c.*t.view;
    if (t.required || v.address != 0) ptrs.args[ptrs.count++] = {t.arg, t.layout, t.written, &v};
  }
  return ptrs;
}

constexpr std::uint64_t kMaxSpanElements = std::uint64_t{1} << 48;
// Of a caller's workspace: the partial sums are read and written in 16-byte vectors.
constexpr std::uint64_t kWorkspaceAlignment = 16;

// A call's shape as its checks read it.
struct CallShape {
  std::uint32_t batch = 0;
  std::uint32_t stride = 0;
  int residual_elem = 2;  // bytes of the residual add's elements: f32 with AddF32, else the dtype's
};

// The checks of a call that need no device, and the errors that name the object: what an object's
// forward and backward check first, and all that check_call() checks (before any driver loads).
class CallChecks {
 public:
  // A quantized type's outputs are stated once here, not at each call (a plain type's cost
  // nothing); an unknown format waits for check_model to name it.
  explicit CallChecks(const NormType& type) : type_(type) {
    if (quant_name(type.model.quant) != "?") quant_ = quant_output(type);
    if (quant_.scales_per_row > 0) scale_spec_ = norm_spec(type, Direction::Forward);
  }

  // A call of batch ≥ 1: the variant its views ask for, its shape, each view, the overlaps of
  // the outputs, the forward's eps and the backward's workspace alignment. Returns the variant.
  NormVariant check(const NormCall& c, const PointerArgs& ptrs) const {
    const bool backward = c.direction == Direction::Backward;
    check_model(backward);
    const NormVariant variant = variant_for(c);
    if (type_.model.weight_offset != 0.0f && variant.affine == kernels::Affine::None) [[unlikely]] {
      fail(backward, fmt::format("a weight offset of {} needs w: y = x̂·({} + w) (give w)",
                                 type_.model.weight_offset, type_.model.weight_offset));
    }
    if (!backward) check_scales_given(c);
    const CallShape shape = shape_of(c, variant);
    check_shape(backward, shape, c.width);
    check_views(backward, ptrs.view(), shape);
    if (!backward && !(std::isfinite(c.eps) && c.eps >= 0)) [[unlikely]] {
      fail(false, fmt::format("eps must be a finite number ≥ 0, got {}", c.eps));
    }
    if (backward && c.workspace.address % kWorkspaceAlignment != 0) [[unlikely]] {
      fail(true, fmt::format("the workspace at 0x{:x} is not {}-byte aligned", c.workspace.address,
                             kWorkspaceAlignment));
    }
    return variant;
  }

  CallShape shape_of(const NormCall& c, const NormVariant& variant) const {
    return {c.batch, c.stride != 0 ? c.stride : type_.width,  // 0: contiguous rows
            variant.residual == kernels::Residual::AddF32 ? 4 : elem()};
  }

  // The object's name: its type, with the model options that are not the defaults.
  std::string describe(bool backward) const {
    const NormModelOptions& m = type_.model;
    std::string model;
    if (m.weight_offset != 0.0f) model += fmt::format(", weight offset {}", m.weight_offset);
    if (m.casting != kernels::Casting::None) {
      model += fmt::format(", casting {}", kernels::casting_name(m.casting));
    }
    if (m.row_groups != 1 || m.group_stride != 0) {
      model += fmt::format(", row groups {} × group stride {}", m.row_groups, m.group_stride);
    }
    if (m.quant != kernels::Quant::None) model += fmt::format(", quant {}", quant_name(m.quant));
    if (m.quant_scale != kernels::QuantScale::PerToken) {
      model += fmt::format(" scale {}", kernels::quant_scale_name(m.quant_scale));
    }
    if (m.quant_scale_layout != kernels::QuantScaleLayout::RowMajor) {
      model += fmt::format(" ({} layout)", kernels::quant_scale_layout_name(m.quant_scale_layout));
    }
    return fmt::format("{}({}, weights {}, width {}{}).{}", type_.layer ? "LayerNorm" : "RmsNorm",
                       kernels::dtype_name(type_.dtype), kernels::dtype_name(type_.weight_dtype),
                       type_.width, model, backward ? "backward" : "forward");
  }

  // The model options alone, as the kernels take them (what an object checks when it is built).
  void check_model(bool backward) const {
    const NormModelOptions& m = type_.model;
    if (!std::isfinite(m.weight_offset)) [[unlikely]] {
      fail(backward, fmt::format("weight offset must be a finite number, got {}", m.weight_offset));
    }
    if (kernels::casting_name(m.casting) == "?") [[unlikely]] {
      fail(backward, fmt::format("casting must be one of none, llama, gemma, got enum value {}",
                                 static_cast<int>(m.casting)));
    }
    if (quant_name(m.quant) == "?") [[unlikely]] {
      fail(backward, fmt::format("quant must be one of {}, got enum value {}", quant_names(),
                                 static_cast<int>(m.quant)));
    }
    check_quant_scale(backward);
    if (m.row_groups < 1 || m.row_groups > kernels::kMaxRowGroups) [[unlikely]] {
      fail(backward, fmt::format("row groups must be in [1, {}], got {}", kernels::kMaxRowGroups,
                                 m.row_groups));
    }
    if (m.row_groups == 1) {
      if (m.group_stride != 0) [[unlikely]] {
        fail(backward, fmt::format("group stride {} spaces the rows of a group; row groups 1 has "
                                   "none (give row groups, or group stride 0)",
                                   m.group_stride));
      }
      return;
    }
    if (m.group_stride < type_.width) [[unlikely]] {
      fail(backward, fmt::format("group stride must be at least the width ({}), got {}",
                                 type_.width, m.group_stride));
    }
    if (row_span() > 0xffffffffu) [[unlikely]] {
      fail(backward, fmt::format("row groups {} of group stride {} span {} elements, more than "
                                 "2^32 - 1",
                                 m.row_groups, m.group_stride, row_span()));
    }
  }

  // The quant scale mode and the block scales' layout: each a name the kernels know, each for a
  // format that has it, and group128's whole groups (DeepGEMM's [rows][width / 128]).
  void check_quant_scale(bool backward) const {
    const NormModelOptions& m = type_.model;
    const std::string_view scale = kernels::quant_scale_name(m.quant_scale);
    if (scale == "?") [[unlikely]] {
      fail(backward, fmt::format("quant scale must be one of per-token, static, group128, got "
                                 "enum value {}",
                                 static_cast<int>(m.quant_scale)));
    }
    const std::string_view layout = kernels::quant_scale_layout_name(m.quant_scale_layout);
    if (layout == "?") [[unlikely]] {
      fail(backward, fmt::format("quant scale layout must be one of row-major, cublas, got enum "
                                 "value {}",
                                 static_cast<int>(m.quant_scale_layout)));
    }
    const std::uint32_t block = kernels::quant_block(m.quant);
    if (m.quant == kernels::Quant::None && m.quant_scale != kernels::QuantScale::PerToken)
        [[unlikely]] {
      fail(backward, fmt::format("quant scale {} scales a quantized y; the quant is none (give "
                                 "fp8-e4m3, fp8-e5m2 or int8)",
                                 scale));
    }
    if (block > 0 && m.quant_scale != kernels::QuantScale::PerToken) [[unlikely]] {
      fail(backward, fmt::format("quant {} has its own scales (one per {} elements): quant scale "
                                 "must be per-token (the default), got {}",
                                 quant_name(m.quant), block, scale));
    }
    if (block == 0 && m.quant_scale_layout != kernels::QuantScaleLayout::RowMajor) [[unlikely]] {
      fail(backward, fmt::format("quant scale layout {} lays out block scales (mxfp8, nvfp4); "
                                 "quant {} has none (leave it row-major)",
                                 layout, quant_name(m.quant)));
    }
    if (m.quant_scale == kernels::QuantScale::Group128 && type_.width % 128 != 0) [[unlikely]] {
      fail(backward, fmt::format("quant scale group128 takes widths that are multiples of 128 "
                                 "(scales [rows][width / 128], DeepGEMM's layout), got width {}",
                                 type_.width));
    }
  }

  // The elements a group of rows spans: the least stride (the width without row groups).
  std::uint64_t row_span() const {
    return std::uint64_t{type_.model.row_groups - 1} * type_.model.group_stride + type_.width;
  }

  // The elements from the first row's start to the last row's end.
  std::uint64_t rows_extent(const CallShape& shape) const {
    const std::uint32_t last = shape.batch - 1, groups = type_.model.row_groups;
    return std::uint64_t{last / groups} * shape.stride +
           std::uint64_t{last % groups} * type_.model.group_stride + type_.width;
  }

  [[noreturn]] void fail(bool backward, const std::string& problem) const {
    throw Error(fmt::format("{}: {}", describe(backward), problem));
  }

  int elem() const { return kernels::dtype_bytes(type_.dtype); }
  int weight_elem() const { return kernels::dtype_bytes(type_.weight_dtype); }

  std::uint32_t expected_elem(TensorLayout layout, const CallShape& shape) const {
    switch (layout) {
      case TensorLayout::Rows:
        return static_cast<std::uint32_t>(elem());
      case TensorLayout::ResidualRows:
        return static_cast<std::uint32_t>(shape.residual_elem);
      case TensorLayout::Weights:
        return static_cast<std::uint32_t>(weight_elem());
      case TensorLayout::PerRow:
      case TensorLayout::ScaleIn:
        return 4;
      case TensorLayout::Scales:
        return quant_.scale_bytes;
      case TensorLayout::OutputRows:  // nvfp4's pairs are addressed as bytes
        return std::max(1u, quant_.element_bits / 8);
    }
    return 0;
  }

  std::uint64_t needed_bytes(TensorLayout layout, const CallShape& shape) const {
    const std::uint64_t rows = rows_extent(shape);
    switch (layout) {
      case TensorLayout::Rows:
        return rows * static_cast<std::uint64_t>(elem());
      case TensorLayout::ResidualRows:
        return rows * static_cast<std::uint64_t>(shape.residual_elem);
      case TensorLayout::Weights:
        return std::uint64_t{type_.width} * static_cast<std::uint64_t>(weight_elem());
      case TensorLayout::PerRow:
        return std::uint64_t{shape.batch} * 4;
      case TensorLayout::OutputRows:
        return quant_.y_bytes(rows);
      case TensorLayout::Scales:  // quant_scale_bytes(), without a spec a call
        return scale_spec_
                   ? kernels::quant_scale_entries(*scale_spec_, shape.batch) * quant_.scale_bytes
                   : 0;
      case TensorLayout::ScaleIn:
        return 4;
    }
    return 0;
  }

 private:
  // The variant of a call's views (variant_of), refused with this object's name.
  NormVariant variant_for(const NormCall& c) const {
    try {
      return variant_of(type_.layer, c);
    } catch (const Error& e) {
      fail(c.direction == Direction::Backward, e.what());
    }
  }

  // A quantized forward writes its scales to y_scale (none with a static scale) and reads
  // quant_scale_in where its scale is static (or nvfp4's global scale); each is given exactly then.
  void check_scales_given(const NormCall& c) const {
    const kernels::Quant q = type_.model.quant;
    const QuantOutput& out = quant_;
    // "quant int8", or with a scale mode other than the default "quant int8 with scale static".
    const auto mode = [&] {
      return type_.model.quant_scale == kernels::QuantScale::PerToken
                 ? fmt::format("quant {}", quant_name(q))
                 : fmt::format("quant {} with scale {}", quant_name(q),
                               kernels::quant_scale_name(type_.model.quant_scale));
    };
    if (out.scales_per_row > 0 && !given(c.y_scale)) [[unlikely]] {
      fail(false, fmt::format("y_scale is a null pointer: {} writes its {} scales there ({} a "
                              "row)",
                              mode(), ptx_name(out.scale), out.scales_per_row));
    }
    if (q == kernels::Quant::None && given(c.y_scale)) [[unlikely]] {
      fail(false,
           "y_scale is given, but the quant is none: y is written in the dtype, with no "
           "scales (leave y_scale empty, or build the object with a quant)");
    }
    if (out.scales_per_row == 0 && given(c.y_scale)) [[unlikely]] {
      fail(false, fmt::format("y_scale is given, but {} writes no scales (it reads its one scale "
                              "from quant_scale_in; leave y_scale empty)",
                              mode()));
    }
    if (out.reads_scale_in && !given(c.quant_scale_in)) [[unlikely]] {
      fail(false, fmt::format("quant_scale_in is a null pointer: {} reads its {} there (one f32 "
                              "on the device)",
                              mode(), kernels::quant_block(q) > 0 ? "global scale" : "scale"));
    }
    if (!out.reads_scale_in && given(c.quant_scale_in)) [[unlikely]] {
      fail(false, fmt::format("quant_scale_in is given, but {} reads none (it is a static "
                              "scale's, or nvfp4's global scale; leave it empty)",
                              mode()));
    }
  }

  void check_shape(bool backward, const CallShape& shape, std::uint32_t width_check) const {
    if (width_check != 0 && width_check != type_.width) [[unlikely]] {
      fail(backward, fmt::format("called with width {}; this object was built for width {} "
                                 "(make one object per width)",
                                 width_check, type_.width));
    }
    if (type_.model.row_groups == 1 && shape.stride < type_.width) [[unlikely]] {
      fail(backward,
           fmt::format("stride must be at least the width {}, got {}", type_.width, shape.stride));
    }
    if (shape.stride < row_span()) [[unlikely]] {
      fail(backward, fmt::format("stride must be at least the row groups' span (row groups {} − "
                                 "1)·group stride {} + width {} = {}, got {}",
                                 type_.model.row_groups, type_.model.group_stride, type_.width,
                                 row_span(), shape.stride));
    }
    if (shape.batch > kernels::kMaxBatch) [[unlikely]] {
      fail(backward,
           fmt::format("batch must be at most {} rows, got {}", kernels::kMaxBatch, shape.batch));
    }
    // (batch − 1) × stride < 2^63 cannot wrap; past 2^48 elements no GPU holds the rows, and the
    // byte counts below could.
    if (const std::uint64_t span = rows_extent(shape); span > kMaxSpanElements) [[unlikely]] {
      fail(backward, fmt::format("batch {} × stride {} spans {} elements, more than a GPU "
                                 "addresses (2^48)",
                                 shape.batch, shape.stride, span));
    }
  }

  // Each view not null, of its element size, aligned to it and long enough; then no output
  // overlapping another argument: it would be read after it is written, or written twice, so
  // in-place calls (y = x, dx = dy) are refused, not computed wrongly.
  void check_views(bool backward, std::span<const PointerArg> args, const CallShape& shape) const {
    for (const PointerArg& a : args) {
      const std::uint32_t e = expected_elem(a.layout, shape);
      const DeviceView& v = *a.view;
      if (v.address == 0 || (v.element_bytes != 0 && v.element_bytes != e) || v.address % e != 0 ||
          (v.bytes != 0 && v.bytes < needed_bytes(a.layout, shape))) [[unlikely]] {
        fail_pointer(backward, a, shape);
      }
    }
    for (std::size_t i = 0; i < args.size(); ++i) {
      for (std::size_t j = i + 1; j < args.size(); ++j) {
        const PointerArg& a = args[i];
        const PointerArg& b = args[j];
        if (!a.written && !b.written) continue;
        const std::uint64_t a_end = a.view->address + needed_bytes(a.layout, shape);
        const std::uint64_t b_end = b.view->address + needed_bytes(b.layout, shape);
        if (a.view->address < b_end && b.view->address < a_end) [[unlikely]] {
          const PointerArg& out = a.written ? a : b;
          const PointerArg& other = &out == &a ? b : a;
          fail(backward, fmt::format("{} overlaps {}: in-place calls are not supported; give {} a "
                                     "buffer of its own",
                                     arg_name(out.bind), arg_name(other.bind), arg_name(out.bind)));
        }
      }
    }
  }

  [[noreturn]] void fail_pointer(bool backward, const PointerArg& a, const CallShape& shape) const {
    const DeviceView& v = *a.view;
    const std::uint32_t e = expected_elem(a.layout, shape);
    const bool quantized = type_.model.quant != kernels::Quant::None;
    const std::string_view type =
        a.layout == TensorLayout::OutputRows && quantized ? quant_name(type_.model.quant)
        : a.layout == TensorLayout::Rows || a.layout == TensorLayout::OutputRows
            ? kernels::dtype_name(type_.dtype)
        : a.layout == TensorLayout::ResidualRows
            ? kernels::dtype_name(shape.residual_elem == 4 ? DType::F32 : type_.dtype)
        : a.layout == TensorLayout::Weights ? kernels::dtype_name(type_.weight_dtype)
        : a.layout == TensorLayout::Scales  ? ptx_name(quant_.scale)
                                            : "f32";
    if (v.address == 0) fail(backward, fmt::format("{} is a null pointer", arg_name(a.bind)));
    if (v.element_bytes != 0 && v.element_bytes != e) {
      fail(backward, fmt::format("{} has {}-byte elements; it must hold {} ({} bytes)",
                                 arg_name(a.bind), v.element_bytes, type, e));
    }
    if (v.address % e != 0) {
      fail(backward, fmt::format("{} at 0x{:x} is not aligned to its {}-byte {} elements",
                                 arg_name(a.bind), v.address, e, type));
    }
    const bool rows = a.layout == TensorLayout::Rows || a.layout == TensorLayout::ResidualRows ||
                      a.layout == TensorLayout::OutputRows;
    const std::string described =
        rows
            ? fmt::format("batch {} × stride {} (width {})", shape.batch, shape.stride, type_.width)
        : a.layout == TensorLayout::Weights ? fmt::format("width {}", type_.width)
        : a.layout == TensorLayout::ScaleIn ? std::string("one scale")
                                            : fmt::format("batch {}", shape.batch);
    fail(backward, fmt::format("{} holds {} bytes; {} needs {} bytes of {}", arg_name(a.bind),
                               v.bytes, described, needed_bytes(a.layout, shape), type));
  }

  NormType type_;
  QuantOutput quant_;                            // quant_output(type_)
  std::optional<kernels::NormSpec> scale_spec_;  // the forward's, where it writes scales
};

}  // namespace

// What the kernels read at launch: every parameter of every step points into one of these.
struct CallValues {
  std::uint64_t pointers[kPointerBinds] = {};
  std::uint32_t batch = 0, stride = 0, partial_rows = 0;
  float eps = 0;
};

struct PreparedStep {
  Function function;
  kernels::GridRule grid;
  std::uint32_t block = 0;
  std::uint32_t shared = 0;
  std::vector<void*> params;  // into NormPair::values_
};

struct Variant {
  kernels::BuiltNorm built;
  std::vector<PreparedStep> steps;
};

// Which built variant a call takes: direction, the small-batch alternate, vector width, and the
// spec's variant fields.
struct VariantKey {
  bool backward = false;
  bool alternate = false;
  std::uint32_t vec = 8;
  NormVariant variant;
  auto tie() const {
    return std::tuple(backward, alternate, vec, variant.affine, variant.residual, variant.outputs);
  }
  bool operator<(const VariantKey& o) const { return tie() < o.tie(); }
};

// One norm (layer or RMS) at one (dtype, weight dtype, width): its forward and backward variants by
// vector width, the workspace, and the values the launches read. Heap-allocated so the parameter
// pointers stay valid when the public object moves.
class NormPair {
 public:
  NormPair(const Context& ctx, const NormType& type, NormOptions options)
      : ctx_(ctx.share()), type_(type), options_(options), checks_(type) {
    checks_.check_model(false);
    spec_ = norm_spec(type, Direction::Forward);
    spec_.device = ctx.info().model;
    spec_.arch = options.arch.value_or(target_arch(type, spec_.device));
    spec_.ptx_version = options.ptx_version.value_or(
        std::min(kernels::default_ptx_version(spec_.arch), newest_ptx_version(driver_version())));
    spec_.ptx_version = std::max(spec_.ptx_version, min_ptx_version(spec_.arch));
    spec_.tuning = options.tuning_table;
    knobs_[0] = options.knobs;
    knobs_[1] = options.backward_knobs.value_or(options.knobs);
    for (const bool backward : {false, true}) {
      kernels::NormKnobs& kn = knobs_[backward ? 1 : 0];
      // Row groups' vectors divide the group stride (the widest power of two that does).
      const std::uint32_t stride_vec =
          type.model.row_groups > 1 ? type.model.group_stride & (0u - type.model.group_stride) : 16;
      max_vec_[backward ? 1 : 0] =
          kn.vector_elems.value_or(std::min(16 / static_cast<std::uint32_t>(elem()), stride_vec));
      kn.vector_elems.reset();  // chosen per call, from the alignment
      // Planned now, at the widest vectors, which checks the knobs; the first call of that width
      // and variant takes this plan.
      kernels::NormSpec widest = spec_for(backward);
      widest.knobs.vector_elems = max_vec_[backward ? 1 : 0];
      try {
        widest_plan_[backward ? 1 : 0] = kernels::resolve(widest);
      } catch (const Error& e) {
        // The same knobs may serve both directions: say which one refuses them.
        fail(backward, e.what());
      }
    }
    cache_ = options.cache != nullptr ? options.cache : &ModuleCache::global();
    // Made now, not at the first backward, which may be under stream capture.
    try {
      pool_.emplace(ctx);
    } catch (const DriverError&) {
      throw;
    } catch (const Error& e) {
      pool_error_ = e.what();  // a device without memory pools: callers pass a workspace
    }
  }

  // The spec of one direction, with its knobs, as `variant` has it.
  kernels::NormSpec spec_for(bool backward, const NormVariant& variant = {}) const {
    kernels::NormSpec s =
        norm_spec(type_, backward ? Direction::Backward : Direction::Forward, variant);
    s.device = spec_.device;
    s.arch = spec_.arch;
    s.ptx_version = spec_.ptx_version;
    s.tuning = spec_.tuning;
    s.knobs = knobs_[backward ? 1 : 0];
    return s;
  }
  int elem() const { return kernels::dtype_bytes(spec_.dtype); }
  const NormType& type() const { return type_; }
  std::uint32_t last_vec() const { return last_vec_; }

  std::string describe(bool backward) const { return checks_.describe(backward); }

  // Binds a call whose checks passed (CallChecks::check): asks the driver whether each view is
  // memory it knows, picks the vector width, fills values_, and returns the variant to launch.
  const Variant& bind(bool backward, std::span<const PointerArg> args, const CallShape& shape,
                      const NormVariant& variant) {
    std::uint64_t row_bits = 0, weight_bits = 0, residual_bits = 0;
    for (const PointerArg& a : args) {
      const DeviceView& v = *a.view;
      if (!known_allocation(v.address)) [[unlikely]] {
        fail(backward, fmt::format("{} at 0x{:x} is not memory the GPU can address (a host pointer "
                                   "from malloc or new, or freed memory?): allocate it on the "
                                   "device, or pin it",
                                   arg_name(a.bind), v.address));
      }
      values_.pointers[static_cast<int>(a.bind)] = v.address;
      // A quantized y's codes are narrower than x's elements: x's alignment is more than they need.
      if (a.layout == TensorLayout::Rows || a.layout == TensorLayout::OutputRows) {
        row_bits |= v.address;
      }
      if (a.layout == TensorLayout::Weights) weight_bits |= v.address;
      if (a.layout == TensorLayout::ResidualRows) residual_bits |= v.address;
    }
    const DType residual_dtype = shape.residual_elem == 4 ? DType::F32 : spec_.dtype;
    // With row groups, rows start at multiples of both strides: a vector divides each.
    const std::uint32_t row_steps = type_.model.row_groups > 1
                                        ? std::gcd(shape.stride, type_.model.group_stride)
                                        : shape.stride;
    const std::uint32_t vec =
        std::min(max_vec_[backward ? 1 : 0],
                 kernels::vector_elems_for(spec_.dtype, spec_.weight_dtype, row_steps, row_bits,
                                           weight_bits, residual_dtype, residual_bits));
    last_vec_ = vec;
    values_.batch = shape.batch;
    values_.stride = shape.stride;
    return built_variant(
        {backward, alternate_pays(backward, vec, shape.batch, variant), vec, variant});
  }

  // A call of either norm in either direction: checked, bound and launched.
  void call(const NormCall& c) {
    if (c.batch == 0) return;
    const bool backward = c.direction == Direction::Backward;
    const PointerArgs ptrs = pointers_of(type_.layer, c);
    const NormVariant variant = checks_.check(c, ptrs);
    const Variant& v = bind(backward, ptrs.view(), checks_.shape_of(c, variant), variant);
    if (backward) {
      launch_backward(v, c.batch, c.workspace, c.stream);
    } else {
      values_.eps = c.eps;
      launch_steps(v, c.batch, c.stream);
    }
  }

  void launch_steps(const Variant& v, std::uint32_t batch, StreamRef stream) {
    for (const PreparedStep& s : v.steps) {
      launch_raw(s.function, s.grid.grid(batch, spec_.width), s.block, s.shared, stream,
                 const_cast<void**>(s.params.data()));
    }
  }

  // Binds the partial sums (and the row counter) and launches a backward. The workspace is the
  // caller's, or taken for this call alone from the object's stream-ordered pool and freed after
  // the launches on the same stream: no call waits for the device, calls on other streams never
  // share it, and under stream capture the graph owns it. Neither holds a zero row counter between
  // calls, so with row tickets it is zeroed on the stream before the launches.
  void launch_backward(const Variant& v, std::uint32_t batch, const Workspace& ws,
                       StreamRef stream) {
    const std::uint64_t need = v.built.workspace_bytes(batch);
    std::uint64_t base = ws.address;
    if (base != 0) {
      if (ws.bytes < need || base % kWorkspaceAlignment != 0) [[unlikely]] {
        fail(true, fmt::format("the workspace at 0x{:x} holds {} bytes; a batch of {} needs "
                               "{} bytes, 16-byte aligned (workspace_bytes(batch) says how many)",
                               base, ws.bytes, batch, need));
      }
    } else if (need != 0) {
      if (!pool_) [[unlikely]] {
        fail(true, fmt::format("a batch of {} needs a workspace of {} bytes, and {}: pass one "
                               "(workspace_bytes(batch) says how many)",
                               batch, need, pool_error_));
      }
      base = pool_->allocate_async(need, stream);
    }
    // Freed in stream order whether the launches were enqueued or not.
    struct PoolReturn {
      MemoryPool* pool;
      std::uint64_t address;
      StreamRef stream;
      ~PoolReturn() {
        if (address != 0) {
          try {
            pool->free_async(address, stream);
          } catch (const Error&) {  // the launch's own error, if any, is the one to report
          }
        }
      }
    } give_back{pool_ ? &*pool_ : nullptr, ws.address == 0 ? base : 0, stream};
    if (need != 0 && v.built.ticketed_rows) {
      fill_u32_async(ctx_, base, 0u, kernels::BuiltNorm::kRowCounterBytes / 4, stream);
    }
    values_.pointers[static_cast<int>(Bind::RowCounter)] = base;
    values_.pointers[static_cast<int>(Bind::PartialDw)] =
        need != 0 ? base + v.built.partial_dw_offset() : 0;
    values_.pointers[static_cast<int>(Bind::PartialDb)] =
        need != 0 ? base + v.built.partial_db_offset(batch) : 0;
    values_.partial_rows = v.built.partial_rows(batch);
    launch_steps(v, batch, stream);
  }

  std::uint64_t workspace_bytes(std::uint32_t batch) {
    return built_variant({true, false, max_vec_[1], {}}).built.workspace_bytes(batch);
  }

  void prepare(std::uint32_t vector_elems, const NormVariant& variant) {
    for (const bool backward : {false, true}) {
      const std::uint32_t most = max_vec_[backward ? 1 : 0];
      if (vector_elems > most || (vector_elems != 0 && !std::has_single_bit(vector_elems))) {
        fail(backward,
             fmt::format("prepare: vector_elems must be a power of two in [1, {}], got {}", most,
                         vector_elems));
      }
    }
    // The alternates (prefetching forward, one-launch backward) only where some batch takes them.
    for (const bool backward : {false, true}) {
      const std::uint32_t vec = vector_elems != 0 ? vector_elems : max_vec_[backward ? 1 : 0];
      // The backward of an f32 residual add takes its h in the dtype (Residual::Add).
      NormVariant v = variant;
      if (backward && v.residual == kernels::Residual::AddF32) v.residual = kernels::Residual::Add;
      if (!backward) v.outputs = kernels::Outputs::All;
      built_variant({backward, false, vec, v});
      if (alternate_pays(backward, vec, 1, v)) built_variant({backward, true, vec, v});
    }
  }

 private:
  // Whether the driver knows `address` as memory a kernel may address: the allocations found
  // before are remembered, so that a caller who reuses its buffers asks the driver once.
  bool known_allocation(std::uint64_t address) {
    for (const Allocation& a : known_) {
      if (a.contains(address)) return true;
    }
    const std::optional<Allocation> found = find_allocation(ctx_, address);
    if (!found) return false;
    known_[next_known_++ % known_.size()] = *found;
    return true;
  }

  [[noreturn]] void fail(bool backward, const std::string& problem) const {
    checks_.fail(backward, problem);
  }

  // Each direction comes in two batch classes (kernels::resolve_batches): the forward with one
  // CTA a row group or persistent CTAs that prefetch rows, the backward with partial rows and a
  // reduce launch or in one launch; a batch up to the small class's limit takes its variant.
  bool alternate_pays(bool backward, std::uint32_t vec, std::uint32_t batch,
                      const NormVariant& variant) {
    const kernels::BatchPlans& plans = plans_for(backward, vec, variant);
    return plans.small && batch <= plans.small_batch_limit;
  }

  // The plans of a direction at a vector width and variant, each batch class resolved once.
  const kernels::BatchPlans& plans_for(bool backward, std::uint32_t vec,
                                       const NormVariant& variant) {
    const VariantKey key{backward, false, vec, variant};
    auto it = plans_.find(key);
    if (it == plans_.end()) [[unlikely]] {
      std::optional<kernels::Plan>& widest = widest_plan_[backward ? 1 : 0];
      const bool is_widest = vec == max_vec_[backward ? 1 : 0] &&
                             key.tie() == VariantKey{backward, false, vec, {}}.tie();
      std::optional<kernels::Plan> large;
      if (is_widest && widest) {
        large = std::move(widest);
        widest.reset();
      } else {
        kernels::NormSpec spec = spec_for(backward, variant);
        spec.knobs.vector_elems = vec;
        try {
          large = kernels::resolve(spec);
        } catch (const Error& e) {
          fail_vector(backward, vec, e);
        }
      }
      it = plans_.emplace(key, kernels::resolve_batches(std::move(*large))).first;
    }
    return it->second;
  }

  // The knobs passed at construction with the widest vectors; the alignment of a call's pointers
  // and stride asked for narrower ones, which they do not fit.
  [[noreturn]] void fail_vector(bool backward, std::uint32_t vec, const Error& e) const {
    fail(backward, fmt::format("with vectors of {} element{} (what this call's pointers and "
                               "stride allow): {}",
                               vec, vec == 1 ? "" : "s", e.what()));
  }

  const Variant& built_variant(const VariantKey& key) {
    std::unique_ptr<Variant>& slot = variants_[key];
    if (!slot) [[unlikely]] {
      slot = build(key);
    }
    return *slot;
  }

  std::unique_ptr<Variant> build(const VariantKey& key) {
    const bool backward = key.backward;
    const std::uint32_t vec = key.vec;
    const kernels::BatchPlans& plans = plans_for(backward, vec, key.variant);
    auto v = std::make_unique<Variant>();
    try {
      v->built = kernels::build(key.alternate ? *plans.small : plans.large);
    } catch (const Error& e) {
      fail_vector(backward, vec, e);
    }
    const std::string name = fmt::format(
        "{} ({} elements a vector)",
        v->built.steps.empty() ? describe(backward) : v->built.steps[0].contract.entry, vec);
    std::shared_ptr<const LoadedModule> module = cache_->get(ctx_, v->built.ptx, name);
    for (kernels::LaunchStep& step : v->built.steps) {
      Function function(module, step.contract);
      cap_persistent_clusters(function, step);
      PreparedStep p{std::move(function),
                     step.grid,
                     step.contract.block_threads,
                     step.contract.dynamic_shared_bytes,
                     {}};
      for (std::size_t i = 0; i < step.args.size(); ++i) p.params.push_back(slot_for(step, i));
      v->steps.push_back(std::move(p));
    }
    return v;
  }

  // A persistent grid of clusters no larger than the device holds at once: a cluster that waited
  // for another to end would walk its rows after it. The plan's SM count cannot say this (how
  // clusters fit the GPCs is the driver's), and the partial rows follow the grid.
  static void cap_persistent_clusters(const Function& f, kernels::LaunchStep& step) {
    kernels::GridRule& g = step.grid;
    if (g.kind != kernels::GridRule::Kind::Persistent || g.cluster_ctas <= 1) return;
    const std::uint32_t resident =
        max_active_clusters(f, {g.cluster_ctas, 1, 1}, {step.contract.block_threads, 1, 1},
                            step.contract.dynamic_shared_bytes);
    if (resident > 0) g.max_ctas = std::min(g.max_ctas, resident * g.cluster_ctas);
  }

  // The values a step's parameter `i` reads (its type checked when the step was built).
  void* slot_for(const kernels::LaunchStep& step, std::size_t i) {
    switch (const Bind arg = step.args[i]) {
      case Bind::Batch:
        return &values_.batch;
      case Bind::Stride:
        return &values_.stride;
      case Bind::PartialRows:
        return &values_.partial_rows;
      case Bind::Eps:
        return &values_.eps;
      default:
        return &values_.pointers[static_cast<int>(arg)];
    }
  }

  Context ctx_;
  NormType type_;
  NormOptions options_;
  kernels::NormSpec spec_;       // dtypes, width, target; knobs_ hold each direction's knobs
  kernels::NormKnobs knobs_[2];  // [backward]
  std::uint32_t max_vec_[2] = {8, 8};
  std::uint32_t last_vec_ = 0;
  std::array<Allocation, 16> known_{};  // known_allocation's memory, replaced oldest first
  std::size_t next_known_ = 0;
  ModuleCache* cache_ = nullptr;
  std::map<VariantKey, std::unique_ptr<Variant>> variants_;
  std::map<VariantKey, kernels::BatchPlans> plans_;  // keyed with alternate false
  std::optional<kernels::Plan> widest_plan_[2];      // the constructor's, until a call takes it
  std::optional<MemoryPool> pool_;  // the backward's workspace when the caller gives none
  std::string pool_error_;          // why there is no pool
  CallValues values_;
  CallChecks checks_;
};

}  // namespace detail

void check_call(const NormType& type, const NormCall& call) {
  kernels::check_weight_dtype(type.dtype, type.weight_dtype);
  detail::CallChecks(type).check_model(call.direction == Direction::Backward);
  if (call.batch == 0) return;
  detail::CallChecks(type).check(call, detail::pointers_of(type.layer, call));
}
void check_call(DType dtype, DType weight_dtype, std::uint32_t width,
                const LayerNormForwardArgs& args) {
  check_call({true, dtype, weight_dtype, width}, norm_call(args));
}
void check_call(DType dtype, DType weight_dtype, std::uint32_t width,
                const LayerNormBackwardArgs& args) {
  check_call({true, dtype, weight_dtype, width}, norm_call(args));
}
void check_call(DType dtype, DType weight_dtype, std::uint32_t width,
                const RmsNormForwardArgs& args) {
  check_call({false, dtype, weight_dtype, width}, norm_call(args));
}
void check_call(DType dtype, DType weight_dtype, std::uint32_t width,
                const RmsNormBackwardArgs& args) {
  check_call({false, dtype, weight_dtype, width}, norm_call(args));
}

Norm::Norm(const Context& ctx, const NormType& type, NormOptions options)
    : impl_(std::make_unique<detail::NormPair>(ctx, type, options)) {}
Norm::Norm(Norm&&) noexcept = default;
Norm& Norm::operator=(Norm&&) noexcept = default;
Norm::~Norm() = default;

void Norm::prepare(std::uint32_t vector_elems, const NormVariant& variant) {
  impl_->prepare(vector_elems, variant);
}
std::uint64_t Norm::workspace_bytes(std::uint32_t batch) {
  return impl_->workspace_bytes(batch);
}
void Norm::call(const NormCall& call) {
  impl_->call(call);
}
const NormType& Norm::type() const {
  return impl_->type();
}
std::uint32_t Norm::width() const {
  return type().width;
}
DType Norm::dtype() const {
  return type().dtype;
}
DType Norm::weight_dtype() const {
  return type().weight_dtype;
}
std::uint32_t Norm::last_vector_elems() const {
  return impl_->last_vec();
}

LayerNorm::LayerNorm(const Context& ctx, DType dtype, DType weight_dtype, std::uint32_t width,
                     NormOptions options, const NormModelOptions& model)
    : Norm(ctx, {true, dtype, weight_dtype, width, model}, options) {}
void LayerNorm::forward(const LayerNormForwardArgs& a) {
  call(norm_call(a));
}
void LayerNorm::backward(const LayerNormBackwardArgs& a) {
  call(norm_call(a));
}

RmsNorm::RmsNorm(const Context& ctx, DType dtype, DType weight_dtype, std::uint32_t width,
                 NormOptions options, const NormModelOptions& model)
    : Norm(ctx, {false, dtype, weight_dtype, width, model}, options) {}
void RmsNorm::forward(const RmsNormForwardArgs& a) {
  call(norm_call(a));
}
void RmsNorm::backward(const RmsNormBackwardArgs& a) {
  call(norm_call(a));
}

}  // namespace ptxdsl::runtime
