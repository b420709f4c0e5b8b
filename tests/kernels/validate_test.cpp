// Bad specs and shapes throw ptxdsl::Error naming the value and the allowed range.
#include <catch2/catch.hpp>

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "ptxdsl/dsl/error.hpp"
#include "ptxdsl/kernels/norm.hpp"
#include "spec_of.hpp"

using namespace ptxdsl;
using namespace ptxdsl::kernels;

TEST_CASE("width outside [1, 262144] is refused", "[validate]") {
  for (NormKind kind : {NormKind::LayerNormFwd, NormKind::LayerNormBwd, NormKind::RmsNormFwd,
                        NormKind::RmsNormBwd}) {
    REQUIRE_THROWS_WITH(build_norm(spec_of(kind, DType::F16, 0)),
                        "width must be in [1, 262144], got 0");
    REQUIRE_THROWS_WITH(validate(spec_of(kind, DType::F32, 262145)),
                        "width must be in [1, 262144], got 262145");
    REQUIRE_NOTHROW(validate(spec_of(kind, DType::BF16, 1)));
    REQUIRE_NOTHROW(validate(spec_of(kind, DType::BF16, 65536)));
    REQUIRE_NOTHROW(validate(spec_of(kind, DType::BF16, 262144)));
  }
}

TEST_CASE("dtypes: unknown names and values, weights of a third type", "[validate]") {
  REQUIRE_THROWS_WITH(parse_dtype("f64"), "dtype must be one of f32, f16, bf16, got 'f64'");
  REQUIRE_THROWS_WITH(parse_kind("softmax"),
                      "kernel must be one of ln_fwd, ln_bwd, rms_fwd, rms_bwd, got 'softmax'");
  NormSpec s = spec_of(NormKind::RmsNormFwd, DType::F16, 128);
  s.dtype = static_cast<DType>(9);
  REQUIRE_THROWS_WITH(validate(s), "dtype must be one of f32, f16, bf16, got enum value 9");
  s = spec_of(NormKind::RmsNormFwd, DType::F16, 128);
  s.weight_dtype = DType::BF16;
  REQUIRE_THROWS_WITH(validate(s), "weight dtype must be f16 (the input's) or f32, got bf16");
  s.weight_dtype = DType::F32;
  REQUIRE_NOTHROW(validate(s));
  s = spec_of(NormKind::LayerNormFwd, DType::F32, 128);
  s.weight_dtype = DType::F16;
  REQUIRE_THROWS_WITH(validate(s), "weight dtype must be f32 for f32 inputs, got f16");
}

TEST_CASE("knobs outside their ranges are refused", "[validate]") {
  NormSpec s = spec_of(NormKind::LayerNormFwd, DType::F32, 1000);
  s.knobs.vector_elems = 8;
  REQUIRE_THROWS_WITH(validate(s), "vector_elems must be a power of two in [1, 4] for f32, got 8");
  s.knobs.vector_elems = 3;
  REQUIRE_THROWS_WITH(validate(s), "vector_elems must be a power of two in [1, 4] for f32, got 3");
  s = spec_of(NormKind::LayerNormFwd, DType::F16, 1000);
  s.knobs.threads_per_row = 48;
  REQUIRE_THROWS_WITH(validate(s), Catch::Contains("threads_per_row must be a power of two ≤ 32"));
  s.knobs.threads_per_row = 8;
  s.knobs.rows_per_cta = 2;
  REQUIRE_THROWS_WITH(validate(s),
                      "threads_per_row × rows_per_cta must be a multiple of 32 in "
                      "[32, 1024], got 8 × 2 = 16");
  s.knobs.rows_per_cta = 4;
  REQUIRE_NOTHROW(validate(s));
  s = spec_of(NormKind::LayerNormBwd, DType::F16, 1000);
  s.knobs.overlap_reduce = true;
  REQUIRE_NOTHROW(validate(s));
  {
    NormSpec old = s;
    old.arch = Arch::Sm80;
    REQUIRE_THROWS_WITH(validate(old),
                        "overlap_reduce 1 needs sm_90 and PTX 7.8 or newer, got sm_80 and PTX 8.1");
    old.knobs.overlap_reduce = false;  // off asks for no instruction
    REQUIRE_NOTHROW(validate(old));
  }
  s.knobs.overlap_reduce.reset();
  s.knobs.l2_stream = true;
  s.ptx_version = {7, 3};
  REQUIRE_THROWS_WITH(validate(s),
                      "l2_stream 1 needs sm_80 and PTX 7.4 or newer, got sm_90 and PTX 7.3");
  s.ptx_version = {7, 4};
  REQUIRE_NOTHROW(validate(s));
}

