#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <vector>

#include "ptxdsl/dsl.hpp"

// The kernel of the executor's and the GPU's TMA load tests: one thread copies the box at the
// coordinate parameters c0.. (rank 2, 3 or 5) through the tensor map parameter `map` into shared
// memory, all wait for it on an mbarrier, and write the shared bytes to `out` as they lie
// (swizzled).
namespace ptxdsl::test {

// The bytes of one box of `spec`.
inline std::uint32_t tma_box_bytes(const TensorMapSpec& spec) {
  auto bytes = static_cast<std::uint32_t>(size_bytes(spec.element));
  for (const std::uint32_t b : spec.box) bytes *= b;
  return bytes;
}

inline void build_tma_load(Kernel& k, std::uint32_t rank, std::uint32_t box_bytes,
                           std::uint32_t threads) {
  k.require_threads(threads);
  const TensorMap map = k.param_tensor_map("map");
  const GlobalPtr<U32> out = k.param_ptr<U32>("out");
  std::vector<Reg<S32>> c;
  for (std::uint32_t i = 0; i < rank; ++i) c.push_back(k.param<S32>(fmt::format("c{}", i)));
  const SharedPtr<B64> bar = k.shared_array<B64>("bar", 1, 8);
  const SharedPtr<U32> box = k.shared_array<U32>("box", box_bytes / 4, 1024);
  const Reg<U32> t = k.tid_x();
  const Pred leader = t == 0u;
  k.if_(leader, [&] {
    k.mbarrier_init(bar, 1u);
    k.fence_mbarrier_init();
    k.prefetch_tensormap(map);
  });
  k.bar_sync();
  k.if_(leader, [&] {
    k.mbarrier_arrive_expect_tx(bar, box_bytes);
    switch (rank) {
      case 2:
        k.cp_async_bulk_tensor(box, map, {c[0], c[1]}, bar);
        break;
      case 3:
        k.cp_async_bulk_tensor(box, map, {c[0], c[1], c[2]}, bar);
        break;
      default:
        k.cp_async_bulk_tensor(box, map, {c[0], c[1], c[2], c[3], c[4]}, bar);
        break;
    }
  });
  k.mbarrier_wait(bar, 0u);
  k.for_range(t, box_bytes / 4, threads,
              [&](Reg<U32> i) { k.st(k.index(out, i), k.ld(k.index(box, i))); });
}

}  // namespace ptxdsl::test
