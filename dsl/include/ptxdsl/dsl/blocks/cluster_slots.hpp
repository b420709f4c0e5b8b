#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ptxdsl/dsl/arch.hpp"
#include "ptxdsl/dsl/kernel.hpp"
#include "ptxdsl/dsl/reduce.hpp"

// Where the CTAs of a cluster leave their block results for each other in a cluster reduction, and
// how each learns that its peers' results have landed. Two buffers alternate call by call, so
// back-to-back reductions (layer norm's two, a persistent walk's one a row) need nothing between
// them.
//
// Exchange::Barrier: plain `st.shared::cluster` stores and a `barrier.cluster` (PTX 7.8). The
// barrier's arrival releases everything the CTA wrote before it, global stores included: a CTA
// whose last row's stores are still draining waits for them at every reduction.
//
// Exchange::Transactions: each result goes to its peer by `st.async`, which completes its bytes
// on the peer's mbarrier; each CTA announces the bytes it expects and waits on its own mbarrier
// alone (PTX 8.1). One round trip, no cluster-wide barrier, and nothing ordered but the slots.
namespace ptxdsl {

class ClusterSlots {
 public:
  enum class Exchange : std::uint8_t { Barrier, Transactions };
  // The exchange a target can take: Transactions from PTX 8.1 on sm_90 and later.
  static Exchange best_for(Arch arch, PtxVersion ptx);

  // Declares the slots (two buffers of cluster_ctas × max_values floats, static shared arrays
  // named `name`...) and, for Transactions, two mbarriers that thread `tid` 0 initializes here.
  // Construct it before the ClusterStart whose arrival tells the peers this CTA has started: that
  // arrival is what makes the barriers' initialization visible to them.
  ClusterSlots(Kernel& k, std::uint32_t cluster_ctas, std::uint32_t max_values, Reg<U32> tid,
               Exchange exchange, std::string_view name = "cluster_slots");

  // cluster_reduce (<ptxdsl/dsl/reduce.hpp>) through the current buffer, then the other one is
  // current. Every thread of the cluster must reach every call, the same calls in the same order,
  // after a ClusterStart awaited. Every thread of the cluster gets the same bits (block results
  // combined in rank order). Between two calls every thread of the CTA passes a bar.sync (the
  // block reduce's, for a block of more than a warp): a peer's next write into a buffer comes
  // only after this CTA's threads have read it.
  std::vector<Reg<F32>> reduce(Kernel& k, std::span<const Reg<F32>> tuple, const Combine& combine,
                               std::span<const float> identity, std::uint32_t block_threads,
                               Reg<U32> tid, SharedPtr<F32> scratch);

 private:
  std::uint32_t cluster_ctas_;
  std::uint32_t max_values_;
  Exchange exchange_;
  SharedPtr<F32> slots_;
  SharedPtr<B64> barriers_;  // Transactions: one a buffer
  Reg<U32> buffer_;          // 0 or 1: the buffer the next call takes
  Reg<U32> phases_;          // Transactions: bit b, the parity of buffer b's next phase
};

}  // namespace ptxdsl
