// Row softmax, forward and backward, in f32, f16 or bf16: a kernel tool built by
// ptxdsl_add_kernel_tool (docs/dsl.md, "Write your own kernel"). One CTA a row; each thread holds
// its slice of the row in registers as f32, the block reduces across threads.
//   forward:  y = exp(x - max x) / sum(exp(x - max x))
//   backward: dx = y * (dy - sum(dy * y))
#include <cmath>
#include <limits>
#include <ptxdsl/tool.hpp>
#include <string>

namespace {

using namespace ptxdsl;

constexpr float kInf = std::numeric_limits<float>::infinity();

// The thread's slice of row `row` of `p`: every chunk, masked past the width (zeros there).
std::vector<Values> load_row(Kernel& k, const RowMasks& masks, GlobalDPtr p, Reg<U32> row) {
  const RowMap& map = masks.lanes().map();
  const GlobalDPtr mine = at(k, row_of(k, p, row, map.width), masks.lanes().first_element());
  std::vector<Values> chunks;
  for (std::uint32_t j = 0; j < map.chunks; ++j)
    chunks.push_back(load_chunk(k, masks, mine, j, kNc));
  return chunks;
}

void store_row(Kernel& k, const RowMasks& masks, GlobalDPtr p, Reg<U32> row,
               const std::vector<Values>& chunks) {
  const RowMap& map = masks.lanes().map();
  const GlobalDPtr mine = at(k, row_of(k, p, row, map.width), masks.lanes().first_element());
  for (std::uint32_t j = 0; j < map.chunks; ++j) store_chunk(k, masks, mine, j, chunks[j]);
}

tool::Launch build_forward(Module& m, const tool::Params& p) {
  const ScalarType t = p.dtype("dtype");
  const RowMap map = RowMap::fit(p.u32("width"), t);
  Kernel& k = m.kernel(std::string("softmax_fwd_") + std::string(ptx_name(t)));
  const GlobalDPtr x = param_dptr(k, "x", t);
  const GlobalDPtr y = param_dptr(k, "y", t);
  k.require_threads(map.threads);
  const Reg<U32> tid = k.tid_x();
  const Reg<U32> row = k.ctaid_x();
  const RowLanes lanes(k, map, tid);
  const RowMasks masks(k, lanes, std::nullopt);
  Reducer block = Reducer::block(k, map.threads, tid);

  // max x: each chunk's elements past the width count as -inf.
  std::vector<Values> v = load_row(k, masks, x, row);
  Values partial;
  for (std::uint32_t j = 0; j < map.chunks; ++j) {
    partial.push_back(tree_reduce(k, mask_past_width(k, lanes, j, v[j], -kInf), Reduction::max()));
  }
  const Reg<F32> max = block.reduce(k, tree_reduce(k, partial, Reduction::max()), Reduction::max());
  // e = exp(x - max), 0 past the width; then its sum.
  partial.clear();
  for (std::uint32_t j = 0; j < map.chunks; ++j) {
    for (Reg<F32>& e : v[j]) e = exp_approx(k, k.sub(e, max));
    v[j] = mask_past_width(k, lanes, j, v[j], 0.0f);
    partial.push_back(tree_reduce(k, v[j], Reduction::sum()));
  }
  const Reg<F32> sum = block.reduce(k, tree_reduce(k, partial, Reduction::sum()), Reduction::sum());
  const Reg<F32> inv = k.rcp(sum);
  for (Values& chunk : v) {
    for (Reg<F32>& e : chunk) e = k.mul(e, inv);
  }
  store_row(k, masks, y, row, v);
  return {.grid = p.u32("batch"), .block = {}, .entry = {}};
}

tool::Launch build_backward(Module& m, const tool::Params& p) {
  const ScalarType t = p.dtype("dtype");
  const RowMap map = RowMap::fit(p.u32("width"), t);
  Kernel& k = m.kernel(std::string("softmax_bwd_") + std::string(ptx_name(t)));
  const GlobalDPtr y = param_dptr(k, "y", t);
  const GlobalDPtr dy = param_dptr(k, "dy", t);
  const GlobalDPtr dx = param_dptr(k, "dx", t);
  k.require_threads(map.threads);
  const Reg<U32> tid = k.tid_x();
  const Reg<U32> row = k.ctaid_x();
  const RowLanes lanes(k, map, tid);
  const RowMasks masks(k, lanes, std::nullopt);
  Reducer block = Reducer::block(k, map.threads, tid);

  // sum(dy * y): zeros past the width add nothing.
  const std::vector<Values> yv = load_row(k, masks, y, row);
  std::vector<Values> g = load_row(k, masks, dy, row);
  Values partial;
  for (std::uint32_t j = 0; j < map.chunks; ++j) {
    Values products;
    for (std::size_t e = 0; e < g[j].size(); ++e) products.push_back(k.mul(g[j][e], yv[j][e]));
    partial.push_back(tree_reduce(k, products, Reduction::sum()));
  }
  const Reg<F32> dot = block.reduce(k, tree_reduce(k, partial, Reduction::sum()), Reduction::sum());
  for (std::uint32_t j = 0; j < map.chunks; ++j) {
    for (std::size_t e = 0; e < g[j].size(); ++e) g[j][e] = k.mul(yv[j][e], k.sub(g[j][e], dot));
  }
  store_row(k, masks, dx, row, g);
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
