#pragma once

#include "ptxdsl/dsl.hpp"

// The named-barrier kernel of the executor's and the GPU's scheduling tests, 128 threads: warps
// 0-1 write shared memory and bar.arrive on barrier 1; warps 2-3 bar.sync on it, read the other
// half's values and bar.sync on barrier 2 among themselves (the producers have exited by then);
// thread 64 + i stores (i ^ 1) · 3 at out[i].
namespace ptxdsl::test {

inline void build_named_barriers(Kernel& k) {
  auto out = k.param_ptr<U32>("out");
  SharedPtr<U32> buf = k.shared_array<U32>("buf", 64);
  const Reg<U32> t = k.tid_x();
  k.if_else(
      k.setp(Cmp::Lt, t, 64u),
      [&] {
        k.st(k.index(buf, t), k.mul(t, 3u));
        k.bar_arrive(1, 128);
      },
      [&] {
        k.bar_sync(1, 128);
        const Reg<U32> i = k.sub(t, 64u);
        const Reg<U32> other = k.ld(k.index(buf, k.xor_(i, 1u)));
        k.bar_sync(2, 64);
        k.st(k.index(out, i), other);
      });
}

}  // namespace ptxdsl::test
