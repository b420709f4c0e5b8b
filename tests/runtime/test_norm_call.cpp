// The norms' one call shape (runtime::NormCall) without a device: which tensors each norm and
// direction takes, the variant a call's views ask for, and the checks check_call makes, the same
// for a NormCall as for the typed calls that convert to it.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "ptxdsl/runtime/norms.hpp"

using namespace ptxdsl;
using namespace ptxdsl::runtime;

namespace {

std::string names(bool layer, Direction direction, bool required_only = false) {
  std::string s;
  for (const NormTensor& t : norm_tensors(layer, direction)) {
    if (required_only && !t.required) continue;
    s += std::string(s.empty() ? "" : " ") + std::string(kernels::arg_name(t.arg));
  }
  return s;
}

// Distinct, aligned, non-overlapping addresses far enough apart for any tensor below.
DeviceView at(std::uint64_t slot) {
  return DeviceView(slot << 32);
}

const NormType kLayer{true, DType::F16, DType::F16, 256};
const NormType kRms{false, DType::BF16, DType::F32, 256};

NormCall layer_forward() {
  return {.direction = Direction::Forward,
          .x = at(1),
          .w = at(2),
          .b = at(3),
          .y = at(4),
          .mean = at(5),
          .rstd = at(6),
          .batch = 8};
}

NormCall rms_backward() {
  return {.direction = Direction::Backward,
          .x = at(1),
          .w = at(2),
          .rstd = at(3),
          .dy = at(4),
          .dx = at(5),
          .dw = at(6),
          .batch = 8};
}

}  // namespace

TEST_CASE("each norm and direction takes its tensors, in its kernels' parameter order",
          "[runtime][norms]") {
  CHECK(names(true, Direction::Forward) == "x w b residual y y_scale quant_scale_in h mean rstd");
  CHECK(names(false, Direction::Forward) == "x w residual y y_scale quant_scale_in h rstd");
  CHECK(names(true, Direction::Backward) == "dy x w mean rstd dh dx dw db");
  CHECK(names(false, Direction::Backward) == "dy x w rstd dh dx dw");
  CHECK(names(true, Direction::Forward, true) == "x y mean rstd");
  CHECK(names(false, Direction::Backward, true) == "dy x rstd dx");
  for (const NormTensor& t : norm_tensors(true, Direction::Backward)) {
    const bool output = t.arg == kernels::NormArg::Dx || t.arg == kernels::NormArg::Dw ||
                        t.arg == kernels::NormArg::Db;
    CHECK(t.written == output);
  }
}

TEST_CASE("a NormCall's variant is the typed call's, and views it does not take are refused",
          "[runtime][norms]") {
  NormCall c = layer_forward();
  c.b = {};
  CHECK(variant_of(true, c).affine == kernels::Affine::Weight);
  CHECK(variant_of(false, {.w = at(2)}).affine == kernels::Affine::Full);
  CHECK(variant_of(RmsNormForwardArgs{}).affine == kernels::Affine::None);
  const NormVariant dx_alone = variant_of(false, {.direction = Direction::Backward, .w = at(2)});
  CHECK(dx_alone.outputs == kernels::Outputs::Dx);
  CHECK(variant_of(true, {.residual = at(7), .h = at(8), .residual_in_f32 = true}).residual ==
        kernels::Residual::AddF32);

  CHECK_THROWS_WITH(variant_of(false, {.b = at(3)}),
                    "b is given to an RMS norm's forward, which does not take it (it takes x, w, "
                    "residual, y, y_scale, quant_scale_in, h, rstd)");
  CHECK_THROWS_WITH(variant_of(true, {.dy = at(3)}),
                    Catch::StartsWith("dy is given to a layer norm's forward"));
  CHECK_THROWS_WITH(variant_of(true, {.direction = Direction::Backward, .y = at(3)}),
                    Catch::StartsWith("y is given to a layer norm's backward"));
  CHECK_THROWS_WITH(variant_of(false, {.direction = Direction::Backward, .residual_in_f32 = true}),
                    Catch::StartsWith("residual_in_f32 is set on a backward"));
  CHECK_THROWS_WITH(variant_of(false, {.workspace = {1024, 64}}),
                    "a workspace is given to a forward, which needs none");
  CHECK_THROWS_WITH(variant_of(true, {.b = at(3)}), Catch::StartsWith("b is given without w"));
}

