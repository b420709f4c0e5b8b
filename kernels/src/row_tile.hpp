#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "chunk_loop.hpp"
#include "element_io.hpp"
#include "heuristics.hpp"

// How the threads of a row group cover a row, and one thread's slice of one tensor's row: loaded
// once with several 16-byte loads in flight, then read by each pass from where the plan placed it
// (registers, shared memory, or global memory again).
//
// Thread `lane` of a group of T threads owns, in chunk j, the vector slot j*T + lane: elements
// [(j*T + lane)*V, +V). Only the last chunk can run past the width; there the vector is masked and
// the slot holding the width's end loads its first width % V elements one by one.
namespace ptxdsl::kernels::detail {

using Values = std::vector<Reg<F32>>;

// Build-time facts of the mapping.
struct RowMap {
  std::uint32_t width = 0;
  std::uint32_t vec = 1;
  std::uint32_t threads = 1;  // per row
  std::uint32_t chunks = 1;

  static RowMap of(const Plan& p) { return {p.width, p.vec, p.threads_per_row, p.chunks}; }
  std::int64_t chunk_offset(std::uint32_t j) const {
    return static_cast<std::int64_t>(j) * threads * vec;
  }
  bool complete(std::uint32_t j) const { return (j + 1ull) * threads * vec <= width; }
  // In the last chunk: lanes below this load a whole vector.
  std::uint32_t full_lanes(std::uint32_t j) const { return width / vec - j * threads; }
  std::uint32_t tail() const { return width % vec; }
};

// Per-thread predicates of the last chunk, made once per kernel.
class RowLanes {
 public:
  RowLanes(Kernel& k, const RowMap& m, Reg<U32> lane);
  const RowMap& map() const { return map_; }
  Reg<U32> lane() const { return lane_; }
  Reg<U32> first_element() const { return first_; }  // lane * V
  // Element e of chunk j is inside the row (nullopt: always).
  std::optional<Pred> element_valid(std::uint32_t j, std::uint32_t e) const;

 private:
  friend class RowMasks;
  RowMap map_;
  Reg<U32> lane_;
  Reg<U32> first_;
  std::optional<Pred> last_full_;  // lane < full_lanes(last)
  std::optional<Pred> last_tail_;  // lane == full_lanes(last), when width % V != 0
  std::optional<Pred> last_any_;   // lane <= full_lanes(last), when width % V != 0
};

// The masks of every chunk for one row, combined with the row's own predicate (rows past the batch
// in the last CTA: masked, not returned, so barriers and shuffles still see every thread).
class RowMasks {
 public:
  RowMasks(Kernel& k, const RowLanes& lanes, std::optional<Pred> row_ok);
  const RowLanes& lanes() const { return *lanes_; }
  std::optional<Pred> row_ok() const { return row_ok_; }
  // Whole-vector access of chunk j: nullopt = unconditional; `never` = no lane loads a vector.
  std::optional<Pred> vector(std::uint32_t j) const;
  bool never(std::uint32_t j) const;
  std::optional<Pred> tail(std::uint32_t j) const;  // the lone elements; only in the last chunk

