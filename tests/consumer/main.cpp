// Builds a small kernel with the installed DSL and prints its PTX.
#include <cstdio>
#include <ptxdsl/dsl.hpp>

int main() {
  using namespace ptxdsl;
  Module module(Arch::Sm90);
  Kernel& k = module.kernel("axpy");
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
  std::fputs(module.emit().c_str(), stdout);
  return 0;
}
