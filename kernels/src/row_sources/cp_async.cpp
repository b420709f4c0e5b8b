#include "cp_async.hpp"

#include "../chunk_loop.hpp"

namespace ptxdsl::kernels::detail {

void copy_chunks(Kernel& k, const ChunkSet& chunks, const RowMasks& m, GlobalDPtr row,
                 SharedDPtr buffer) {
  const RowMap& map = chunks.map();
  const std::uint32_t per_chunk = chunks.per_chunk();
  const auto s = static_cast<std::uint32_t>(size_bytes(row.dtype));
  const std::uint32_t bytes = map.vec * s;
  for_each_chunk(k, chunks.keys(), chunks.loop_group(),
                 [&](std::uint32_t j, std::optional<Reg<U32>> shift) {
                   if (!chunks.holds(j)) return;
                   const GlobalDPtr from = shifted(k, row, shift, per_chunk) + map.chunk_offset(j);
                   const SharedDPtr to = chunks.in_buffer(k, buffer, j, shift);
                   // Bytes this lane reads: the whole vector, the tail lane's lone elements, or
                   // none (masked lanes and rows: zero-filled, their addresses never touched).
                   std::optional<Src<U32>> reads;
                   if (const auto v = m.vector(j)) reads = k.selp<U32>(bytes, 0u, *v);
                   if (const auto t = m.tail(j)) {
                     reads = k.selp<U32>(map.tail() * s, reads ? *reads : Src<U32>(bytes), *t);
                   }
                   // Of the row's hints, the copies take the L2 ones (L1 is not on their way).
                   const MemHints l2{.l2_policy = chunks.hints().l2_policy};
                   if (reads) {
                     k.cp_async_zfill(to.p, from.p, bytes, *reads, l2);
                   } else {
                     k.cp_async(to.p, from.p, bytes, l2);
                   }
                 });
}

std::pair<SharedDPtr, SharedDPtr> two_buffers(Kernel& k, SharedDPtr p, std::int64_t elements) {
  const SharedDPtr first{{k.mov<U32>(p.p.base), p.p.offset}, p.dtype};
  const auto bytes = static_cast<std::uint32_t>(elements * size_bytes(p.dtype));
  return {first, SharedDPtr{{k.add(first.p.base, bytes), p.p.offset}, p.dtype}};
}

void flip(Kernel& k, const SharedDPtr& p, Reg<U32> bits) {
  k.mov(p.p.base, k.xor_(p.p.base, bits));
}

}  // namespace ptxdsl::kernels::detail
