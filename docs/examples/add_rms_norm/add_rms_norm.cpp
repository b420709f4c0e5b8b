// Fused residual add + RMS norm forward, in f32, f16 or bf16: a kernel tool built by
// ptxdsl_add_kernel_tool (docs/dsl.md, "Write your own kernel"). One CTA a row (RowPerCta):
//   h = x + residual (stored), rstd = 1 / sqrt(mean(h^2) + eps), y = h * rstd * w
// h stays in f32 registers between the add and the normalization; only its store is rounded.
#include <cmath>
#include <ptxdsl/tool.hpp>
#include <string>

namespace {

using namespace ptxdsl;

constexpr double kEps = 1e-5;

tool::Launch build_add_rms_norm(Module& m, const tool::Params& p) {
  const ScalarType t = p.dtype("dtype");
  Kernel& k = m.kernel(std::string("add_rms_fwd_") + std::string(ptx_name(t)));
  const GlobalDPtr x = param_dptr(k, "x", t);
  const GlobalDPtr residual = param_dptr(k, "residual", t);
  const GlobalDPtr w = param_dptr(k, "w", t);
  const GlobalDPtr h = param_dptr(k, "h", t);
  const GlobalDPtr y = param_dptr(k, "y", t);
  const Reg<F32> eps = k.param<F32>("eps");
  RowPerCta row(k, RowMap::fit(p.u32("width"), t));

  // h = x + residual, stored; rstd from the sum of h^2 (zeros past the width add nothing).
  std::vector<Values> hv = row.load(k, x);
  const std::vector<Values> rv = row.load(k, residual);
  std::vector<Values> squares = hv;
  for (std::size_t j = 0; j < hv.size(); ++j) {
    for (std::size_t e = 0; e < hv[j].size(); ++e) {
      hv[j][e] = k.add(hv[j][e], rv[j][e]);
      squares[j][e] = k.mul(hv[j][e], hv[j][e]);
    }
  }
  row.store(k, h, hv);
  const Reg<F32> total = row.reduce(k, squares, Reduction::sum());
  const Reg<F32> rstd = rsqrt_rn(k, k.fma(total, 1.0f / static_cast<float>(row.map().width), eps));

  // y = h * rstd * w; w is every row's, so its chunks are the thread's columns of row 0.
  const GlobalDPtr w_cols = at(k, w, row.lanes().first_element());
  for (std::uint32_t j = 0; j < row.map().chunks; ++j) {
    const Values wv = load_chunk(k, row.masks(), w_cols, j, kNc);
    for (std::size_t e = 0; e < wv.size(); ++e) hv[j][e] = k.mul(k.mul(hv[j][e], rstd), wv[e]);
  }
  row.store(k, y, hv);
  return {.grid = p.u32("batch"), .block = {}, .entry = {}};
}

}  // namespace

void ptxdsl::tool::register_kernels(Registry& registry) {
  KernelDefinition d;
  d.name = "add_rms_fwd";
  d.description = "h = x + residual; y = h * rstd(h) * w over each row";
  d.params = {
      Parameter::uint("width", "elements a row", 1, 16384, 1000),
      Parameter::uint("batch", "rows", 1, 1u << 20, 3),
      Parameter::dtype("dtype", "every tensor",
                       {ScalarType::F32, ScalarType::F16, ScalarType::BF16}, ScalarType::F32)};
  d.build = build_add_rms_norm;
  d.inputs = [](const Params& p, Random& random) {
    const std::size_t width = p.uint("width"), n = width * p.uint("batch");
    RunData r;
    r.input("x", random.normal_values(n))
        .input("residual", random.normal_values(n))
        .input("w", random.uniform_values(width, 0.5, 1.5))
        .output("h", n)
        .output("y", n)
        .scalar("eps", kEps);
    return r;
  };
  d.reference = [](const Params& p, const RunData& in) {
    const std::size_t width = p.uint("width");
    const std::vector<double>& x = in.values("x");
    const std::vector<double>& w = in.values("w");
    std::vector<double> h = in.values("residual"), y(h.size());
    for (std::size_t i = 0; i < h.size(); ++i) h[i] += x[i];
    for (std::size_t r = 0; r < h.size() / width; ++r) {
      double squares = 0;
      for (std::size_t i = 0; i < width; ++i) squares += h[r * width + i] * h[r * width + i];
      const double rstd = 1 / std::sqrt(squares / static_cast<double>(width) + in.scalar("eps"));
      for (std::size_t i = 0; i < width; ++i) y[r * width + i] = h[r * width + i] * rstd * w[i];
    }
    return Expected{{"h", h}, {"y", y}};
  };
  // h: one rounding (the default). y: the f32 sum of squares and rstd's ulp, then (f16, bf16) the
  // output's rounding, within two ulp relative.
  d.tolerance = [](const Params& p, std::string_view output) {
    const ScalarType t = p.dtype("dtype");
    if (output == "h") return default_tolerance(t);
    return t == ScalarType::F32 ? Tolerance{1e-6, 1e-5}
                                : Tolerance{1e-6, default_tolerance(t).rel / 2};
  };
  registry.add(std::move(d));
}
