#include "ptxdsl/dsl/blocks/cluster_slots.hpp"

#include <fmt/format.h>

#include <string>

namespace ptxdsl {

ClusterSlots::Exchange ClusterSlots::best_for(Arch arch, PtxVersion ptx) {
  return arch >= Arch::Sm90 && ptx >= PtxVersion{8, 1} ? Exchange::Transactions : Exchange::Barrier;
}

ClusterSlots::ClusterSlots(Kernel& k, std::uint32_t cluster_ctas, std::uint32_t max_values,
                           Reg<U32> tid, Exchange exchange, std::string_view name)
    : cluster_ctas_(cluster_ctas), max_values_(max_values), exchange_(exchange) {
  if (cluster_ctas < 2 || cluster_ctas > kMaxClusterCtas || max_values == 0) {
    throw Error(fmt::format(
        "kernel '{}', ClusterSlots: a cluster of 2 to {} CTAs and at least one value a call, got "
        "{} CTAs and {} values",
        k.name(), kMaxClusterCtas, cluster_ctas, max_values));
  }
  slots_ = k.shared_array<F32>(name, 2 * cluster_reduce_slot_floats(cluster_ctas, max_values));
  buffer_ = k.mov<U32>(0u);
  if (exchange == Exchange::Transactions) {
    barriers_ = k.shared_array<B64>(std::string(name) + "_full", 2, 8);
    phases_ = k.mov<U32>(0u);
    // One arrival a phase: this CTA's thread 0 announcing the bytes its peers send.
    k.if_(k.setp(Cmp::Eq, tid, 0u), [&] {
      k.mbarrier_init(barriers_, 1u);
      k.mbarrier_init(barriers_ + 1, 1u);
      k.fence_mbarrier_init();
    });
  }
}

std::vector<Reg<F32>> ClusterSlots::reduce(Kernel& k, std::span<const Reg<F32>> tuple,
                                           const Combine& combine, std::span<const float> identity,
                                           std::uint32_t block_threads, Reg<U32> tid,
                                           SharedPtr<F32> scratch) {
  const auto n = static_cast<std::uint32_t>(tuple.size());
  if (n > max_values_) {
    throw Error(fmt::format("kernel '{}', ClusterSlots: {} values in one call, slots for {}",
                            k.name(), n, max_values_));
  }
  const std::uint32_t buffer_floats = cluster_reduce_slot_floats(cluster_ctas_, max_values_);
  const SharedPtr<F32> slots = k.index(slots_, k.mul(buffer_, buffer_floats));
  std::vector<Reg<F32>> out;
  if (exchange_ == Exchange::Barrier) {
    out = cluster_reduce(k, tuple, combine, identity, block_threads, tid, scratch, cluster_ctas_,
                         slots);
    k.mov(buffer_, k.xor_(buffer_, 1u));
    return out;
  }
  if (cluster_ctas_ > block_threads) {
    throw Error(fmt::format(
        "kernel '{}', ClusterSlots: a cluster of {} CTAs needs a thread each in every CTA, the "
        "block has {}",
        k.name(), cluster_ctas_, block_threads));
  }
  const std::vector<Reg<F32>> block =
      group_reduce(k, tuple, combine, identity, block_threads, block_threads, tid, scratch);
  if (block.empty()) return block;
  const SharedPtr<B64> barrier = k.index(barriers_, buffer_);
  const Reg<U32> rank = k.cluster_ctarank();
  // Thread p sends this CTA's results into slot `rank` of CTA p; thread 0 announces the bytes of
  // every CTA's results (its own included) on its own barrier.
  k.if_(k.setp(Cmp::Lt, tid, cluster_ctas_), [&] {
    k.predicated(k.setp(Cmp::Eq, tid, 0u),
                 [&] { k.mbarrier_arrive_expect_tx(barrier, cluster_ctas_ * n * 4); });
    const ClusterPtr<F32> there = k.mapa(k.index(slots, n == 1 ? rank : k.mul(rank, n)), tid);
    const ClusterPtr<B64> their_barrier = k.mapa(barrier, tid);
    for (std::uint32_t i = 0; i < n; ++i) k.st_async(there + i, block[i], their_barrier);
  });
  const Reg<U32> parity = k.and_(k.shr(phases_, buffer_), 1u);
  k.mbarrier_wait(barrier, parity, Scope::Cluster);
  out = combine_cluster_slots(k, slots, n, cluster_ctas_, combine);
  k.mov(phases_, k.xor_(phases_, k.shl(k.mov<U32>(1u), buffer_)));
  k.mov(buffer_, k.xor_(buffer_, 1u));
  return out;
}

}  // namespace ptxdsl
