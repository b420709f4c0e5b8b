// A kernel tool built against the installed package: y = a * x + y, registered as a kernel
// author registers their own (docs/dsl.md, "Your own tool").
#include <ptxdsl/tool.hpp>

void ptxdsl::tool::register_kernels(Registry& registry) {
  KernelDefinition axpy;
  axpy.name = "axpy";
  axpy.description = "y = a * x + y over n f32 elements";
  axpy.params = {Parameter::uint("n", "elements", 1, 1u << 24, 4096)};
  axpy.build = [](Module& m, const Params& p) {
    Kernel& k = m.kernel("axpy");
    const GlobalPtr<F32> x = k.param_ptr<F32>("x");
    const GlobalPtr<F32> y = k.param_ptr<F32>("y");
    const Reg<F32> a = k.param<F32>("a");
    const Reg<U32> n = k.param<U32>("n");
    k.require_threads(256);
    const Reg<U32> cta = k.ctaid_x();
    const Reg<U32> tid = k.tid_x();
    const Reg<U32> i = k.mad(cta, 256u, tid);
    k.if_(i < n, [&] {
      const Reg<F32> xi = k.ld(x + i, kNc);
      const Reg<F32> yi = k.ld(y + i);
      const Reg<F32> r = k.fma(a, xi, yi);
      k.st(y + i, r);
    });
    Launch launch;
    launch.grid = (p.u32("n") + 255) / 256;
    return launch;
  };
  axpy.inputs = [](const Params& p, Random& random) {
    const std::size_t n = p.uint("n");
    RunData d;
    d.input("x", random.normal_values(n)).inout("y", random.uniform_values(n, -1, 1));
    d.scalar("a", 0.75).scalar("n", static_cast<double>(n));
    return d;
  };
  axpy.reference = [](const Params&, const RunData& in) {
    std::vector<double> y = in.values("y");
    for (std::size_t i = 0; i < y.size(); ++i) y[i] += in.scalar("a") * in.values("x")[i];
    return Expected{{"y", y}};
  };
  registry.add(std::move(axpy));
}