TEST_CASE("check_call refuses a NormCall as the object would, and the typed calls alike",
          "[runtime][norms]") {
  CHECK_NOTHROW(check_call(kLayer, layer_forward()));
  CHECK_NOTHROW(check_call(kRms, rms_backward()));
  // Batch 0 checks the dtype pair alone.
  CHECK_NOTHROW(check_call(kLayer, NormCall{}));
  CHECK_THROWS_WITH(check_call({true, DType::F16, DType::BF16, 256}, NormCall{}),
                    Catch::Contains("weight dtype must be f16 (the input's) or f32, got bf16"));

  NormCall c = layer_forward();
  c.y = {};
  CHECK_THROWS_WITH(check_call(kLayer, c),
                    "LayerNorm(f16, weights f16, width 256).forward: y is a null pointer");
  c = layer_forward();
  c.y = c.x;
  CHECK_THROWS_WITH(check_call(kLayer, c), Catch::Contains("y overlaps x"));
  c = layer_forward();
  c.eps = -1;
  CHECK_THROWS_WITH(check_call(kLayer, c), Catch::Contains("eps must be a finite number ≥ 0"));
  c = layer_forward();
  c.stride = 255;
  CHECK_THROWS_WITH(check_call(kLayer, c),
                    Catch::Contains("stride must be at least the width 256, got 255"));
  c = layer_forward();
  c.width = 512;
  CHECK_THROWS_WITH(check_call(kLayer, c), Catch::Contains("called with width 512"));
  c = layer_forward();
  c.dh = at(9);
  CHECK_THROWS_WITH(check_call(kLayer, c),
                    Catch::StartsWith("LayerNorm(f16, weights f16, width 256).forward: dh is "
                                      "given to a layer norm's forward"));

  NormCall b = rms_backward();
  b.dx = b.dy;
  CHECK_THROWS_WITH(check_call(kRms, b),
                    Catch::StartsWith("RmsNorm(bf16, weights f32, width 256).backward: dx "
                                      "overlaps dy"));
  b = rms_backward();
  b.workspace = {0x700008, 4096};
  CHECK_THROWS_WITH(check_call(kRms, b), Catch::Contains("the workspace at 0x700008 is not "
                                                         "16-byte aligned"));
  // A short view, by its element size and bytes.
  b = rms_backward();
  b.dw = DeviceView(at(6).address, 4 * 255, 4);
  CHECK_THROWS_WITH(check_call(kRms, b), Catch::Contains("dw holds 1020 bytes; width 256 needs "
                                                         "1024 bytes of f32"));

  // The typed calls convert to the same NormCall and are refused with the same message.
  const RmsNormBackwardArgs typed{
      .dy = at(4), .x = at(1), .w = at(2), .rstd = at(3), .dx = at(4), .dw = at(6), .batch = 8};
  CHECK_THROWS_WITH(check_call(kRms.dtype, kRms.weight_dtype, kRms.width, typed),
                    Catch::StartsWith("RmsNorm(bf16, weights f32, width 256).backward: dx "
                                      "overlaps dy"));
  const NormCall converted = norm_call(typed);
  CHECK(converted.direction == Direction::Backward);
  CHECK(converted.dx.address == typed.dx.address);
  CHECK(converted.dw.address == typed.dw.address);
  CHECK(converted.batch == 8u);
}

// ---- Model options (weight offset, casting, row groups): NormType's, each its own kernels ----

namespace {

NormType with_model(NormType t, const NormModelOptions& m) {
  t.model = m;
  return t;
}

// The entry names and PTX of a type's forward and backward (the module cache is keyed by the PTX).
std::pair<std::string, std::string> kernels_of(const NormType& t, Direction d) {
  const kernels::BuiltNorm built = kernels::build_norm(norm_spec(t, d));
  std::string entries;
  for (const kernels::LaunchStep& s : built.steps) entries += s.contract.entry + " ";
  return {entries, built.ptx};
}

}  // namespace