TEST_CASE("counts outside their ranges are refused, one knob at a time", "[validate]") {
  using Knob = std::optional<std::uint32_t> NormKnobs::*;
  struct Range {
    Knob knob;
    std::vector<std::pair<std::uint32_t, std::string>> refused;  // value, message
    std::vector<std::uint32_t> taken;
  };
  const std::string powers = "must be a power of two in [1, 32], got ";
  const Range ranges[] = {
      {&NormKnobs::ctas_per_sm, {{0, "ctas_per_sm must be in [1, 32], got 0"}}, {2}},
      {&NormKnobs::sm_count, {{0, "sm_count must be in [1, 1024], got 0"}}, {132}},
      {&NormKnobs::max_registers,
       {{31, "max_registers must be in [32, 255], got 31"},
        {256, "max_registers must be in [32, 255], got 256"}},
       {96}},
      {&NormKnobs::prefetch_rows, {{5, "prefetch_rows must be in [0, 4], got 5"}}, {1}},
      {&NormKnobs::min_row_groups, {{0, "min_row_groups must be in [1, 1024], got 0"}}, {1}},
      {&NormKnobs::reduce_slices,
       {{0, "reduce_slices " + powers + "0"},
        {12, "reduce_slices " + powers + "12"},
        {64, "reduce_slices " + powers + "64"}},
       {1, 32}},
      {&NormKnobs::loop_group,
       {{0, "loop_group must be in [1, 16], got 0"}, {17, "loop_group must be in [1, 16], got 17"}},
       {16}},
  };
  for (const Range& range : ranges) {
    NormSpec s = spec_of(NormKind::LayerNormBwd, DType::F16, 1000);
    for (const auto& [value, message] : range.refused) {
      s.knobs.*range.knob = value;
      REQUIRE_THROWS_WITH(validate(s), message);
    }
    for (std::uint32_t value : range.taken) {
      s.knobs.*range.knob = value;
      REQUIRE_NOTHROW(validate(s));
    }
  }
}

TEST_CASE("prefetch_rows 2 needs the row in registers and vectors cp.async can copy",
          "[validate]") {
  NormSpec s = spec_of(NormKind::LayerNormFwd, DType::F16, 16384);  // staged at 512 threads
  s.knobs.prefetch_rows = 2;
  REQUIRE_THROWS_WITH(validate(s),
                      "prefetch_rows 2 needs every chunk of the row in registers, "
                      "but 4 of the 4 are not; use register_chunks 4 or "
                      "prefetch_rows 1");
  s.width = 1000;
  s.knobs.vector_elems = 1;
  REQUIRE_THROWS_WITH(validate(s),
                      "prefetch_rows 2 copies vectors of 4 to 16 bytes by cp.async; "
                      "vector_elems 1 of f16 is 2 bytes");
  s.knobs.vector_elems = 2;
  REQUIRE_NOTHROW(validate(s));
  // Deeper rings name their depth.
  s.knobs.vector_elems = 1;
  s.knobs.prefetch_rows = 4;
  REQUIRE_THROWS_WITH(validate(s), Catch::StartsWith("prefetch_rows 4 copies vectors of 4 to 16"));
}

