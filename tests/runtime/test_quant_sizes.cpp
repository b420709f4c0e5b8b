// The runtime's statement of a quantized forward's tensors (quant_output, quant_scale_bytes)
// against what the kernels write, on the CPU executor: buffers of exactly the stated sizes (the
// executor refuses an access past an allocation's end), y's codes and the scales against
// kernels::quantize_rows, for every scale mode and block format, mxfp8 and nvfp4 planned for a
// B200's preset at the target the runtime picks (target_arch), in row-major and cuBLAS layouts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "ptxdsl/dsl/executor.hpp"
#include "ptxdsl/kernels/cpu_run.hpp"
#include "ptxdsl/kernels/inputs.hpp"
#include "ptxdsl/kernels/quantize_reference.hpp"
#include "ptxdsl/kernels/reference.hpp"
#include "ptxdsl/runtime/norms.hpp"

using namespace ptxdsl;
using namespace ptxdsl::runtime;

namespace {

constexpr double kEps = 1e-5;

// A scale entry's value as the kernel wrote it: f32, mxfp8's ue8m0 byte (2^(code − 127)) or
// nvfp4's e4m3 byte.
float scale_value(kernels::Quant q, const std::vector<std::byte>& bytes, std::uint64_t entry) {
  if (quant_output({.model = {.quant = q}}).scale == ScalarType::F32 || q == kernels::Quant::None) {
    float f = 0;
    std::memcpy(&f, bytes.data() + entry * 4, 4);
    return f;
  }
  const auto code = static_cast<std::uint8_t>(bytes.at(entry));
  if (q == kernels::Quant::Nvfp4) {
    return static_cast<float>(kernels::quant_value(kernels::Quant::Fp8E4m3, code));
  }
  return std::ldexp(1.0f, code - 127);
}

void check_sizes(const NormType& type, std::uint32_t batch) {
  const kernels::NormSpec base = norm_spec(type, Direction::Forward);
  INFO(kernels::quant_name(base.quant)
       << " scale " << kernels::quant_scale_name(base.quant_scale) << " layout "
       << kernels::quant_scale_layout_name(base.quant_scale_layout) << ", width " << type.width
       << ", batch " << batch);
  kernels::NormSpec spec = base;
  spec.device = device_preset("b200");
  spec.arch = target_arch(type, spec.device);
  spec.ptx_version = kernels::default_ptx_version(spec.arch);
  const kernels::BuiltNorm built = kernels::build_norm(spec);
  const kernels::NormInputs in = kernels::make_inputs(spec, batch, type.width, 7);
  const kernels::NormReference ref = kernels::norm_reference(spec, in, kEps);
  double absmax = 0;
  for (const double v : ref.y) absmax = std::max(absmax, std::fabs(v));
  const float scale_in = static_cast<float>(spec.quant == kernels::Quant::Nvfp4
                                                ? absmax / (448.0 * 6.0)
                                                : 0.8 * absmax / kernels::quant_max(spec.quant));

  const QuantOutput out = quant_output(type);
  const std::uint64_t elements = std::uint64_t{batch} * type.width;
  const std::uint64_t y_bytes = out.y_bytes(elements);
  const std::uint64_t scale_bytes = quant_scale_bytes(type, batch);
  CHECK((scale_bytes > 0) == (out.scales_per_row > 0));
  CpuDevice dev;
  std::map<std::string, ExecutorAddress> ptrs;
  ptrs["x"] = dev.upload(std::span<const std::byte>(in.x.bytes), "x");
  ptrs["w"] = dev.upload(std::span<const std::byte>(in.w.bytes), "w");
  ptrs["y"] = dev.alloc(y_bytes, "y", 0xFF);
  ptrs["rstd"] = dev.alloc(4 * batch, "rstd", 0xFF);
  if (scale_bytes > 0) ptrs["y_scale"] = dev.alloc(scale_bytes, "y_scale", 0xFF);
  if (out.reads_scale_in) ptrs["quant_scale_in"] = dev.upload(std::span<const float>(&scale_in, 1));
  // Exactly the stated sizes: a byte past them is an executor error, not a pass.
  REQUIRE_NOTHROW(kernels::run_norm_on_cpu(built, dev, ptrs, batch, type.width, kEps));

  const std::vector<float> y(ref.y.begin(), ref.y.end());
  const kernels::QuantizedRows want = kernels::quantize_rows(spec, y, batch, scale_in);
  const auto y_written = dev.download<std::uint8_t>(ptrs.at("y"), y_bytes);
  std::vector<std::uint8_t> codes(elements);
  for (std::uint64_t i = 0; i < elements; ++i) {
    codes[i] = out.element_bits == 4 ? (y_written[i / 2] >> (i % 2 * 4)) & 0xF : y_written[i];
  }
  std::size_t differ = 0, far = 0;
  for (std::uint64_t i = 0; i < elements; ++i) {
    differ += codes[i] != want.q[i];
    far += kernels::quant_steps(spec.quant, codes[i], want.q[i]) > 1;
  }
  INFO(differ << " codes differ, " << far << " by more than a step");
  CHECK(far == 0);
  CHECK(differ <= elements / 100);
  if (scale_bytes == 0) {
    CHECK(want.scale.empty());
    return;
  }
  const auto scales = dev.download<std::byte>(ptrs.at("y_scale"), scale_bytes);
  REQUIRE(want.scale.size() == std::size_t{batch} * out.scales_per_row);
  for (std::uint32_t r = 0; r < batch; ++r) {
    for (std::uint32_t c = 0; c < out.scales_per_row; ++c) {
      const float got = scale_value(spec.quant, scales, kernels::quant_scale_index(spec, r, c));
      const float w = want.scale[std::size_t{r} * out.scales_per_row + c];
      INFO("row " << r << " scale " << c << ": " << got << ", want " << w);
      CHECK(std::fabs(got - w) <= 1e-5f * w);
    }
  }
}

}  // namespace

TEST_CASE("a quantized forward's stated sizes hold what its kernels write (CPU executor)",
          "[runtime][norms]") {
  using kernels::Quant;
  using kernels::QuantScale;
  using kernels::QuantScaleLayout;
  const NormType base{false, DType::BF16, DType::BF16, 512};
  const auto with = [&](NormModelOptions m, std::uint32_t width = 512) {
    NormType t = base;
    t.width = width;
    t.model = m;
    return t;
  };
  for (const Quant q : {Quant::Fp8E4m3, Quant::Int8}) {
    for (const QuantScale s : {QuantScale::PerToken, QuantScale::Static, QuantScale::Group128}) {
      check_sizes(with({.quant = q, .quant_scale = s}), 3);
    }
  }
  for (const Quant q : {Quant::Mxfp8, Quant::Nvfp4}) {
    for (const QuantScaleLayout l : {QuantScaleLayout::RowMajor, QuantScaleLayout::Cublas}) {
      // Batches of 5 and 2: cuBLAS's tiles hold 128 rows, the rest padding (left unwritten).
      check_sizes(with({.quant = q, .quant_scale_layout = l}), 5);
      check_sizes(with({.quant = q, .quant_scale_layout = l}, 2560), 2);
    }
  }
}