 private:
  const RowLanes* lanes_;
  std::optional<Pred> row_ok_;
  std::optional<Pred> last_vector_;
  std::optional<Pred> last_tail_;
};

// Masked loads and stores of chunk j at a thread's row pointer (row start + lane * V).
struct ChunkLoad {
  std::optional<Raw> vector;
  std::vector<Raw> tail;
};
ChunkLoad issue_chunk(Kernel& k, const RowMasks& m, GlobalDPtr thread_row, std::uint32_t j,
                      MemHints h);
Values decode_chunk(Kernel& k, const RowMasks& m, std::uint32_t j, const ChunkLoad& c);
// The line holding chunk j's first element into `level`, for lanes that hold any of its elements.
void prefetch_chunk(Kernel& k, const RowMasks& m, GlobalDPtr thread_row, std::uint32_t j,
                    PrefetchLevel level);
// Stores in thread_row's dtype, rounding to nearest even.
void store_chunk(Kernel& k, const RowMasks& m, GlobalDPtr thread_row, std::uint32_t j,
                 const Values& v, MemHints h);

// One tensor's slice of one row, placed chunk by chunk as the plan says.
class RowTile {
 public:
  // `staging`: this thread's first staged element in shared memory (staged chunks follow at
  // T*V elements apart), needed when any chunk is placed in Shared. `loop_group`: chunks an
  // iteration when loading runs of staged chunks.
  RowTile(const RowMap& map, const std::vector<Place>& places, GlobalDPtr thread_row,
          std::optional<SharedDPtr> staging, MemHints hints, std::uint32_t loop_group);
  // Issues every load, stages what the plan stages, and hands each chunk's f32 values to
  // `first_use` (may be empty): the chunks not kept in registers first, then those kept (their
  // loads all issued before the first use).
  // `fence` as for_each_chunk takes it.
  void load(Kernel& k, const RowMasks& m,
            const std::function<void(std::uint32_t, const Values&)>& first_use = {},
            std::optional<ChunkFence> fence = std::nullopt);
  // Persistent kernels, one row after another with the next row's register chunks in flight:
  // `preload` issues the first row's register chunks (before the row loop); from then on `load`
  // leaves register chunks to `prefetch` (the next row's, at the top of an iteration, predicated
  // by its masks) and `advance` (at the bottom: the prefetched values become the current ones).
  // With `stage_async`, staged chunks take part too: `preload` and `prefetch` copy them by
  // cp.async into a second staging buffer (`buffer_elements` past the first), `load` reads them
  // from the current one, and `advance` swaps the two. The caller commits each row's copies as one
  // group and waits for the current row's before `load` (cp.async.wait_group 1).
  void stage_async(Kernel& k, std::int64_t buffer_elements);
  // prefetch_rows ≥ 2: register chunks arrive through a ring of `rows` shared buffers (`ring`:
  // this thread's first element in the first buffer, each next one `buffer_elements` further).
  // `ring_fill` copies a row's register chunks by cp.async into the buffer whose turn it is;
  // `ring_take` moves the oldest filled buffer into the register chunks (the caller has waited
  // for its group). Fill `rows` rows, take one, then per row: fill one, work, take one.
  void use_ring(Kernel& k, SharedDPtr ring, std::int64_t buffer_elements, std::uint32_t rows);
  void ring_fill(Kernel& k, const RowMasks& m, GlobalDPtr thread_row);
  void ring_take(Kernel& k);
  void preload(Kernel& k, const RowMasks& m);
  std::vector<ChunkLoad> prefetch(Kernel& k, const RowMasks& next, GlobalDPtr next_row) const;
  void advance(Kernel& k, const std::vector<ChunkLoad>& next);
  // The row that chunks outside registers are read from (each iteration of a row loop).
  void set_row(GlobalDPtr thread_row) { row_ = thread_row; }
  // Chunks placed nowhere (Place::Global) take `h` when a later pass reads them again (default:
  // the hints of their first read).
  void reread_with(MemHints h) { reread_hints_ = h; }
  // Chunk j's f32 values for a later pass; `shift` as for_each_chunk passes it.
  Values get(Kernel& k, const RowMasks& m, std::uint32_t j,
             std::optional<Reg<U32>> shift = std::nullopt);
  // for_each_chunk keys: chunks outside registers may loop, by placement.
  std::vector<int> loop_keys() const;

 private:
  RowMap map_;
  std::vector<Place> places_;
  GlobalDPtr row_;
  std::optional<SharedDPtr> staging_;
  MemHints hints_;
  std::optional<MemHints> reread_hints_;
  std::uint32_t loop_group_;
  std::vector<std::uint32_t> staged_index_;
  // Register chunks as loaded: 16-bit rows stay packed two to a b32 register (half the registers
  // of f32 values) and are decoded again by each pass.
  std::vector<ChunkLoad> regs_;
  bool prefetching_ = false;
  // cp.async of one row's chunks placed at `place` into `buffer`, chunk j at slot index[j].
  void copy_chunks(Kernel& k, const RowMasks& m, GlobalDPtr thread_row, SharedDPtr buffer,
                   Place place, const std::vector<std::uint32_t>& index) const;
  void copy_staged(Kernel& k, const RowMasks& m, GlobalDPtr thread_row, SharedDPtr buffer) const {
    copy_chunks(k, m, thread_row, buffer, Place::Shared, staged_index_);
  }
  SharedDPtr staged(Kernel& k, SharedDPtr buffer, std::uint32_t j,
                    std::optional<Reg<U32>> shift) const;
  SharedDPtr staged(Kernel& k, std::uint32_t j, std::optional<Reg<U32>> shift) const {
    return staged(k, *staging_, j, shift);
  }

  // stage_async: the other buffer, and the bits that turn either base address into the other.
  std::optional<SharedDPtr> next_staging_;
  std::optional<Reg<U32>> buffer_flip_;
  // use_ring: the buffer to fill next and the one to take next. Two buffers swap by XOR with
  // ring_flip_; more go round: one buffer on (ring_step_ bytes), back to ring_first_ at ring_end_.
  std::optional<SharedDPtr> ring_fill_, ring_take_;
  std::optional<Reg<U32>> ring_flip_, ring_first_, ring_end_;
  std::uint32_t ring_step_ = 0;
  void ring_turn(Kernel& k, const SharedDPtr& p) const;
  std::vector<std::uint32_t> ring_index_;  // per chunk: its slot among the register chunks
};

// This thread's first staged element for CTA row slot `slot` (0..R-1), staged chunks laid out as
// [slot][staged chunk][lane][V]: conflict-free 16-byte accesses, and each thread reads back only
// what it wrote, so staging needs no barrier.
SharedDPtr staging_for(Kernel& k, SharedDPtr base, const Plan& plan, Reg<U32> slot,
                       Reg<U32> first_element);
// The same in the ring of prefetch_rows ≥ 2 (register chunks, one tensor's buffer); every row slot
// of one tensor's buffer spans ring_slots_elements(plan) elements.
SharedDPtr ring_for(Kernel& k, SharedDPtr base, const Plan& plan, Reg<U32> slot,
                    Reg<U32> first_element);
std::int64_t ring_slots_elements(const Plan& plan);

}  // namespace ptxdsl::kernels::detail