TEST_CASE("shapes that need more shared memory than the target has are refused", "[validate]") {
  // 8 row slots of 32 threads, each staging x and dy and merging dw/db partials (17 chunks).
  NormSpec s = spec_of(NormKind::LayerNormBwd, DType::F16, 4097);
  s.knobs.threads_per_row = 32;
  s.knobs.rows_per_cta = 8;
  REQUIRE_THROWS_WITH(validate(s), Catch::Contains("bytes of shared memory, more than the 228352 "
                                                   "that h200 allows; use fewer rows_per_cta"));
  s.knobs.rows_per_cta = 1;
  REQUIRE_NOTHROW(validate(s));
}

TEST_CASE("the budget is the device's, not the arch's", "[validate]") {
  // Four row slots stage about 130 KB: within the H200's 227 KB a block, past an RTX 4090's 99 KB
  // (the same sm_80 PTX runs on both).
  NormSpec s = spec_of(NormKind::LayerNormBwd, DType::F16, 4097);
  s.arch = Arch::Sm80;
  s.knobs.threads_per_row = 32;
  s.knobs.rows_per_cta = 4;
  REQUIRE_NOTHROW(validate(s));
  s.device = device_preset("rtx4090");
  REQUIRE_THROWS_WITH(validate(s), Catch::Contains("more than the 97280 that rtx4090 allows"));
}

TEST_CASE("a spec's PTX target must run on its device", "[validate]") {
  NormSpec s = spec_of(NormKind::RmsNormFwd, DType::BF16, 4096);
  s.device = device_preset("l40s");
  s.arch = Arch::Sm90;
  REQUIRE_THROWS_WITH(validate(s),
                      "sm_90 code does not run on l40s (cc 8.9, whose newest target is sm_89)");
  s.arch = Arch::Sm80;
  REQUIRE_NOTHROW(validate(s));
  s.device = DeviceModel{};
  REQUIRE_THROWS_WITH(validate(s), Catch::Contains("the device model is empty"));
}

TEST_CASE("a block the device cannot hold is refused with the limit named", "[validate]") {
  // 1024 threads at 255 registers: four times what any SM has.
  NormSpec s = spec_of(NormKind::RmsNormFwd, DType::F32, 32768);
  s.knobs.threads_per_row = 1024;
  s.knobs.max_registers = 255;
  REQUIRE_THROWS_WITH(validate(s), Catch::Contains("the kernel does not fit the device") &&
                                       Catch::Contains("h200 has 65536 a block"));
}

TEST_CASE("launch shape checks: batch and stride", "[validate]") {
  REQUIRE_THROWS_WITH(check_batch(0), "batch must be in [1, 2147483647], got 0");
  REQUIRE_NOTHROW(check_batch(1));
  REQUIRE_NOTHROW(check_batch(kMaxBatch));
  REQUIRE_THROWS_WITH(check_batch(kMaxBatch + 1u),
                      "batch must be in [1, 2147483647], got 2147483648");
  REQUIRE_THROWS_WITH(check_stride(4096, 4095), "stride must be ≥ the width (4096), got 4095");
  REQUIRE_NOTHROW(check_stride(4096, 4096));
  REQUIRE_NOTHROW(check_stride(7, 9));
}

TEST_CASE("vector_elems_for picks the widest vector the addresses and stride allow", "[validate]") {
  REQUIRE(vector_elems_for(DType::F16, DType::F16, 4096, 0x1000, 0x2000) == 8);
  REQUIRE(vector_elems_for(DType::F16, DType::F16, 4100, 0x1000, 0x2000) == 4);
  REQUIRE(vector_elems_for(DType::F16, DType::F16, 4096, 0x1002, 0x2000) == 1);
  REQUIRE(vector_elems_for(DType::F16, DType::F32, 4096, 0x1000, 0x2008) == 2);
  REQUIRE(vector_elems_for(DType::F32, DType::F32, 4097, 0x1000, 0x2000) == 1);
  REQUIRE(vector_elems_for(DType::F32, DType::F32, 4098, 0x1008, 0x2000) == 2);
  REQUIRE(vector_elems_for(DType::BF16, DType::BF16, 64, 0, 0) == 8);
}

