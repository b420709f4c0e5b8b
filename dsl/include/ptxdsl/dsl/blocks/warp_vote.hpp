#pragma once

#include "ptxdsl/dsl/kernel.hpp"

// What a warp vote gives a kernel: the lanes of a warp that keep a value, packed together in lane
// order (stream compaction, top-k candidates, a histogram's non-empty bins) with one ballot and
// two popc, no shared memory and no atomics.
namespace ptxdsl {

struct WarpCompaction {
  Reg<U32> slot;   // the kept lanes below this one: where it writes (meaningful where it keeps)
  Reg<U32> count;  // the kept lanes of the warp, in every lane
};

// `vote.sync.ballot` of `keep`, then `popc` of the ballot's lanes below this one and of the whole
// ballot. Every live lane of `member` must execute it together (it is a warp collective).
WarpCompaction warp_compact(Kernel& k, Pred keep, Src<B32> member = kAllLanes);

}  // namespace ptxdsl