TEST_CASE("a type's model options reach its kernel spec, and each one its own kernels",
          "[runtime][norms]") {
  const kernels::NormSpec plain = norm_spec(kRms, Direction::Forward);
  CHECK(plain.weight_offset == 0.0f);
  CHECK(plain.casting == kernels::Casting::None);
  CHECK(plain.row_groups == 1);
  CHECK(plain.group_stride == 0);
  CHECK(kernels::variant_suffix(plain).empty());
  // The typed calls' defaults are today's norm.
  CHECK(NormType{false, DType::BF16, DType::F32, 256} == kRms);

  const NormModelOptions models[] = {{.weight_offset = 1.0f},
                                     {.casting = kernels::Casting::Llama},
                                     {.casting = kernels::Casting::Gemma},
                                     {.row_groups = 4, .group_stride = 512},
                                     {.row_groups = 4, .group_stride = 264}};
  for (const NormType& base : {kLayer, kRms}) {
    for (const Direction d : {Direction::Forward, Direction::Backward}) {
      const auto [plain_entries, plain_ptx] = kernels_of(base, d);
      std::vector<std::pair<std::string, std::string>> seen{{plain_entries, plain_ptx}};
      for (const NormModelOptions& m : models) {
        const NormType t = with_model(base, m);
        const kernels::NormSpec s = norm_spec(t, d);
        CHECK(s.weight_offset == m.weight_offset);
        CHECK(s.casting == m.casting);
        CHECK(s.row_groups == m.row_groups);
        CHECK(s.group_stride == m.group_stride);
        // A variant is never served another's kernel: its entry names and PTX differ from the
        // default's and from every other variant's.
        auto [entries, ptx] = kernels_of(t, d);
        INFO(entries);
        for (const auto& [other_entries, other_ptx] : seen) {
          CHECK(entries != other_entries);
          CHECK(ptx != other_ptx);
        }
        seen.emplace_back(std::move(entries), std::move(ptx));
      }
    }
  }
}

TEST_CASE("check_call refuses model options and row-group layouts the kernels cannot take",
          "[runtime][norms]") {
  const NormType gemma = with_model(kRms, {.weight_offset = 1.0f});
  NormCall c = rms_backward();
  CHECK_NOTHROW(check_call(gemma, c));
  NormCall no_w{.direction = Direction::Forward, .x = at(1), .y = at(4), .rstd = at(6), .batch = 8};
  CHECK_NOTHROW(check_call(kRms, no_w));
  CHECK_THROWS_WITH(check_call(gemma, no_w),
                    "RmsNorm(bf16, weights f32, width 256, weight offset 1).forward: a weight "
                    "offset of 1 needs w: y = x̂·(1 + w) (give w)");
  CHECK_THROWS_WITH(check_call(with_model(kRms, {.weight_offset = NAN}), NormCall{}),
                    Catch::Contains("weight offset must be a finite number, got nan"));
  CHECK_THROWS_WITH(
      check_call(with_model(kLayer, {.casting = static_cast<kernels::Casting>(7)}), NormCall{}),
      Catch::Contains("casting must be one of none, llama, gemma, got enum value 7"));

  // Row groups: 4 heads of width 256, 264 elements apart; a token's span is 3·264 + 256 = 1048.
  const NormType heads = with_model(kLayer, {.row_groups = 4, .group_stride = 264});
  NormCall f = layer_forward();
  f.stride = 1048;
  CHECK_NOTHROW(check_call(heads, f));
  f.stride = 1047;
  CHECK_THROWS_WITH(check_call(heads, f),
                    "LayerNorm(f16, weights f16, width 256, row groups 4 × group stride 264)."
                    "forward: stride must be at least the row groups' span (row groups 4 − "
                    "1)·group stride 264 + width 256 = 1048, got 1047");
  f.stride = 0;  // contiguous: the width, below the span
  CHECK_THROWS_WITH(check_call(heads, f), Catch::Contains("= 1048, got 256"));
  // Batch 8 = two tokens: the last row ends at 1·stride + 3·264 + 256 elements.
  f.stride = 2000;
  const std::uint64_t extent = 2000 + 3 * 264 + 256;
  f.x = DeviceView(at(1).address, extent * 2);
  CHECK_NOTHROW(check_call(heads, f));
  f.x = DeviceView(at(1).address, extent * 2 - 2);
  CHECK_THROWS_WITH(check_call(heads, f), Catch::Contains("x holds"));

  CHECK_THROWS_WITH(check_call(with_model(kLayer, {.row_groups = 4, .group_stride = 200}), f),
                    Catch::Contains("group stride must be at least the width (256), got 200"));
  CHECK_THROWS_WITH(check_call(with_model(kLayer, {.row_groups = 0}), NormCall{}),
                    Catch::Contains("row groups must be in [1, 65536], got 0"));
  CHECK_THROWS_WITH(check_call(with_model(kLayer, {.group_stride = 512}), NormCall{}),
                    Catch::Contains("group stride 512 spaces the rows of a group; row groups 1 "
                                    "has none"));
  CHECK_THROWS_WITH(
      check_call(with_model(kLayer, {.row_groups = 65536, .group_stride = 131072}), NormCall{}),
      Catch::Contains("span 8589803776 elements, more than 2^32 - 1"));
}

