// The kernels of the test tool (ptxdsl_add_kernel_tool in tests/CMakeLists.txt): y = a * x in
// f32, f16 or bf16, its twin with a deliberately wrong reference (run must say FAIL), and a kernel
// with no inputs (emit and check only).
#include <ptxdsl/tool.hpp>
#include <string>
#include <type_traits>

namespace {

using namespace ptxdsl;

constexpr std::uint32_t kBlock = 128;
constexpr double kA = 1.7;

template <class T>
void scale_body(Kernel& k) {
  const GlobalPtr<T> x = k.param_ptr<T>("x");
  const GlobalPtr<T> y = k.param_ptr<T>("y");
  const Reg<F32> a = k.param<F32>("a");
  const Reg<U32> n = k.param<U32>("n");
  k.require_threads(kBlock);
  const Reg<U32> cta = k.ctaid_x();
  const Reg<U32> tid = k.tid_x();
  const Reg<U32> i = k.mad(cta, kBlock, tid);
  k.if_(i < n, [&] {
    const Reg<T> xi = k.ld(x + i, kNc);
    if constexpr (std::is_same_v<T, F32>) {
      const Reg<F32> r = k.mul(a, xi);
      k.st(y + i, r);
    } else {
      const Reg<F32> wide = k.cvt<F32>(xi);
      const Reg<F32> r = k.mul(a, wide);
      k.st(y + i, k.cvt<T>(r));
    }
  });
}

tool::Launch build_scale(Module& m, const tool::Params& p) {
  const ScalarType t = p.dtype("dtype");
  Kernel& k = m.kernel("scale_" + std::string(ptx_name(t)));
  if (t == ScalarType::F32) scale_body<F32>(k);
  if (t == ScalarType::F16) scale_body<F16>(k);
  if (t == ScalarType::BF16) scale_body<BF16>(k);
  return {.grid = (p.u32("n") + kBlock - 1) / kBlock, .block = {}, .entry = {}};
}

tool::RunData scale_inputs(const tool::Params& p, tool::Random& random) {
  const std::size_t n = p.uint("n");
  tool::RunData d;
  d.input("x", random.normal_values(n, 0, 2)).output("y", n).scalar("a", kA).scalar("n", n);
  return d;
}

tool::Expected scale_reference(double factor, const tool::RunData& in) {
  std::vector<double> y = in.values("x");
  for (double& v : y) v *= factor * in.scalar("a");
  return {{"y", y}};
}

tool::KernelDefinition scale(std::string name, std::string description, double factor) {
  tool::KernelDefinition d;
  d.name = std::move(name);
  d.description = std::move(description);
  d.params = {tool::Parameter::uint("n", "elements", 1, 1 << 24, 1000),
              tool::Parameter::dtype("dtype", "x and y",
                                     {ScalarType::F32, ScalarType::F16, ScalarType::BF16},
                                     ScalarType::F32)};
  d.build = build_scale;
  d.inputs = scale_inputs;
  d.reference = [factor](const tool::Params&, const tool::RunData& in) {
    return scale_reference(factor, in);
  };
  return d;
}

}  // namespace

void ptxdsl::tool::register_kernels(Registry& registry) {
  registry.add(scale("scale", "y = a * x over n elements", 1.0));
  registry.add(scale("scale_wrong_reference",
                     "scale, against a reference 1% off (run must say FAIL)", 1.01));
  KernelDefinition fill;
  fill.name = "fill";
  fill.description = "y[i] = i, no inputs: emit and check only";
  fill.params = {Parameter::uint("n", "elements", 1, 1 << 24)};
  fill.archs = {Arch::Sm90, Arch::Sm100};
  fill.build = [](Module& m, const Params& p) {
    Kernel& k = m.kernel("fill");
    const GlobalPtr<U32> y = k.param_ptr<U32>("y");
    k.max_threads(256);
    const Reg<U32> cta = k.ctaid_x();
    const Reg<U32> tid = k.tid_x();
    const Reg<U32> i = k.mad(cta, 256u, tid);
    k.if_(i < p.u32("n"), [&] { k.st(y + i, i); });
    return Launch{.grid = (p.u32("n") + 255) / 256, .block = Dim3(256), .entry = "fill"};
  };
  registry.add(std::move(fill));
}
