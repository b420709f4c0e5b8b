#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ptxdsl/dsl/blocks/cluster_slots.hpp"
#include "ptxdsl/dsl/kernel.hpp"

// Reductions over any associative f32 operation (sum, max, min, or the caller's), within a thread
// and across a warp, a group of threads or the whole CTA, several values at once. Built on
// <ptxdsl/dsl/reduce.hpp>'s butterflies and shared-memory steps, which fix the combining order:
// every lane of a group ends with bit-identical results.
namespace ptxdsl {

// An operation and its identity (the value that changes nothing, which lanes without data
// contribute). `combine(k, a, b)` emits the instructions for a op b; it must be associative, and
// commutative bit for bit for every lane to end with the same result (a butterfly meets both
// orders).
class Reduction {
 public:
  using Fn = std::function<Reg<F32>(Kernel& k, Reg<F32> a, Reg<F32> b)>;
  static Reduction sum();  // add.f32, identity 0
  static Reduction max();  // max.f32, identity -inf
  static Reduction min();  // min.f32, identity +inf
  // The largest magnitude: max.f32 of abs.f32 of both, identity 0 (a quantizer's scale).
  static Reduction absmax();
  static Reduction of(std::string name, Fn combine, float identity);

  const std::string& name() const { return name_; }
  float identity() const { return identity_; }
  Reg<F32> operator()(Kernel& k, Reg<F32> a, Reg<F32> b) const { return combine_(k, a, b); }

 private:
  Reduction(std::string name, Fn combine, float identity);
  std::string name_;
  Fn combine_;
  float identity_ = 0;
};

// One thread's values combined pairwise (short dependency chains); at least one value.
Reg<F32> tree_reduce(Kernel& k, std::span<const Reg<F32>> values, const Reduction& op);
inline Reg<F32> tree_reduce(Kernel& k, std::initializer_list<Reg<F32>> values,
                            const Reduction& op) {
  return tree_reduce(k, std::span<const Reg<F32>>(values.begin(), values.size()), op);
}

// `values` reduced over groups of `group_threads` threads, each value by its own operation (or all
// by `op`), as <ptxdsl/dsl/reduce.hpp>'s group_reduce does, through a caller's `scratch` (at least
// group_reduce_scratch_floats floats, written again only after another barrier): for kernels that
// lay out their shared memory themselves. Reducer below owns its scratch.
std::vector<Reg<F32>> group_reduce(Kernel& k, std::span<const Reg<F32>> values,
                                   std::span<const Reduction> ops, std::uint32_t group_threads,
                                   std::uint32_t block_threads, Reg<U32> tid,
                                   SharedPtr<F32> scratch);
std::vector<Reg<F32>> group_reduce(Kernel& k, std::span<const Reg<F32>> values, const Reduction& op,
                                   std::uint32_t group_threads, std::uint32_t block_threads,
                                   Reg<U32> tid, SharedPtr<F32> scratch);

// `values` reduced over every thread of every CTA of a cluster of `cluster_ctas` CTAs by `op`, as
// <ptxdsl/dsl/reduce.hpp>'s cluster_reduce does (the block's results exchanged through distributed
// shared memory in `slots`, combined in rank order: every thread of the cluster gets the same
// bits).
std::vector<Reg<F32>> cluster_reduce(Kernel& k, std::span<const Reg<F32>> values,
                                     const Reduction& op, std::uint32_t block_threads, Reg<U32> tid,
                                     SharedPtr<F32> scratch, std::uint32_t cluster_ctas,
                                     SharedPtr<F32> slots);
// The same through a ClusterSlots, which keeps its own buffers and, for Exchange::Transactions,
// needs no cluster barrier.
std::vector<Reg<F32>> cluster_reduce(Kernel& k, std::span<const Reg<F32>> values,
                                     const Reduction& op, std::uint32_t block_threads, Reg<U32> tid,
                                     SharedPtr<F32> scratch, ClusterSlots& slots);

// The threads that reduce together: consecutive groups of `group_threads` threads of a CTA of
// `block_threads`. A group of at most 32 (a power of two) reduces by shuffles alone; a larger one
// (a multiple of 32 dividing the block) then goes through shared memory and a `bar.sync` that
// every thread of the CTA must reach. Every thread of a group gets its group's results.
//
// The reducer owns its scratch (a static shared array, `scratch_name`, sized for `max_values`
// values a call) as two buffers that alternate call by call, so that back-to-back reductions need
// no barrier between them; inside a run-time loop, make an even number of calls a trip (or end
// the trip with bar_sync).
class Reducer {
 public:
  Reducer(Kernel& k, std::uint32_t group_threads, std::uint32_t block_threads, Reg<U32> tid,
          std::uint32_t max_values = 4, std::string_view scratch_name = "reduce_scratch");
  // The lanes of a warp in segments of `width` (a power of two ≤ 32): no shared memory.
  static Reducer warp(Kernel& k, std::uint32_t width = 32);
  // The whole CTA as one group (its block: the kernel's require_threads).
  static Reducer block(Kernel& k, std::uint32_t block_threads, Reg<U32> tid,
                       std::uint32_t max_values = 4,
                       std::string_view scratch_name = "reduce_scratch");

  Reg<F32> reduce(Kernel& k, Reg<F32> value, const Reduction& op);
  // Several values by one operation, or each by its own: `reduce(k, {m, s}, {max, sum})`.
  std::vector<Reg<F32>> reduce(Kernel& k, std::initializer_list<Reg<F32>> values,
                               const Reduction& op);
  std::vector<Reg<F32>> reduce(Kernel& k, std::initializer_list<Reg<F32>> values,
                               std::initializer_list<Reduction> ops);
  std::vector<Reg<F32>> reduce(Kernel& k, std::span<const Reg<F32>> values,
                               std::span<const Reduction> ops);

  std::uint32_t group_threads() const { return group_threads_; }

 private:
  std::uint32_t group_threads_;
  std::uint32_t block_threads_;
  Reg<U32> tid_;
  std::uint32_t max_values_;
  std::uint32_t buffer_floats_ = 0;  // one buffer's; 0: shuffles only
  SharedPtr<F32> scratch_{};
  std::uint32_t calls_ = 0;
};

}  // namespace ptxdsl