TEST_CASE("a quantized forward's type: its kernels, y's codes and the scales a call must give",
          "[runtime][norms]") {
  const NormType int8 = with_model(kRms, {.quant = kernels::Quant::Int8});
  CHECK(norm_spec(int8, Direction::Forward).quant == kernels::Quant::Int8);
  // The backward reads no y: it is the norm's own.
  CHECK(norm_spec(int8, Direction::Backward).quant == kernels::Quant::None);
  CHECK(kernels_of(int8, Direction::Forward).first != kernels_of(kRms, Direction::Forward).first);
  CHECK(kernels_of(int8, Direction::Backward) == kernels_of(kRms, Direction::Backward));
  CHECK(quant_output(kRms).element_bits == 16);
  CHECK(quant_output(kRms).scales_per_row == 0);
  CHECK(quant_output(int8).element == ScalarType::S8);
  CHECK(quant_output(int8).element_bits == 8);
  CHECK(quant_output(int8).scales_per_row == 1);
  CHECK(quant_output(int8).scale_bytes == 4);
  CHECK_FALSE(quant_output(int8).reads_scale_in);

  NormCall f{.direction = Direction::Forward,
             .x = at(1),
             .w = at(2),
             .y = DeviceView(at(4).address, 8 * 256),
             .rstd = at(6),
             .y_scale = DeviceView(at(7).address, 8 * 4),
             .batch = 8};
  CHECK_NOTHROW(check_call(int8, f));
  // y holds a byte an element; the scales one f32 a row.
  f.y = DeviceView(at(4).address, 8 * 256 - 1);
  CHECK_THROWS_WITH(check_call(int8, f),
                    "RmsNorm(bf16, weights f32, width 256, quant int8).forward: y holds 2047 "
                    "bytes; batch 8 × stride 256 (width 256) needs 2048 bytes of int8");
  f.y = at(4);
  f.y_scale = DeviceView(at(7).address, 8 * 4 - 4);
  CHECK_THROWS_WITH(check_call(int8, f), Catch::Contains("y_scale holds 28 bytes; batch 8 needs "
                                                         "32 bytes of f32"));
  f.y_scale = {};
  CHECK_THROWS_WITH(check_call(int8, f), Catch::Contains("y_scale is a null pointer: quant int8 "
                                                         "writes its f32 scales there (1 a row)"));
  f.y_scale = at(7);
  CHECK_THROWS_WITH(check_call(kRms, f),
                    Catch::Contains("y_scale is given, but the quant is none"));
  f.y_scale = at(1);
  CHECK_THROWS_WITH(check_call(int8, f), Catch::Contains("y_scale overlaps x"));
  // A backward of the type takes no y_scale (it is not among its tensors).
  NormCall b = rms_backward();
  CHECK_NOTHROW(check_call(int8, b));
  b.y_scale = at(7);
  CHECK_THROWS_WITH(check_call(int8, b), Catch::Contains("y_scale is given to an RMS norm's "
                                                         "backward, which does not take it"));
  CHECK_THROWS_WITH(
      check_call(with_model(kRms, {.quant = static_cast<kernels::Quant>(40)}), NormCall{}),
      Catch::Contains("quant must be one of none, fp8-e4m3, fp8-e5m2, int8, mxfp8, nvfp4, got "
                      "enum value 40"));
}

