#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "ptxdsl/dsl/kernel.hpp"

// Reductions across threads, written once for every kernel: warp butterflies, and groups of warps
// through shared memory (warp → shared → warp → broadcast).
namespace ptxdsl {

enum class ReduceOp { Sum, Max };

// Butterfly over `width` lanes (a power of two ≤ 32): every lane ends with the result.
Reg<F32> warp_reduce(Kernel& k, Reg<F32> v, ReduceOp op, std::uint32_t width = 32);
inline Reg<F32> warp_reduce_sum(Kernel& k, Reg<F32> v, std::uint32_t width = 32) {
  return warp_reduce(k, v, ReduceOp::Sum, width);
}
inline Reg<F32> warp_reduce_max(Kernel& k, Reg<F32> v, std::uint32_t width = 32) {
  return warp_reduce(k, v, ReduceOp::Max, width);
}

// Shared floats a group reduce of `values` values needs, for a CTA of `block_threads`.
std::uint32_t group_reduce_scratch_floats(std::uint32_t block_threads, std::uint32_t values);

// Reduces several values at once over consecutive groups of `group_threads` threads (a power of two
// ≤ 32, or a multiple of 32 dividing `block_threads`); every thread of a group gets its group's
// results, summed in a fixed order (deterministic). Groups of more than a warp go through
// `scratch` and a `bar.sync` that every thread of the CTA must reach; `scratch` (at least
// `group_reduce_scratch_floats` floats) may be written again only after another barrier.
std::vector<Reg<F32>> group_reduce(Kernel& k, std::span<const Reg<F32>> values, ReduceOp op,
                                   std::uint32_t group_threads, std::uint32_t block_threads,
                                   Reg<U32> tid, SharedPtr<F32> scratch);

// A custom reduction over tuples of f32 values (a Welford (count, mean, M2) triple, an (index,
// value) argmax, ...): `combine(a, b)` returns the tuple for a and b together and must be
// associative; `identity` is its neutral tuple. For every lane of a group to end with bit-identical
// results, combine(a, b) must equal combine(b, a) bit for bit (a butterfly meets the two orders).
using Combine =
    std::function<std::vector<Reg<F32>>(std::span<const Reg<F32>> a, std::span<const Reg<F32>> b)>;
std::vector<Reg<F32>> warp_reduce(Kernel& k, std::span<const Reg<F32>> tuple,
                                  const Combine& combine, std::uint32_t width = 32);
std::vector<Reg<F32>> group_reduce(Kernel& k, std::span<const Reg<F32>> tuple,
                                   const Combine& combine, std::span<const float> identity,
                                   std::uint32_t group_threads, std::uint32_t block_threads,
                                   Reg<U32> tid, SharedPtr<F32> scratch);

// Reduces over every thread of every CTA of a cluster of `cluster_ctas` CTAs (sm_90; 1 is the
// block reduce alone): the CTA's result (group_reduce over the CTA, through `scratch`), written by
// threads 0 to cluster_ctas - 1 into slot %cluster_ctarank of `slots` in every CTA of the cluster
// (distributed shared memory), a cluster barrier, then every thread combines the slots of its own
// CTA in rank order: every thread of the cluster gets the same bits. Every thread of the cluster
// must reach it (bar.sync and barrier.cluster); `slots` (at least cluster_reduce_slot_floats
// floats, at the same offset in every CTA: a static array) may be written again only after
// another cluster barrier. Before the first call every CTA must know its peers have started (a
// ClusterStart awaited, <ptxdsl/dsl/blocks/cluster_start.hpp>): the slots it writes are theirs.
std::uint32_t cluster_reduce_slot_floats(std::uint32_t cluster_ctas, std::uint32_t values);
std::vector<Reg<F32>> cluster_reduce(Kernel& k, std::span<const Reg<F32>> values, ReduceOp op,
                                     std::uint32_t block_threads, Reg<U32> tid,
                                     SharedPtr<F32> scratch, std::uint32_t cluster_ctas,
                                     SharedPtr<F32> slots);
std::vector<Reg<F32>> cluster_reduce(Kernel& k, std::span<const Reg<F32>> tuple,
                                     const Combine& combine, std::span<const float> identity,
                                     std::uint32_t block_threads, Reg<U32> tid,
                                     SharedPtr<F32> scratch, std::uint32_t cluster_ctas,
                                     SharedPtr<F32> slots);
// The slots of a cluster reduction of `values` values a CTA (rank r's at r · values), read from
// this CTA's shared memory and combined in rank order: what every exchange ends with.
std::vector<Reg<F32>> combine_cluster_slots(Kernel& k, SharedPtr<F32> slots, std::uint32_t values,
                                            std::uint32_t cluster_ctas, const Combine& combine);
inline Reg<F32> cluster_reduce_sum(Kernel& k, Reg<F32> v, std::uint32_t block_threads, Reg<U32> tid,
                                   SharedPtr<F32> scratch, std::uint32_t cluster_ctas,
                                   SharedPtr<F32> slots) {
  const Reg<F32> values[] = {v};
  return cluster_reduce(k, values, ReduceOp::Sum, block_threads, tid, scratch, cluster_ctas,
                        slots)[0];
}

// The whole CTA as one group.
inline Reg<F32> block_reduce_sum(Kernel& k, Reg<F32> v, std::uint32_t block_threads, Reg<U32> tid,
                                 SharedPtr<F32> scratch) {
  const Reg<F32> values[] = {v};
  return group_reduce(k, values, ReduceOp::Sum, block_threads, block_threads, tid, scratch)[0];
}

}  // namespace ptxdsl
