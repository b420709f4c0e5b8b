#include "ptxdsl/dsl/blocks/warp_vote.hpp"

namespace ptxdsl {

WarpCompaction warp_compact(Kernel& k, Pred keep, Src<B32> member) {
  const Reg<U32> ballot = k.bitcast<U32>(k.vote_ballot(keep, member));
  // The lanes below this one: (1 << laneid) - 1, which PTX's %lanemask_lt also holds.
  const Reg<U32> below = k.sub(k.shl(k.mov<U32>(1u), k.laneid()), 1u);
  return {k.popc(k.and_(ballot, below)), k.popc(ballot)};
}

}  // namespace ptxdsl
