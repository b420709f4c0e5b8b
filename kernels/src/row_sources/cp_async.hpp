#pragma once

#include <cstdint>
#include <utility>

#include "row_source.hpp"

// What the sources that copy rows ahead by cp.async share (the ring, the async staging): the copy
// of a row's chunks into a buffer, and buffers that a base register moves between.
namespace ptxdsl::kernels::detail {

// cp.async of `row`'s chunks in `chunks` (masked by `m`) into `buffer`, in the set's order.
void copy_chunks(Kernel& k, const ChunkSet& chunks, const RowMasks& m, GlobalDPtr row,
                 SharedDPtr buffer);
// `p` with a base register of its own (rewritten each row), and the buffer `elements` further on,
// also in a register of its own.
std::pair<SharedDPtr, SharedDPtr> two_buffers(Kernel& k, SharedDPtr p, std::int64_t elements);
// Moves `p` to the other buffer (`bits`: the XOR of the two base addresses).
void flip(Kernel& k, const SharedDPtr& p, Reg<U32> bits);

}  // namespace ptxdsl::kernels::detail
