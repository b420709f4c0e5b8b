#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "element_io.hpp"

// A pass over a thread's chunks. Chunks held in registers are unrolled (registers cannot be
// indexed). Runs of other chunks that share a placement become run-time loops, `group` chunks an
// iteration: a long unrolled block lets ptxas hoist every load of the pass to its top and spill.
namespace ptxdsl::kernels::detail {

// `body(j, shift)`: chunk j, with `shift` (when set) more chunks to add at run time to every
// per-chunk pointer the body uses. `key[j]` ≤ 0: unroll chunk j; runs of equal positive keys may
// loop.
// With a fence, unrolled chunks whose key is negative go inside `if (fence.taken)`: a predicate
// that always holds but that ptxas cannot see through, so it does not hoist their loads above the
// previous chunks' work; and loops run to min(fence.bound, n), a bound ptxas cannot see either,
// so it does not unroll them back into one block.
struct ChunkFence {
  Pred taken;      // true at run time
  Reg<U32> bound;  // ≥ the number of chunks at run time
};
void for_each_chunk(Kernel& k, const std::vector<int>& key, std::uint32_t group,
                    const std::function<void(std::uint32_t, std::optional<Reg<U32>>)>& body,
                    std::optional<ChunkFence> fence = std::nullopt);

// The keys for a pass that also loads per chunk what registers do not hold (w, b): with more than
// a few chunks, register chunks are fenced too.
std::vector<int> fence_all(std::vector<int> keys);

// p + shift·elements_per_chunk elements, or p itself without a shift.
GlobalDPtr shifted(Kernel& k, GlobalDPtr p, std::optional<Reg<U32>> shift,
                   std::uint32_t elements_per_chunk);
SharedDPtr shifted(Kernel& k, SharedDPtr p, std::optional<Reg<U32>> shift,
                   std::uint32_t elements_per_chunk);

}  // namespace ptxdsl::kernels::detail