TEST_CASE(
    "quant scale modes: static reads quant_scale_in and writes no scales, group128 writes "
    "[rows][width / 128]; each refusal names the value and what is allowed",
    "[runtime][norms]") {
  using kernels::Quant;
  using kernels::QuantScale;
  const NormType fp8_static =
      with_model(kRms, {.quant = Quant::Fp8E4m3, .quant_scale = QuantScale::Static});
  const NormType int8_group =
      with_model(kRms, {.quant = Quant::Int8, .quant_scale = QuantScale::Group128});
  // The mode reaches the forward's kernels alone; each mode is its own kernel.
  CHECK(norm_spec(fp8_static, Direction::Forward).quant_scale == QuantScale::Static);
  CHECK(norm_spec(fp8_static, Direction::Backward).quant_scale == QuantScale::PerToken);
  CHECK(kernels_of(fp8_static, Direction::Forward).first !=
        kernels_of(with_model(kRms, {.quant = Quant::Fp8E4m3}), Direction::Forward).first);
  CHECK(kernels_of(fp8_static, Direction::Backward) == kernels_of(kRms, Direction::Backward));

  const QuantOutput st = quant_output(fp8_static);
  CHECK(st.element == ScalarType::E4M3);
  CHECK(st.element_bits == 8);
  CHECK(st.scales_per_row == 0);
  CHECK(st.scale_bytes == 0);
  CHECK(st.reads_scale_in);
  CHECK(quant_scale_bytes(fp8_static, 8) == 0);
  const QuantOutput gr = quant_output(int8_group);
  CHECK(gr.scales_per_row == 2);  // width 256
  CHECK(gr.scale == ScalarType::F32);
  CHECK(gr.scale_bytes == 4);
  CHECK_FALSE(gr.reads_scale_in);
  CHECK(quant_scale_bytes(int8_group, 8) == 8 * 2 * 4);

  NormCall f{.direction = Direction::Forward,
             .x = at(1),
             .w = at(2),
             .y = DeviceView(at(4).address, 8 * 256),
             .rstd = at(6),
             .quant_scale_in = DeviceView(at(8).address, 4),
             .batch = 8};
  CHECK_NOTHROW(check_call(fp8_static, f));
  f.quant_scale_in = {};
  CHECK_THROWS_WITH(check_call(fp8_static, f),
                    "RmsNorm(bf16, weights f32, width 256, quant fp8-e4m3 scale static).forward: "
                    "quant_scale_in is a null pointer: quant fp8-e4m3 with scale static reads its "
                    "scale there (one f32 on the device)");
  f.quant_scale_in = DeviceView(at(8).address, 2);
  CHECK_THROWS_WITH(
      check_call(fp8_static, f),
      Catch::Contains("quant_scale_in holds 2 bytes; one scale needs 4 bytes of f32"));
  f.quant_scale_in = at(8);
  f.y_scale = at(7);
  CHECK_THROWS_WITH(check_call(fp8_static, f),
                    Catch::Contains("y_scale is given, but quant fp8-e4m3 with scale static "
                                    "writes no scales (it reads its one scale from "
                                    "quant_scale_in; leave y_scale empty)"));
  f.y_scale = {};
  f.quant_scale_in = at(1);  // read, never written: it may lie anywhere but in an output
  CHECK_NOTHROW(check_call(fp8_static, f));
  f.quant_scale_in = at(4);
  CHECK_THROWS_WITH(check_call(fp8_static, f), Catch::Contains("y overlaps quant_scale_in"));

  // group128: two f32 scales a row at width 256.
  f.quant_scale_in = {};
  f.y_scale = DeviceView(at(7).address, 8 * 2 * 4);
  CHECK_NOTHROW(check_call(int8_group, f));
  f.y_scale = DeviceView(at(7).address, 8 * 2 * 4 - 4);
  CHECK_THROWS_WITH(check_call(int8_group, f),
                    Catch::Contains("y_scale holds 60 bytes; batch 8 needs 64 bytes of f32"));
  f.y_scale = {};
  CHECK_THROWS_WITH(check_call(int8_group, f),
                    Catch::Contains("y_scale is a null pointer: quant int8 with scale group128 "
                                    "writes its f32 scales there (2 a row)"));
  f.y_scale = at(7);
  f.quant_scale_in = at(8);
  CHECK_THROWS_WITH(check_call(int8_group, f),
                    Catch::Contains("quant_scale_in is given, but quant int8 with scale group128 "
                                    "reads none"));
  f.quant_scale_in = {};
  // The typed calls carry quant_scale_in as NormCall does.
  CHECK(norm_call(RmsNormForwardArgs{.quant_scale_in = at(8)}).quant_scale_in.address ==
        at(8).address);
  CHECK(norm_call(LayerNormForwardArgs{.quant_scale_in = at(8)}).quant_scale_in.address ==
        at(8).address);

  // Widths group128 does not divide, modes the format does not take, names the kernels do not
  // know: refused by name, whatever the call.
  CHECK_THROWS_WITH(
      check_call({false,
                  DType::BF16,
                  DType::F32,
                  1000,
                  {.quant = Quant::Int8, .quant_scale = QuantScale::Group128}},
                 NormCall{}),
      "RmsNorm(bf16, weights f32, width 1000, quant int8 scale group128).forward: quant scale "
      "group128 takes widths that are multiples of 128 (scales [rows][width / 128], DeepGEMM's "
      "layout), got width 1000");
  CHECK_THROWS_WITH(
      check_call(with_model(kRms, {.quant_scale = QuantScale::Static}), NormCall{}),
      Catch::Contains("quant scale static scales a quantized y; the quant is none (give "
                      "fp8-e4m3, fp8-e5m2 or int8)"));
  CHECK_THROWS_WITH(
      check_call(with_model(kRms, {.quant = Quant::Mxfp8, .quant_scale = QuantScale::Group128}),
                 NormCall{}),
      Catch::Contains("quant mxfp8 has its own scales (one per 32 elements): quant scale must be "
                      "per-token (the default), got group128"));
  CHECK_THROWS_WITH(
      check_call(with_model(kRms, {.quant = Quant::Int8,
                                   .quant_scale_layout = kernels::QuantScaleLayout::Cublas}),
                 NormCall{}),
      Catch::Contains("quant scale layout cublas lays out block scales (mxfp8, nvfp4); quant int8 "
                      "has none (leave it row-major)"));
  CHECK_THROWS_WITH(
      check_call(
          with_model(kRms, {.quant = Quant::Int8, .quant_scale = static_cast<QuantScale>(9)}),
          NormCall{}),
      Catch::Contains("quant scale must be one of per-token, static, group128, got enum value 9"));
  // A backward of a quantized type takes neither scale tensor.
  NormCall b = rms_backward();
  b.quant_scale_in = at(8);
  CHECK_THROWS_WITH(check_call(fp8_static, b),
                    Catch::Contains("quant_scale_in is given to an RMS norm's backward, which does "
                                    "not take it"));
}

