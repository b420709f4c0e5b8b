#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "ptxdsl/dsl/error.hpp"
#include "ptxdsl/kernels/check_outputs.hpp"
#include "ptxdsl/kernels/inputs.hpp"
#include "ptxdsl/kernels/reference.hpp"

// The accuracy rule passes what f32 itself cannot do better on, and still fails real errors.
using namespace ptxdsl;
using namespace ptxdsl::kernels;

namespace {

constexpr double kEps = 1e-5;

std::vector<float> rounded(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

// A layer norm forward computed the way an f32 kernel does, in f32 throughout.
struct F32Forward {
  std::vector<float> y, mean, rstd;
};
F32Forward layer_norm_in_f32(const NormInputs& in) {
  F32Forward f;
  for (std::uint32_t row = 0; row < in.batch; ++row) {
    const float* x = in.x.values.data() + std::size_t{row} * in.stride;
    float sum = 0;
    for (std::uint32_t i = 0; i < in.width; ++i) sum += x[i];
    const float mean = sum / static_cast<float>(in.width);
    float sq = 0;
    for (std::uint32_t i = 0; i < in.width; ++i) sq += (x[i] - mean) * (x[i] - mean);
    const float rstd = 1.0f / std::sqrt(sq / static_cast<float>(in.width) + 1e-5f);
    f.mean.push_back(mean);
    f.rstd.push_back(rstd);
    for (std::uint32_t i = 0; i < in.width; ++i) {
      f.y.push_back((x[i] - mean) * rstd * in.w.values[i] + in.b.values[i]);
    }
  }
  return f;
}

struct Case {
  NormInputs in;
  LayerNormFwdRef ref;
  NormProblem problem;
};
Case layer_norm_case(std::uint32_t batch, std::uint32_t width, float x_offset = 0) {
  Case c;
  c.in = make_inputs(NormKind::LayerNormFwd, DType::F32, DType::F32, batch, width, width, 3);
  if (x_offset != 0) {
    std::vector<float> moved = c.in.x.values;
    for (float& v : moved) v += x_offset;
    c.in.x = make_tensor(moved, DType::F32);
  }
  c.ref =
      layer_norm_fwd_ref(c.in.x.values, c.in.w.values, c.in.b.values, batch, width, width, kEps);
  c.problem = {.layer = true,
               .batch = batch,
               .width = width,
               .stride = width,
               .eps = kEps,
               .x = c.in.x.values,
               .w = c.in.w.values,
               .b = c.in.b.values,
               .dy = {},
               .dh = {}};
  return c;
}

// The float64 reference rounded to f32: what an exact kernel writes.
F32Forward reference_in_f32(const Case& c) {
  return {rounded(c.ref.y), rounded(c.ref.mean), rounded(c.ref.rstd)};
}

Verdict judge_forward(const Case& c, const F32Forward& f) {
  const NormOutput outs[] = {{"y", DType::F32, f.y, c.ref.y},
                             {"mean", DType::F32, f.mean, c.ref.mean},
                             {"rstd", DType::F32, f.rstd, c.ref.rstd}};
  return check_outputs(c.problem, outs);
}

}  // namespace

TEST_CASE("f32 layer norms of 2 and 3 columns pass despite their cancellation", "[reference]") {
  // x − mean of two or three values cancels to near nothing and rstd amplifies its rounding: the
  // error is f32's own, relative to x, not to y.
  for (std::uint32_t width : {2u, 3u}) {
    const Case c = layer_norm_case(300, width);
    const Verdict v = judge_forward(c, layer_norm_in_f32(c.in));
    INFO("width " << width << ": y error " << v.outputs[0].error << " of bound "
                  << v.outputs[0].bound);
    CHECK(v.pass());
  }
}

TEST_CASE("an output a few bounds off fails", "[reference]") {
  const Case c = layer_norm_case(17, 1000);
  const F32Forward f = reference_in_f32(c);
  const Verdict exact = judge_forward(c, f);
  REQUIRE(exact.pass());
  for (std::size_t o = 0; o < 3; ++o) {
    F32Forward bad = f;
    std::vector<float>& out = o == 0 ? bad.y : o == 1 ? bad.mean : bad.rstd;
    const std::size_t at = out.size() / 2;
    // Three times the element's own bound away.
    out[at] = static_cast<float>(out[at] + 3 * exact.outputs[o].bound + 1e-30);
    const Verdict v = judge_forward(c, bad);
    INFO("output " << exact.outputs[o].name);
    CHECK_FALSE(v.pass());
    CHECK(v.outputs[o].worst == at);
    CHECK(v.outputs[o].failures == 1);
  }
  F32Forward nan = f;
  nan.y[5] = std::nanf("");
  const Verdict v = judge_forward(c, nan);
  CHECK_FALSE(v.pass());
  CHECK(v.outputs[0].nonfinite == 1);
}

TEST_CASE("outputs judged over blocks of rows on several cores count and place every failure",
          "[reference]") {
  // 64 rows of 32768: two million elements, split between the cores in blocks of rows.
  const Case c = layer_norm_case(64, 32768);
  const F32Forward f = reference_in_f32(c);
  const Verdict exact = judge_forward(c, f);
  REQUIRE(exact.pass());
  const std::size_t early = 5 * 32768 + 7, late = 60 * 32768 + 11, nan_at = 63 * 32768;
  F32Forward bad = f;
  bad.y[early] = static_cast<float>(bad.y[early] + 3 * exact.outputs[0].bound + 1e-30);
  bad.y[late] = static_cast<float>(bad.y[late] + 9 * exact.outputs[0].bound + 1e-30);
  const Verdict v = judge_forward(c, bad);
  CHECK(v.outputs[0].failures == 2);
  CHECK(v.outputs[0].worst == late);
  CHECK(v.outputs[0].max_abs == Approx(v.outputs[0].error));
  bad.y[nan_at] = std::nanf("");
  const Verdict with_nan = judge_forward(c, bad);
  CHECK(with_nan.outputs[0].failures == 3);
  CHECK(with_nan.outputs[0].nonfinite == 1);
  CHECK(with_nan.outputs[0].worst == nan_at);
}

TEST_CASE("a mean off by many ulps fails, and so does y from it", "[reference]") {
  const Case c = layer_norm_case(17, 1000, 100.0f);
  F32Forward f = reference_in_f32(c);
  REQUIRE(judge_forward(c, f).pass());
  // 256 ulps of a mean near 100: y moves by about 2e-3·rstd·w.
  for (std::uint32_t row = 0; row < c.in.batch; ++row) {
    const float shift = 256 * (std::nextafter(f.mean[row], 1e9f) - f.mean[row]);
    f.mean[row] += shift;
    for (std::uint32_t i = 0; i < c.in.width; ++i) {
      const std::size_t at = std::size_t{row} * c.in.width + i;
      f.y[at] = static_cast<float>(c.ref.y[at] - shift * c.ref.rstd[row] * c.in.w.values[i]);
    }
  }
  const Verdict v = judge_forward(c, f);
  CHECK_FALSE(v.outputs[0].pass);
  CHECK_FALSE(v.outputs[1].pass);
}

TEST_CASE("a wide layer norm summed naively in f32 is caught", "[reference]") {
  // One f32 accumulator over 65536 columns offset by 100 loses the mean's low bits: what a kernel
  // without tree sums or shifted statistics would do.
  const Case c = layer_norm_case(2, 65536, 100.0f);
  const Verdict v = judge_forward(c, layer_norm_in_f32(c.in));
  INFO("y error " << v.outputs[0].error << " of bound " << v.outputs[0].bound << "; rstd error "
                  << v.outputs[2].error << " of bound " << v.outputs[2].bound);
  CHECK_FALSE(v.pass());
}

TEST_CASE("check_outputs refuses outputs of the wrong size", "[reference]") {
  const Case c = layer_norm_case(3, 8);
  const std::vector<float> short_y(5);
  const NormOutput outs[] = {{"y", DType::F32, short_y, c.ref.y}};
  REQUIRE_THROWS_AS(check_outputs(c.problem, outs), Error);
}
