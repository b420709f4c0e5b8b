// Row softmax, forward and backward, in f32, f16 or bf16: a kernel tool built by
// ptxdsl_add_kernel_tool (docs/dsl.md, "Write your own kernel"). One CTA a row (RowPerCta); each
// thread holds its slice of the row in registers as f32, the block reduces across threads.
//   forward:  y = exp(x - max x) / sum(exp(x - max x))
//   backward: dx = y * (dy - sum(dy * y))
#include <cmath>
#include <ptxdsl/tool.hpp>
#include <string>

namespace {

using namespace ptxdsl;

tool::Launch build_forward(Module& m, const tool::Params& p) {
  const ScalarType t = p.dtype("dtype");
  Kernel& k = m.kernel(std::string("softmax_fwd_") + std::string(ptx_name(t)));
  const GlobalDPtr x = param_dptr(k, "x", t);
  const GlobalDPtr y = param_dptr(k, "y", t);
  RowPerCta row(k, RowMap::fit(p.u32("width"), t));

  // max x, then e = exp(x - max) and its sum (elements past the width count as each one's
  // identity: -inf for the max, 0 for the sum).
  std::vector<Values> v = row.load(k, x);
  const Reg<F32> max = row.reduce(k, v, Reduction::max());
  for (Values& chunk : v) {
    for (Reg<F32>& e : chunk) e = exp_approx(k, k.sub(e, max));
  }
  const Reg<F32> inv = k.rcp(row.reduce(k, v, Reduction::sum()));
  for (Values& chunk : v) {
    for (Reg<F32>& e : chunk) e = k.mul(e, inv);
  }
  row.store(k, y, v);
  return {.grid = p.u32("batch"), .block = {}, .entry = {}};
}

tool::Launch build_backward(Module& m, const tool::Params& p) {
  const ScalarType t = p.dtype("dtype");
  Kernel& k = m.kernel(std::string("softmax_bwd_") + std::string(ptx_name(t)));
  const GlobalDPtr y = param_dptr(k, "y", t);
  const GlobalDPtr dy = param_dptr(k, "dy", t);
  const GlobalDPtr dx = param_dptr(k, "dx", t);
  RowPerCta row(k, RowMap::fit(p.u32("width"), t));

  // dot = sum(dy * y), then dx = y * (dy - dot).
  const std::vector<Values> yv = row.load(k, y);
  std::vector<Values> g = row.load(k, dy);
  std::vector<Values> products = g;
  for (std::size_t j = 0; j < g.size(); ++j) {
    for (std::size_t e = 0; e < g[j].size(); ++e) products[j][e] = k.mul(g[j][e], yv[j][e]);
  }
  const Reg<F32> dot = row.reduce(k, products, Reduction::sum());
  for (std::size_t j = 0; j < g.size(); ++j) {
    for (std::size_t e = 0; e < g[j].size(); ++e) g[j][e] = k.mul(yv[j][e], k.sub(g[j][e], dot));
  }
  row.store(k, dx, g);
  return {.grid = p.u32("batch"), .block = {}, .entry = {}};
}

// ---- the tool: parameters, seeded inputs, the float64 reference ----

std::vector<double> softmax_rows(const std::vector<double>& x, std::size_t width) {
  std::vector<double> y(x.size());
  for (std::size_t r = 0; r < x.size() / width; ++r) {
    const double* in = &x[r * width];
    double max = in[0], sum = 0;
    for (std::size_t i = 0; i < width; ++i) max = std::max(max, in[i]);
    for (std::size_t i = 0; i < width; ++i) sum += std::exp(in[i] - max);
    for (std::size_t i = 0; i < width; ++i) y[r * width + i] = std::exp(in[i] - max) / sum;
  }
  return y;
}

tool::KernelDefinition definition(std::string name, std::string description) {
  tool::KernelDefinition d;
  d.name = std::move(name);
  d.description = std::move(description);
  d.params = {tool::Parameter::uint("width", "elements a row", 1, 16384, 1000),
              tool::Parameter::uint("batch", "rows", 1, 1u << 20, 3),
              tool::Parameter::dtype("dtype", "every tensor",
                                     {ScalarType::F32, ScalarType::F16, ScalarType::BF16},
                                     ScalarType::F32)};
  // f32: exp_approx's few ulp and the sums' rounding; f16/bf16: the output's rounding, within two
  // ulp relative (the default tolerance is four, of 1.0).
  d.tolerance = [](const tool::Params& p, std::string_view) {
    const ScalarType t = p.dtype("dtype");
    return t == ScalarType::F32 ? tool::Tolerance{1e-6, 1e-5}
                                : tool::Tolerance{1e-6, tool::default_tolerance(t).rel / 2};
  };
  return d;
}

}  // namespace

void ptxdsl::tool::register_kernels(Registry& registry) {
  KernelDefinition fwd = definition("softmax_fwd", "y = softmax(x) over each row");
  fwd.build = build_forward;
  fwd.inputs = [](const Params& p, Random& random) {
    const std::size_t n = p.uint("width") * p.uint("batch");
    RunData d;
    d.input("x", random.normal_values(n, 0, 3)).output("y", n);
    return d;
  };
  fwd.reference = [](const Params& p, const RunData& in) {
    return Expected{{"y", softmax_rows(in.values("x"), p.uint("width"))}};
  };
  registry.add(std::move(fwd));

  KernelDefinition bwd = definition("softmax_bwd", "dx = y * (dy - sum(dy * y)) over each row");
  bwd.build = build_backward;
  bwd.inputs = [](const Params& p, Random& random) {
    const std::size_t n = p.uint("width") * p.uint("batch");
    RunData d;
    d.input("y", softmax_rows(random.normal_values(n, 0, 3), p.uint("width")))
        .input("dy", random.normal_values(n))
        .output("dx", n);
    return d;
  };
  bwd.reference = [](const Params& p, const RunData& in) {
    const std::size_t width = p.uint("width");
    const std::vector<double>& y = in.values("y");
    const std::vector<double>& dy = in.values("dy");
    std::vector<double> dx(y.size());
    for (std::size_t r = 0; r < y.size() / width; ++r) {
      double dot = 0;
      for (std::size_t i = r * width; i < (r + 1) * width; ++i) dot += dy[i] * y[i];
      for (std::size_t i = r * width; i < (r + 1) * width; ++i) dx[i] = y[i] * (dy[i] - dot);
    }
    return Expected{{"dx", dx}};
  };
  registry.add(std::move(bwd));
}
