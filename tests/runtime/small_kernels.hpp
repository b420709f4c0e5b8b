#pragma once

#include <cstdint>
#include <string>

#include "ptxdsl/dsl.hpp"

// Small kernels written with the DSL that exercise the runtime without the norm kernels.
namespace ptxdsl::test {

struct SmallKernel {
  std::string ptx;
  KernelContract contract;
};

inline SmallKernel finish(Module& m, const std::string& entry) {
  SmallKernel out;
  out.ptx = m.emit();
  out.contract = m.find(entry).contract();
  return out;
}

// y[i] = a * x[i] + y[i] for i < n; 128 threads per CTA.
inline SmallKernel axpy_kernel() {
  Module m(Arch::Sm90);
  Kernel& k = m.kernel("axpy");
  k.require_threads(128);
  auto x = k.param_ptr<F32>("x");
  auto y = k.param_ptr<F32>("y");
  auto a = k.param<F32>("a");
  auto n = k.param<U32>("n");
  auto i = k.mad<U32>(k.ctaid_x(), 128u, k.tid_x());
  k.if_(i < n, [&] {
    auto yi = y + i;
    k.st(yi, k.fma(a, k.ld(x + i), k.ld(yi)));
  });
  return finish(m, "axpy");
}

// y[t] = x[ntid - 1 - t], through the far end of `shared_bytes` of dynamic shared memory.
inline SmallKernel reverse_through_shared_kernel(std::uint32_t shared_bytes) {
  Module m(Arch::Sm90);
  Kernel& k = m.kernel("reverse_shared");
  k.max_threads(1024);
  auto x = k.param_ptr<F32>("x");
  auto y = k.param_ptr<F32>("y");
  auto sh = k.shared_dynamic<F32>("buffer", shared_bytes);
  auto t = k.tid_x();
  auto last = k.mov<U32>(shared_bytes / 4 - 1);
  k.st(sh + k.sub(last, t), k.ld(x + t));
  k.bar_sync();
  auto mirror = k.sub(k.sub(k.ntid_x(), 1u), t);
  k.st(y + t, k.ld(sh + k.sub(last, mirror)));
  return finish(m, "reverse_shared");
}

// Does nothing with many parameters, like a norm's: for the launch's host cost.
inline SmallKernel empty_kernel() {
  Module m(Arch::Sm90);
  Kernel& k = m.kernel("empty12");
  k.require_threads(128);
  for (const char* name : {"x", "w", "b", "y", "mean", "rstd", "dy", "dx"}) k.param_ptr<F32>(name);
  k.param<U32>("batch");
  k.param<U32>("stride");
  k.param<F32>("eps");
  k.param<U32>("partial_rows");
  return finish(m, "empty12");
}

}  // namespace ptxdsl::test
