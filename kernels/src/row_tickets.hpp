#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "builders.hpp"

// Persistent CTAs that take their row groups from a counter in global memory (row_order tickets)
// instead of a fixed walk ctaid, ctaid + grid, ...: a CTA on an SM that moves its rows faster takes
// more of them, so the grid ends together rather than waiting for its slowest CTA.
//
// Every CTA walks the groups ctaid, ctaid + grid, ... for its first `fixed` = depth + 1 groups (the
// current one and the `depth` ahead, whose rows are in flight, when the loop starts); each later
// group comes by ticket: thread 0 takes t (counter[0] += 1) for the group fixed·grid + t one trip
// before the CTA learns it, so a whole trip hides the atomic's round trip. A CTA's groups rise,
// so once its current group is past the end every later one is too (and a ticket it took but
// never used was past the end). The last CTA to finish (counter[1] counts them) puts both words
// back to zero for the next launch: the host zeroes them once.
namespace ptxdsl::kernels::detail {

class RowTickets {
 public:
  // `counter`: two u32, zero at the launch.
  RowTickets(Kernel& k, GlobalPtr<U32> counter, Reg<U32> tid, Reg<U32> first, Reg<U32> grid,
             std::uint32_t depth);

  // while (current < count) body(current).
  void for_each(Kernel& k, Reg<U32> count, const std::function<void(Reg<U32>)>& body);
  // Group i ahead of the current one (0: the current one), i ≤ depth.
  Reg<U32> ahead(std::uint32_t i) const { return queue_.at(i); }

  // Once a trip, in this order: `take` early (thread 0's atomic, waited for a trip later), `post`
  // before a barrier of the whole CTA (thread 0 stores the ticket of the trip before),
  // `receive` after it, at the end of the trip (every thread reads the ticket and the groups move
  // up one: the current group's register, which the body got, holds the next one from there).
  void take(Kernel& k);
  void post(Kernel& k);
  void receive(Kernel& k);
  // After the loop: the last CTA out zeroes the counter.
  void finish(Kernel& k);

 private:
  void take_if_ticketed(Kernel& k, Reg<U32> index, Reg<U32> into);

  GlobalPtr<U32> counter_;
  Reg<U32> first_, grid_, fixed_;
  SharedPtr<U32> slots_;  // two u32 of shared memory: the ticket's way from thread 0 to the CTA
  Reg<U32> arriving_;     // the CTA's index of the group this trip posts (`receive` appends it)
  Pred leader_;
  Reg<U32> slot_;    // this trip's slot, 0 or 1: trips alternate, so none waits for the last
  Reg<U32> ticket_;  // taken last trip (or before the loop): posted this trip
  Reg<U32> fresh_;   // taken this trip
  std::vector<Reg<U32>> queue_;
};

}  // namespace ptxdsl::kernels::detail