TEST_CASE(
    "block-scaled outputs (mxfp8, nvfp4) are sized in bytes, and the runtime targets "
    "sm_100a for them, which a GPU without it refuses by name",
    "[runtime][norms]") {
  using kernels::Quant;
  const NormType mx = with_model(kRms, {.quant = Quant::Mxfp8});
  const NormType fp4 = with_model(kRms, {.quant = Quant::Nvfp4});
  const NormType fp4_cublas = with_model(
      kRms, {.quant = Quant::Nvfp4, .quant_scale_layout = kernels::QuantScaleLayout::Cublas});
  const QuantOutput m = quant_output(mx);
  CHECK(m.element == ScalarType::E4M3);
  CHECK(m.element_bits == 8);
  CHECK(m.scale == ScalarType::U8);  // the ue8m0 bytes
  CHECK(m.scale_bytes == 1);
  CHECK(m.scales_per_row == 256 / 32);
  CHECK_FALSE(m.reads_scale_in);
  CHECK(quant_scale_bytes(mx, 3) == 3 * 8);
  const QuantOutput n = quant_output(fp4);
  CHECK(n.element == ScalarType::E2M1x2);
  CHECK(n.element_bits == 4);
  CHECK(n.y_bytes(256) == 128);
  CHECK(n.y_bytes(3) == 2);
  CHECK(n.scale == ScalarType::E4M3);
  CHECK(n.scales_per_row == 256 / 16);
  CHECK(n.reads_scale_in);  // the global scale
  CHECK(quant_scale_bytes(fp4, 3) == 3 * 16);
  // cuBLAS's tiles: 128 rows × 4 blocks, whole tiles (16 blocks: 4 tiles a row of tiles).
  CHECK(quant_scale_bytes(fp4_cublas, 3) == 4 * 512);
  CHECK(quant_scale_bytes(fp4_cublas, 129) == 2 * 4 * 512);

  // A call: y of 4-bit codes, the e4m3 scales, the global scale.
  NormCall f{.direction = Direction::Forward,
             .x = at(1),
             .w = at(2),
             .y = DeviceView(at(4).address, 8 * 128),
             .rstd = at(6),
             .y_scale = DeviceView(at(7).address, 8 * 16),
             .quant_scale_in = at(8),
             .batch = 8};
  CHECK_NOTHROW(check_call(fp4, f));
  f.y = DeviceView(at(4).address, 8 * 128 - 1);
  CHECK_THROWS_WITH(check_call(fp4, f),
                    Catch::Contains("y holds 1023 bytes; batch 8 × stride 256 (width 256) needs "
                                    "1024 bytes of nvfp4"));
  f.y = at(4);
  f.y_scale = DeviceView(at(7).address, 8 * 16 - 1);
  CHECK_THROWS_WITH(check_call(fp4, f),
                    Catch::Contains("y_scale holds 127 bytes; batch 8 needs 128 bytes of e4m3"));
  f.y_scale = at(7);
  f.quant_scale_in = {};
  CHECK_THROWS_WITH(check_call(fp4, f),
                    Catch::Contains("quant_scale_in is a null pointer: quant nvfp4 reads its "
                                    "global scale there"));

  // On a GPU without sm_100a (H100: sm_90a) the kernels refuse the target, naming what it needs;
  // on a B200 the runtime targets sm_100a and the kernels plan it.
  const DeviceModel h100 = device_preset("h100");
  const DeviceModel b200 = device_preset("b200");
  CHECK(target_arch(kRms, h100) == Arch::Sm90);
  CHECK(target_arch(with_model(kRms, {.quant = Quant::Int8}), b200) == Arch::Sm100);
  for (const NormType& t : {mx, fp4}) {
    kernels::NormSpec s = norm_spec(t, Direction::Forward);
    s.device = h100;
    s.arch = target_arch(t, h100);
    CHECK(s.arch == Arch::Sm90a);
    CHECK_THROWS_WITH(kernels::validate(s), Catch::Contains(fmt::format(
                                                "quant {}", kernels::quant_name(t.model.quant))) &&
                                                Catch::Contains("needs sm_100a, got sm_90a"));
    s.device = b200;
    s.arch = target_arch(t, b200);
    CHECK(s.arch == Arch::Sm100a);
    CHECK_NOTHROW(kernels::validate(s));
  }
}