TEST_CASE("knobs the kernel would ignore, or that conflict, are refused by check_knobs_apply",
          "[validate]") {
  // validate() lets them pass: one set of runtime knobs serves both directions.
  NormSpec fwd = spec_of(NormKind::RmsNormFwd, DType::F16, 1024);
  fwd.knobs.single_launch = true;
  REQUIRE_NOTHROW(validate(fwd));
  REQUIRE_THROWS_WITH(check_knobs_apply(fwd),
                      "single_launch applies to the backwards only; rms_fwd would ignore "
                      "single_launch 1");
  NormSpec bwd = spec_of(NormKind::LayerNormBwd, DType::F16, 1024);
  bwd.knobs.early_weights = true;
  REQUIRE_NOTHROW(validate(bwd));
  REQUIRE_THROWS_WITH(check_knobs_apply(bwd),
                      "early_weights applies to the forwards only; ln_bwd would ignore "
                      "early_weights 1");
  NormSpec rms = spec_of(NormKind::RmsNormFwd, DType::F16, 1024);
  rms.knobs.one_pass_stats = false;
  REQUIRE_THROWS_WITH(check_knobs_apply(rms), Catch::Contains("one_pass_stats applies to ln_fwd"));
  NormSpec conflict = spec_of(NormKind::RmsNormBwd, DType::F16, 1024);
  conflict.knobs.row_order = RowOrder::Tickets;
  conflict.knobs.single_launch = true;
  REQUIRE_NOTHROW(validate(conflict));
  REQUIRE_THROWS_WITH(
      check_knobs_apply(conflict),
      Catch::StartsWith("row_order tickets hands out rows that a second launch reduces"));
  conflict.knobs.single_launch = false;
  REQUIRE_NOTHROW(check_knobs_apply(conflict));
  NormSpec ticketed_fwd = spec_of(NormKind::LayerNormFwd, DType::F16, 1024);
  ticketed_fwd.knobs.row_order = RowOrder::Tickets;
  REQUIRE_THROWS_WITH(check_knobs_apply(ticketed_fwd), Catch::Contains("ln_fwd has none"));
  // Each direction's own knobs pass; check_knobs_apply plans nothing (what the plan refuses,
  // resolve refuses).
  NormSpec own = spec_of(NormKind::LayerNormFwd, DType::F16, 1024);
  own.knobs.one_pass_stats = true;
  own.knobs.early_weights = true;
  own.knobs.row_order = RowOrder::Fixed;
  REQUIRE_NOTHROW(check_knobs_apply(own));
  NormSpec own_bwd = spec_of(NormKind::RmsNormBwd, DType::F16, 1024);
  own_bwd.knobs.single_launch = true;
  own_bwd.knobs.deterministic = false;
  own_bwd.knobs.min_row_groups = 2;
  REQUIRE_NOTHROW(check_knobs_apply(own_bwd));
  const std::uint64_t plans = plans_resolved();
  REQUIRE_NOTHROW(check_knobs_apply(spec_of(NormKind::RmsNormBwd, DType::F16, 0)));
  REQUIRE(plans_resolved() == plans);
  REQUIRE_THROWS_WITH(resolve(spec_of(NormKind::RmsNormBwd, DType::F16, 0)),
                      "width must be in [1, 262144], got 0");
}

TEST_CASE("weight offset: finite, with a weight, named in the entry", "[validate]") {
  NormSpec s = spec_of(NormKind::RmsNormFwd, DType::BF16, 1000);
  s.weight_offset = 1.0f;
  REQUIRE_NOTHROW(validate(s));
  CHECK(variant_suffix(s) == "_wo1");
  s.weight_offset = -0.5f;
  CHECK(variant_suffix(s) == "_wom0p5");
  s.weight_offset = std::numeric_limits<float>::infinity();
  REQUIRE_THROWS_WITH(validate(s), "weight offset must be a finite number (Gemma's is 1), got inf");
  s.weight_offset = 1.0f;
  s.affine = Affine::None;
  REQUIRE_THROWS_WITH(
      validate(s), "weight offset 1 is added to w; affine none has no w (full or weight take it)");
  REQUIRE(parse_weight_offset("1") == 1.0f);
  REQUIRE(parse_weight_offset("-0.25") == -0.25f);
  REQUIRE_THROWS_WITH(parse_weight_offset("one"),
                      "weight offset must be a finite number (Gemma's is 1), got 'one'");
  REQUIRE_THROWS_WITH(parse_weight_offset("nan"),
                      "weight offset must be a finite number (Gemma's is 1), got 'nan'");
}

