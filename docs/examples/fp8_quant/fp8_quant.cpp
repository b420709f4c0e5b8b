// Per-token FP8 quantization, as vLLM's dynamic per-token quantization: bf16 rows in, e4m3 rows
// and one f32 scale a row out. A kernel tool built by ptxdsl_add_kernel_tool (docs/dsl.md, "Write
// your own kernel"). One CTA a row (RowPerCta); each thread holds its slice of the row as f32.
//   scale = max |x| / 448 (448: e4m3's largest finite value)
//   q     = e4m3(x * (1 / scale)), rounded to nearest even and saturated (cvt.rn.satfinite)
// A row of zeros has scale 0 and quantizes to zeros.
#include <algorithm>
#include <array>
#include <cmath>
#include <ptxdsl/tool.hpp>
#include <string>

namespace {

using namespace ptxdsl;

constexpr float kE4M3Max = 448.0f;

tool::Launch build(Module& m, const tool::Params& p) {
  Kernel& k = m.kernel("fp8_quant");
  const GlobalDPtr x = param_dptr(k, "x", ScalarType::BF16);
  const GlobalDPtr q = param_dptr(k, "q", ScalarType::E4M3);
  const GlobalPtr<F32> scale = k.param_ptr<F32>("scale");
  RowPerCta row(k, RowMap::fit(p.u32("width"), ScalarType::BF16));

  std::vector<Values> v = row.load(k, x);
  std::vector<Values> magnitude = v;
  for (Values& chunk : magnitude) {
    for (Reg<F32>& e : chunk) e = k.abs(e);
  }
  const Reg<F32> absmax = row.reduce(k, magnitude, Reduction::max());
  const Reg<F32> s = k.div(absmax, kE4M3Max);
  // 1 / scale, exact IEEE (rcp.rn), so that a host reference reproduces every product; 0 for a
  // row of zeros, whose scale is 0.
  const Reg<F32> inv = k.selp<F32>(0.0f, k.rcp(s), k.setp(Cmp::Eq, absmax, 0.0f));
  for (Values& chunk : v) {
    for (Reg<F32>& e : chunk) e = k.mul(e, inv);
  }
  row.store(k, q, v);
  k.st_if(k.setp(Cmp::Eq, row.tid(), 0u), k.index(scale, row.row()), s);
  return {.grid = p.u32("batch"), .block = {}, .entry = {}};
}

// ---- the reference: e4m3 rounding by search over the format's values, not the library's ----

// Every finite non-negative e4m3 value, in increasing order (bits 0x00 to 0x7E).
std::array<double, 127> e4m3_values() {
  std::array<double, 127> values{};
  for (int bits = 0; bits < 127; ++bits) {
    const int exponent = bits >> 3, mantissa = bits & 7;
    values[bits] =
        exponent == 0 ? std::ldexp(mantissa, -9) : std::ldexp(8 + mantissa, exponent - 10);
  }
  return values;
}

// The e4m3 value nearest v (ties to the even encoding), saturated to ±448.
double e4m3_round(float v) {
  static const std::array<double, 127> values = e4m3_values();
  const double a = std::min<double>(std::fabs(v), kE4M3Max);
  std::size_t best = 0;
  for (std::size_t i = 1; i < values.size(); ++i) {
    const double di = std::fabs(values[i] - a), db = std::fabs(values[best] - a);
    if (di < db || (di == db && i % 2 == 0)) best = i;
  }
  return std::signbit(v) ? -values[best] : values[best];
}

tool::Expected reference(const tool::Params& p, const tool::RunData& in) {
  const std::size_t width = p.uint("width");
  const std::vector<double>& x = in.values("x");
  std::vector<double> q(x.size()), scales(x.size() / width);
  for (std::size_t r = 0; r < scales.size(); ++r) {
    float absmax = 0;
    for (std::size_t i = r * width; i < (r + 1) * width; ++i) {
      absmax = std::max(absmax, std::fabs(static_cast<float>(x[i])));
    }
    const float s = absmax / kE4M3Max;
    const float inv = absmax == 0 ? 0.0f : 1.0f / s;
    for (std::size_t i = r * width; i < (r + 1) * width; ++i) {
      q[i] = e4m3_round(static_cast<float>(x[i]) * inv);
    }
    scales[r] = s;
  }
  return {{"q", q}, {"scale", scales}};
}

}  // namespace

void ptxdsl::tool::register_kernels(Registry& registry) {
  KernelDefinition d;
  d.name = "fp8_quant";
  d.description = "q = e4m3(x / scale) with scale = max|x| / 448 over each bf16 row";
  d.params = {tool::Parameter::uint("width", "elements a row", 1, 16384, 1000),
              tool::Parameter::uint("batch", "rows", 1, 1u << 20, 3)};
  d.archs = {Arch::Sm90, Arch::Sm90a, Arch::Sm100, Arch::Sm100a};  // cvt to e4m3x2
  d.build = build;
  d.inputs = [](const Params& p, Random& random) {
    const std::size_t width = p.uint("width"), batch = p.uint("batch");
    std::vector<double> x = random.normal_values(width * batch, 0, 3);
    // Row 1, where there is one, is all zeros: its scale is 0 and its quantized values too.
    if (batch > 1) std::fill(x.begin() + width, x.begin() + 2 * width, 0.0);
    RunData data;
    data.input("x", std::move(x)).output("q", width * batch).output("scale", batch);
    return data;
  };
  d.reference = reference;
  registry.add(std::move(d));
}
