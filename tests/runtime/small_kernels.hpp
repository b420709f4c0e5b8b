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

// y = 2 x over `rows` rows of 128 f32, 128 threads: each row lands in one of two shared buffers by
// one bulk copy (issued by the last warp's first thread, which the other warps wait for on an
// mbarrier, by parity) and is read by every thread. sm_90, PTX 8.0.
inline SmallKernel bulk_copy_kernel(std::uint32_t rows) {
  constexpr std::uint32_t kRow = 128;
  Module m(Arch::Sm90, {8, 0});
  Kernel& k = m.kernel("bulk_copy_rows");
  k.require_threads(kRow);
  auto x = k.param_ptr<F32>("x");
  auto y = k.param_ptr<F32>("y");
  auto buffers = k.shared_array<F32>("rows", 2 * kRow);
  auto bar = k.shared_array<B64>("bar", 1, 8);
  auto t = k.tid_x();
  auto producer = t == kRow - 32;
  k.if_(producer, [&] {
    k.mbarrier_init(bar, 1u);
    k.fence_mbarrier_init();
  });
  k.bar_sync();
  for (std::uint32_t r = 0; r < rows; ++r) {
    const SharedPtr<F32> buffer = buffers + (r % 2) * kRow;
    k.if_(producer, [&] {
      k.mbarrier_arrive_expect_tx(bar, kRow * 4);
      k.cp_async_bulk(buffer, x + r * kRow, kRow * 4, bar);
    });
    k.mbarrier_wait(bar, r % 2);
    k.st(k.index(y + r * kRow, t), k.mul(k.ld(k.index(buffer, t)), 2.0f));
    k.bar_sync();
  }
  return finish(m, "bulk_copy_rows");
}

}  // namespace ptxdsl::test