TEST_CASE("casting: by name, named in the entry, the roundings it asks for", "[validate]") {
  REQUIRE(parse_casting("llama") == Casting::Llama);
  REQUIRE(parse_casting("gemma") == Casting::Gemma);
  REQUIRE_THROWS_WITH(parse_casting("mistral"),
                      "casting must be one of none, llama, gemma, got 'mistral'");
  NormSpec s = spec_of(NormKind::LayerNormFwd, DType::F16, 1000);
  s.casting = static_cast<Casting>(7);
  REQUIRE_THROWS_WITH(validate(s), "casting must be one of none, llama, gemma, got enum value 7");
  s.casting = Casting::Llama;
  REQUIRE_NOTHROW(validate(s));
  CHECK(variant_suffix(s) == "_llama");
  CHECK(rounded_xhat(s) == DType::F16);
  CHECK_FALSE(normalizes_stored_h(s));
  s.residual = Residual::Add;
  s.weight_offset = 1.0f;
  CHECK(variant_suffix(s) == "_res_wo1_llama");
  CHECK(normalizes_stored_h(s));
  s.residual = Residual::AddF32;  // h in f32: its sum is what is stored
  CHECK_FALSE(normalizes_stored_h(s));
  s.dtype = DType::F32;
  s.weight_dtype = DType::F32;
  CHECK_FALSE(rounded_xhat(s));  // rounding f32 x̂ to f32 changes nothing
  s.casting = Casting::Gemma;
  CHECK(variant_suffix(s) == "_resf32_wo1_gemma");
  CHECK_FALSE(rounded_xhat(s));
}

TEST_CASE("row groups: within range, rows of a group apart by whole vectors, named", "[validate]") {
  NormSpec s = spec_of(NormKind::RmsNormFwd, DType::BF16, 128);
  s.row_groups = 32;
  s.group_stride = 128;
  REQUIRE_NOTHROW(validate(s));
  CHECK(variant_suffix(s) == "_g32x128");
  CHECK(row_span(s) == 31 * 128 + 128);
  s.group_stride = 100;
  REQUIRE_THROWS_WITH(validate(s), "group stride must be at least the width (128), got 100");
  s.group_stride = 132;
  REQUIRE_THROWS_WITH(validate(s),
                      "group stride must be a multiple of the vector (8 elements; narrower vectors "
                      "by vector_elems), got 132");
  s.knobs.vector_elems = 4;
  REQUIRE_NOTHROW(validate(s));
  s.row_groups = 0;
  REQUIRE_THROWS_WITH(validate(s), "row groups must be in [1, 65536], got 0");
  s.row_groups = 1;
  REQUIRE_THROWS_WITH(
      validate(s),
      "group stride 132 spaces the rows of a group; row groups 1 has none (give row groups)");
  s.row_groups = 65536;
  s.group_stride = 262144;
  s.knobs.vector_elems.reset();
  REQUIRE_THROWS_WITH(validate(s),
                      "row groups 65536 of group stride 262144 span 17179607168 elements, more "
                      "than 2^32 - 1");
}

