#include "ptxdsl/dsl/reduce.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <limits>

namespace ptxdsl {
namespace {

Reg<F32> combine(Kernel& k, Reg<F32> a, Reg<F32> b, ReduceOp op) {
  return op == ReduceOp::Sum ? k.add(a, b) : k.max(a, b);
}

void check_width(const Kernel& k, std::uint32_t width) {
  if (width == 0 || width > 32 || !std::has_single_bit(width)) {
    throw Error(
        fmt::format("kernel '{}', warp_reduce: width must be a power of two in [1, 32], got {}",
                    k.name(), width));
  }
}

// One value at a time with `op`, as a Combine.
Combine combine_each(Kernel& k, ReduceOp op) {
  return [&k, op](std::span<const Reg<F32>> a, std::span<const Reg<F32>> b) {
    std::vector<Reg<F32>> out;
    for (std::size_t i = 0; i < a.size(); ++i) out.push_back(combine(k, a[i], b[i], op));
    return out;
  };
}

float identity_of(ReduceOp op) {
  return op == ReduceOp::Sum ? 0.0f : -std::numeric_limits<float>::infinity();
}

}  // namespace

Reg<F32> warp_reduce(Kernel& k, Reg<F32> v, ReduceOp op, std::uint32_t width) {
  check_width(k, width);
  for (std::uint32_t lane_mask = width / 2; lane_mask >= 1; lane_mask /= 2) {
    v = combine(k, v, k.shfl_bfly(v, lane_mask, width), op);
  }
  return v;
}

std::vector<Reg<F32>> warp_reduce(Kernel& k, std::span<const Reg<F32>> tuple,
                                  const Combine& combine, std::uint32_t width) {
  check_width(k, width);
  std::vector<Reg<F32>> v(tuple.begin(), tuple.end());
  for (std::uint32_t lane_mask = width / 2; lane_mask >= 1; lane_mask /= 2) {
    std::vector<Reg<F32>> other;
    for (Reg<F32> r : v) other.push_back(k.shfl_bfly(r, lane_mask, width));
    v = combine(v, other);
    if (v.size() != other.size()) {
      throw Error(
          fmt::format("kernel '{}', warp_reduce: combine returned {} values for tuples of {}",
                      k.name(), v.size(), other.size()));
    }
  }
  return v;
}

std::uint32_t group_reduce_scratch_floats(std::uint32_t block_threads, std::uint32_t values) {
  return std::max<std::uint32_t>(1, block_threads / 32) * values;
}

std::vector<Reg<F32>> group_reduce(Kernel& k, std::span<const Reg<F32>> values, ReduceOp op,
                                   std::uint32_t group_threads, std::uint32_t block_threads,
                                   Reg<U32> tid, SharedPtr<F32> scratch) {
  // Each value on its own: one butterfly of a single register at a time.
  const std::vector<float> identity(values.size(), identity_of(op));
  return group_reduce(k, values, combine_each(k, op), identity, group_threads, block_threads, tid,
                      scratch);
}

std::uint32_t cluster_reduce_slot_floats(std::uint32_t cluster_ctas, std::uint32_t values) {
  return cluster_ctas * values;
}

std::vector<Reg<F32>> cluster_reduce(Kernel& k, std::span<const Reg<F32>> values, ReduceOp op,
                                     std::uint32_t block_threads, Reg<U32> tid,
                                     SharedPtr<F32> scratch, std::uint32_t cluster_ctas,
                                     SharedPtr<F32> slots) {
  const std::vector<float> identity(values.size(), identity_of(op));
  return cluster_reduce(k, values, combine_each(k, op), identity, block_threads, tid, scratch,
                        cluster_ctas, slots);
}

std::vector<Reg<F32>> cluster_reduce(Kernel& k, std::span<const Reg<F32>> tuple,
                                     const Combine& combine, std::span<const float> identity,
                                     std::uint32_t block_threads, Reg<U32> tid,
                                     SharedPtr<F32> scratch, std::uint32_t cluster_ctas,
                                     SharedPtr<F32> slots) {
  if (cluster_ctas == 0 || cluster_ctas > kMaxClusterCtas || cluster_ctas > block_threads) {
    throw Error(fmt::format(
        "kernel '{}', cluster_reduce: the cluster must have 1 to {} CTAs, and no more than the "
        "block's {} threads, got {}",
        k.name(), kMaxClusterCtas, block_threads, cluster_ctas));
  }
  std::vector<Reg<F32>> block =
      group_reduce(k, tuple, combine, identity, block_threads, block_threads, tid, scratch);
  if (cluster_ctas == 1 || block.empty()) return block;
  const auto n = static_cast<std::uint32_t>(block.size());
  const Reg<U32> rank = k.cluster_ctarank();
  // Thread p writes this CTA's results into slot `rank` of CTA p.
  k.if_(k.setp(Cmp::Lt, tid, cluster_ctas), [&] {
    const ClusterPtr<F32> there = k.mapa(k.index(slots, n == 1 ? rank : k.mul(rank, n)), tid);
    for (std::uint32_t i = 0; i < n; ++i) k.st(there + i, block[i]);
  });
  k.cluster_sync();
  return combine_cluster_slots(k, slots, n, cluster_ctas, combine);
}

std::vector<Reg<F32>> combine_cluster_slots(Kernel& k, SharedPtr<F32> slots, std::uint32_t values,
                                            std::uint32_t cluster_ctas, const Combine& combine) {
  std::vector<Reg<F32>> out;
  for (std::uint32_t i = 0; i < values; ++i) out.push_back(k.ld(slots + i));
  for (std::uint32_t r = 1; r < cluster_ctas; ++r) {
    std::vector<Reg<F32>> next;
    for (std::uint32_t i = 0; i < values; ++i) next.push_back(k.ld(slots + (r * values + i)));
    out = combine(out, next);
  }
  return out;
}

std::vector<Reg<F32>> group_reduce(Kernel& k, std::span<const Reg<F32>> values,
                                   const Combine& combine, std::span<const float> identity,
                                   std::uint32_t group_threads, std::uint32_t block_threads,
                                   Reg<U32> tid, SharedPtr<F32> scratch) {
  const bool sub_warp = group_threads <= 32 && std::has_single_bit(group_threads);
  const bool warps =
      group_threads % 32 == 0 && group_threads > 0 && block_threads % group_threads == 0;
  if (!sub_warp && !warps) {
    throw Error(
        fmt::format("kernel '{}', group_reduce: group size must be a power of two ≤ 32 or a "
                    "multiple of 32 dividing the block ({}), got {}",
                    k.name(), block_threads, group_threads));
  }
  if (identity.size() != values.size()) {
    throw Error(fmt::format("kernel '{}', group_reduce: {} identity values for tuples of {}",
                            k.name(), identity.size(), values.size()));
  }
  if (values.empty()) return {};
  std::vector<Reg<F32>> out =
      warp_reduce(k, values, combine, std::min<std::uint32_t>(group_threads, 32));
  if (group_threads <= 32) return out;

  const std::uint32_t n = static_cast<std::uint32_t>(values.size());
  const std::uint32_t warps_per_group = group_threads / 32;
  Reg<U32> lane = k.and_(tid, 31u);
  Reg<U32> warp = k.shr(tid, 5u);
  // Lane 0 of every warp writes its partials: scratch[warp * n + i].
  SharedPtr<F32> mine = k.index(scratch, n == 1 ? warp : k.mul(warp, n));
  k.predicated(k.setp(Cmp::Eq, lane, 0u), [&] {
    for (std::uint32_t i = 0; i < n; ++i) k.st(mine + i, out[i]);
  });
  k.bar_sync(0);
  // Lane l of every warp reads the partials of warp l of its group, then the warp reduces them.
  Reg<U32> first_warp = k.sub(warp, k.and_(warp, warps_per_group - 1));
  if (!std::has_single_bit(warps_per_group)) {
    first_warp = k.mul(k.div(warp, warps_per_group), warps_per_group);
  }
  Reg<U32> source_warp = k.add(first_warp, lane);
  SharedPtr<F32> theirs = k.index(scratch, n == 1 ? source_warp : k.mul(source_warp, n));
  Pred has_partial = k.setp(Cmp::Lt, lane, warps_per_group);
  const std::uint32_t width = std::bit_ceil(warps_per_group);
  std::vector<Reg<F32>> partials;
  for (std::uint32_t i = 0; i < n; ++i)
    partials.push_back(k.ld_if(has_partial, theirs + i, identity[i]));
  out = warp_reduce(k, partials, combine, width);
  // Lanes past the first segment reduced only identities: take lane 0's result.
  if (width < 32) {
    for (Reg<F32>& r : out) r = k.shfl_idx(r, 0u);
  }
  return out;
}

}  // namespace ptxdsl
