#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "chunk_loop.hpp"
#include "row_map.hpp"
#include "row_sources/row_source.hpp"

// One thread's slice of one tensor's row: loaded once with several 16-byte loads in flight, then
// read by each pass from where the plan holds it. The tile composes one RowSource for each place
// its chunks have (registers, shared memory, global memory again), chosen by the plan's
// strategies, and hands every chunk to its own; the chunks of one row can be split between all
// three.
namespace ptxdsl::kernels::detail {

// This thread's first element in the shared buffers of the tile's sources, where the plan has
// them.
struct TileBuffers {
  std::optional<SharedDPtr> staging;  // staged chunks (the first buffer of two with Async)
  std::optional<SharedDPtr> ring;     // the ring's first buffer (Lookahead::Ring)
};

class RowTile {
 public:
  // `thread_row`: this thread's first element of the row the tile starts at. Sources that set up
  // buffers of their own (the ring, the async staging) emit that here.
  RowTile(Kernel& k, const Plan& plan, const SharedLayout& layout, GlobalDPtr thread_row,
          const TileBuffers& buffers, MemHints hints);
  // Issues every load, stages what the plan stages, and hands each chunk's f32 values to
  // `first_use` (may be empty): the chunks not kept in registers first, then those kept (their
  // loads all issued before the first use).
  // `fence` as for_each_chunk takes it.
  void load(Kernel& k, const RowMasks& m, const FirstUse& first_use = {},
            std::optional<ChunkFence> fence = std::nullopt);
  // The row that the tile's passes read (each iteration of a row loop), and where it starts.
  void set_row(GlobalDPtr thread_row) { row_ = thread_row; }
  GlobalDPtr row() const { return row_; }
  // Chunks placed nowhere (Place::Global) take `h` when a later pass reads them again (default:
  // the hints of their first read).
  void reread_with(MemHints h);
  // Chunk j's f32 values for a later pass; `shift` as for_each_chunk passes it.
  Values get(Kernel& k, const RowMasks& m, std::uint32_t j,
             std::optional<Reg<U32>> shift = std::nullopt);
  // for_each_chunk keys: chunks outside registers may loop, by placement.
  std::vector<int> loop_keys() const;

  // The rows ahead of a persistent row loop (RowsAhead), as RowSource has them: every source's
  // fetch of `row`, and every source's advance.
  void fetch(Kernel& k, const RowMasks& m, GlobalDPtr row);
  void advance(Kernel& k);
  bool copies() const;  // some fetch is a cp.async copy

 private:
  GlobalDPtr row_;
  std::uint32_t loop_group_;
  // Registers, shared memory, global memory: the sources in that order (as far as chunks have
  // each place), and each chunk's own.
  std::vector<std::unique_ptr<RowSource>> sources_;
  std::vector<RowSource*> holder_;
};

// This thread's first staged element for CTA row slot `slot` (0..R-1), staged chunks laid out as
// [slot][staged chunk][lane][V]: conflict-free 16-byte accesses, and each thread reads back only
// what it wrote, so staging needs no barrier.
SharedDPtr staging_for(Kernel& k, SharedDPtr base, const Plan& plan, Reg<U32> slot,
                       Reg<U32> first_element);
// The same in the ring of prefetch_rows ≥ 2 (register chunks, one tensor's share of the first
// buffer).
SharedDPtr ring_for(Kernel& k, SharedDPtr base, const Plan& plan, Reg<U32> slot,
                    Reg<U32> first_element);

}  // namespace ptxdsl::kernels::detail
