// Fused residual add + RMS norm forward, in f32, f16 or bf16: a kernel tool built by
// ptxdsl_add_kernel_tool (docs/dsl.md, "Write your own kernel"). One CTA a row:
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
  const RowMap map = RowMap::fit(p.u32("width"), t);
  Kernel& k = m.kernel(std::string("add_rms_fwd_") + std::string(ptx_name(t)));
  const GlobalDPtr x = param_dptr(k, "x", t);
  const GlobalDPtr residual = param_dptr(k, "residual", t);
  const GlobalDPtr w = param_dptr(k, "w", t);
  const GlobalDPtr h = param_dptr(k, "h", t);
  const GlobalDPtr y = param_dptr(k, "y", t);
  const Reg<F32> eps = k.param<F32>("eps");
  k.require_threads(map.threads);
  const Reg<U32> tid = k.tid_x();
  const Reg<U32> row = k.ctaid_x();
  const RowLanes lanes(k, map, tid);
  const RowMasks masks(k, lanes, std::nullopt);
  Reducer block = Reducer::block(k, map.threads, tid);

  // This thread's first element of the row in each tensor, and of w (every row's).
  const auto mine = [&](GlobalDPtr tensor) {
    return at(k, row_of(k, tensor, row, map.width), lanes.first_element());
  };
  const GlobalDPtr x_row = mine(x), r_row = mine(residual), h_row = mine(h), y_row = mine(y);
  const GlobalDPtr w_cols = at(k, w, lanes.first_element());

  // h = x + residual, stored; sum(h^2) while it is in registers (zeros past the width).
  std::vector<Values> hv;
  Values partial;
  for (std::uint32_t j = 0; j < map.chunks; ++j) {
    const Values xv = load_chunk(k, masks, x_row, j, kNc);
    const Values rv = load_chunk(k, masks, r_row, j, kNc);
    Values sum, squares;
    for (std::size_t e = 0; e < xv.size(); ++e) {
      sum.push_back(k.add(xv[e], rv[e]));
      squares.push_back(k.mul(sum.back(), sum.back()));
    }
    store_chunk(k, masks, h_row, j, sum);
    hv.push_back(sum);
    partial.push_back(tree_reduce(k, squares, Reduction::sum()));
  }
  const Reg<F32> total =
      block.reduce(k, tree_reduce(k, partial, Reduction::sum()), Reduction::sum());
  const Reg<F32> rstd = rsqrt_rn(k, k.fma(total, 1.0f / static_cast<float>(map.width), eps));

  // y = h * rstd * w.
  for (std::uint32_t j = 0; j < map.chunks; ++j) {
    const Values wv = load_chunk(k, masks, w_cols, j, kNc);
    Values out;
    for (std::size_t e = 0; e < wv.size(); ++e) out.push_back(k.mul(k.mul(hv[j][e], rstd), wv[e]));
    store_chunk(k, masks, y_row, j, out);
  }
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