TEST_CASE("quant: a forward's, FP8 from sm_90, rows one CTA holds, named in the entry",
          "[validate]") {
  NormSpec s = spec_of(NormKind::RmsNormFwd, DType::BF16, 4096);
  s.quant = Quant::Fp8E4m3;
  REQUIRE_NOTHROW(validate(s));
  CHECK(variant_suffix(s) == "_qe4m3");
  s.quant = Quant::Int8;
  CHECK(variant_suffix(s) == "_qi8");
  s.quant = Quant::Fp8E5m2;
  s.arch = Arch::Sm80;
  s.ptx_version = default_ptx_version(Arch::Sm80);
  REQUIRE_THROWS_WITH(validate(s),
                      "quant fp8-e5m2 converts with cvt e4m3x2/e5m2x2, which needs sm_90 or newer, "
                      "got sm_80");
  s.quant = Quant::Int8;
  REQUIRE_NOTHROW(validate(s));
  NormSpec bwd = spec_of(NormKind::LayerNormBwd, DType::F16, 64);
  bwd.quant = Quant::Int8;
  REQUIRE_THROWS_WITH(validate(bwd), "quant int8 is a forward's output; ln_bwd is a backward");
  NormSpec wide = spec_of(NormKind::LayerNormFwd, DType::F32, 16384);
  wide.quant = Quant::Fp8E4m3;
  REQUIRE_NOTHROW(validate(wide));
  wide.width = 17408;
  REQUIRE_THROWS_WITH(validate(wide),
                      Catch::Contains("width 17408 (69632 bytes of f32) splits over "
                                      "a cluster of"));
  REQUIRE_THROWS_WITH(parse_quant("fp4"),
                      "quant must be one of none, fp8-e4m3, fp8-e5m2, int8, mxfp8, nvfp4, got "
                      "'fp4'");
  CHECK(quant_max(Quant::Fp8E5m2) == 57344.0f);
}

TEST_CASE("quant scale: static or group128 with a format, group128 in vectors a warp holds, named",
          "[validate]") {
  NormSpec s = spec_of(NormKind::RmsNormFwd, DType::BF16, 4096);
  s.quant_scale = QuantScale::Static;
  REQUIRE_THROWS_WITH(validate(s),
                      "quant scale static scales a quantized y; quant is none (give a format)");
  s.quant = Quant::Fp8E4m3;
  REQUIRE_NOTHROW(validate(s));
  CHECK(variant_suffix(s) == "_qe4m3_static");
  CHECK(quant_scales_per_row(s) == 0);
  s.quant_scale = QuantScale::Group128;
  s.width = 4097;  // a ragged last group
  REQUIRE_NOTHROW(validate(s));
  CHECK(variant_suffix(s) == "_qe4m3_grp128");
  CHECK(quant_scales_per_row(s) == 33);
  s.knobs.vector_elems = 2;
  REQUIRE_THROWS_WITH(validate(s),
                      "quant scale group128 takes each 128-element group's absmax within a warp: "
                      "it needs vectors of at least 4 elements, got 2 (the rows' stride and "
                      "addresses allow no wider)");
  s.width = 100;  // one group: reduced as a row, in any vector
  REQUIRE_NOTHROW(validate(s));
  CHECK(quant_scales_per_row(s) == 1);
  s.quant_scale = static_cast<QuantScale>(7);
  REQUIRE_THROWS_WITH(validate(s),
                      "quant scale must be one of per-token, static, group128, got enum value 7");
  REQUIRE_THROWS_WITH(parse_quant_scale("per-row"),
                      "quant scale must be one of per-token, static, group128, got 'per-row'");
  CHECK(parse_quant_scale("group128") == QuantScale::Group128);
}

TEST_CASE("quant mxfp8: sm_100a, its own scales per 32 elements, named in the entry",
          "[validate]") {
  NormSpec s = spec_of(NormKind::LayerNormFwd, DType::BF16, 4097);
  s.quant = Quant::Mxfp8;
  REQUIRE_THROWS_WITH(
      validate(s),
      "quant mxfp8 feeds Blackwell's block-scaled matrix products: it needs sm_100a, got sm_90");
  s.device = device_preset("b200");
  s.arch = Arch::Sm100a;
  s.ptx_version = default_ptx_version(Arch::Sm100a);
  REQUIRE_NOTHROW(validate(s));
  CHECK(variant_suffix(s) == "_qmxfp8");
  CHECK(quant_scales_per_row(s) == 129);  // the last block holds one element
  s.quant_scale = QuantScale::Group128;
  REQUIRE_THROWS_WITH(validate(s),
                      "quant mxfp8 has its own scales (one per 32 elements); quant scale must be "
                      "per-token (the default), got group128");
  CHECK(parse_quant("mxfp8") == Quant::Mxfp8);
}

TEST_CASE("quant nvfp4: sm_100a, even widths in vectors of pairs, one-level rows, named",
          "[validate]") {
  NormSpec s = spec_of(NormKind::RmsNormFwd, DType::F16, 4098);
  s.quant = Quant::Nvfp4;
  REQUIRE_THROWS_WITH(
      validate(s),
      "quant nvfp4 feeds Blackwell's block-scaled matrix products: it needs sm_100a, got sm_90");
  s.device = device_preset("b200");
  s.arch = Arch::Sm100a;
  s.ptx_version = default_ptx_version(Arch::Sm100a);
  REQUIRE_NOTHROW(validate(s));
  CHECK(variant_suffix(s) == "_qnvfp4");
  CHECK(quant_scales_per_row(s) == 257);  // the last block holds two elements
  CHECK(reads_quant_scale(s));
  s.knobs.vector_elems = 1;
  REQUIRE_THROWS_WITH(validate(s),
                      "quant nvfp4 packs two elements a byte from one thread's vector: it needs "
                      "vectors of at least 2 elements, got 1 (the rows' stride and addresses allow "
                      "no wider)");
  s.knobs.vector_elems.reset();
  s.width = 4097;
  REQUIRE_THROWS_WITH(validate(s),
                      "quant nvfp4 packs two elements a byte: the width must be even, got 4097");
  s.width = 64;
  s.row_groups = 2;
  s.group_stride = 64;
  REQUIRE_THROWS_WITH(validate(s),
                      "quant nvfp4 takes rows of one level; row groups must be 1, got 2");
  CHECK(quant_max(Quant::Nvfp4) == 6.0f);
}

TEST_CASE("quant scale layout cublas: block scales only, their tiles of 128 rows × 4 blocks",
          "[validate]") {
  NormSpec s = spec_of(NormKind::RmsNormFwd, DType::F16, 160);
  s.quant = Quant::Fp8E4m3;
  s.quant_scale_layout = QuantScaleLayout::Cublas;
  REQUIRE_THROWS_WITH(validate(s),
                      "quant scale layout cublas lays out block scales (mxfp8, nvfp4); quant "
                      "fp8-e4m3 has none");
  s.quant = Quant::Nvfp4;
  s.device = device_preset("b200");
  s.arch = Arch::Sm100a;
  s.ptx_version = default_ptx_version(Arch::Sm100a);
  REQUIRE_NOTHROW(validate(s));
  CHECK(variant_suffix(s) == "_qnvfp4_sfcublas");
  // 10 blocks a row: 3 tiles a row of tiles; 130 rows: 2 rows of tiles.
  CHECK(quant_scale_entries(s, 130) == 2 * 3 * 512);
  CHECK(quant_scale_index(s, 0, 0) == 0);
  CHECK(quant_scale_index(s, 0, 3) == 3);
  CHECK(quant_scale_index(s, 1, 0) == 16);
  CHECK(quant_scale_index(s, 32, 0) == 4);
  CHECK(quant_scale_index(s, 127, 3) == 31 * 16 + 3 * 4 + 3);
  CHECK(quant_scale_index(s, 0, 4) == 512);
  CHECK(quant_scale_index(s, 128, 9) == (3 + 2) * 512 + 1);
  s.quant_scale_layout = QuantScaleLayout::RowMajor;
  CHECK(quant_scale_index(s, 128, 9) == 128 * 10 + 9);
  REQUIRE_THROWS_WITH(parse_quant_scale_layout("swizzled"),
                      "quant scale layout must be one of row-major, cublas, got 'swizzled'");
}
