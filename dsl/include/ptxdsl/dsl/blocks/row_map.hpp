#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ptxdsl/dsl/blocks/element_io.hpp"
#include "ptxdsl/dsl/blocks/vector.hpp"

// The row tile: how the T threads of a row group cover a row of `width` elements with vectors of
// V elements (docs/dsl.md, "Building blocks"): the chunks a thread owns, their masks, and the
// masked loads and stores of one chunk.
//
// Thread `lane` of a group of T threads owns, in chunk j, the vector slot j*T + lane: elements
// [(j*T + lane)*V, +V). Only the last chunk can run past the width; there the vector is masked and
// the slot holding the width's end loads its first width % V elements one by one.
//
// A row split over several CTAs in slices of `width` elements can end in a shorter slice: the CTA
// that holds it (a predicate made at run time, such as the cluster's last rank) masks its chunks
// at `short_width` instead, and only it can have lone elements at the end.
namespace ptxdsl {

// Build-time facts of the mapping.
// Where each CTA's row lies among the rows of a tensor: rows `stride` elements apart (0: the
// width, rows packed), the row starting `offset` elements into each (a SwiGLU's up half of
// [batch, 2·width] rows: stride 2·width, offset width). Accesses stay aligned where the map's
// vector width divides both; RowMap::fit with a layout picks such a width.
struct RowLayout {
  std::uint32_t stride = 0;
  std::uint32_t offset = 0;
  // The stride in elements for rows of `width`; throws ptxdsl::Error when the row does not fit
  // in it (offset + width > stride) or, for a layout other than packed rows, `vec` does not
  // divide the stride and the offset.
  std::uint32_t stride_for(std::uint32_t width, std::uint32_t vec) const;
};

struct RowMap {
  std::uint32_t width = 0;
  std::uint32_t vec = 1;
  std::uint32_t threads = 1;  // per row
  std::uint32_t chunks = 1;
  std::uint32_t short_width = 0;  // the shorter slice's width (0: every row is `width` long)

  // The fewest chunks that cover `width` with `vec`-element vectors (1, 2, 4 or 8) and `threads`
  // threads (1 to 1024); with `short_width` (1 to width - 1, and width a whole number of
  // vectors), some CTAs' rows end there. Throws ptxdsl::Error naming the bad value.
  static RowMap make(std::uint32_t width, std::uint32_t vec, std::uint32_t threads,
                     std::uint32_t short_width = 0);
  // The row tile for rows of `width` elements of `dtype`, each row `width` elements after the
  // last: the widest vector whose accesses stay aligned on every row (vector_elems_for), and a
  // power of two of threads from 32 to `max_threads` (at most 1024), the fewest that cover the
  // row in one chunk where that many suffice.
  static RowMap fit(std::uint32_t width, ScalarType dtype, std::uint32_t max_threads = 256);
  // The same for rows laid out as `layout` says: the vector also divides its stride and offset.
  static RowMap fit(std::uint32_t width, ScalarType dtype, std::uint32_t max_threads,
                    const RowLayout& layout);
  std::int64_t chunk_offset(std::uint32_t j) const {
    return static_cast<std::int64_t>(j) * threads * vec;
  }
  // The width every CTA's row reaches.
  std::uint32_t common_width() const { return short_width > 0 ? short_width : width; }
  // Every lane of chunk j loads a whole vector, in every CTA.
  bool complete(std::uint32_t j) const { return (j + 1ull) * threads * vec <= common_width(); }
  // Lanes of chunk j whose vector lies within `row_width` elements (0 to threads).
  std::uint32_t full_lanes(std::uint32_t j, std::uint32_t row_width) const;
  std::uint32_t full_lanes(std::uint32_t j) const { return full_lanes(j, width); }
  std::uint32_t tail() const { return common_width() % vec; }  // the lone elements at the end
  std::uint32_t tail_chunk() const { return common_width() / vec / threads; }
  // The lone elements as the tail lane moves them: pieces of 4, 2 and 1 elements, each as
  // aligned as its size within the vector they start (fewer registers than one at a time).
  struct TailPiece {
    std::uint32_t offset, count;
  };
  std::vector<TailPiece> tail_pieces() const;
};

// Per-thread predicates of the chunks that not every lane loads whole, made once per kernel.
class RowLanes {
 public:
  // `short_row`: true in the CTAs whose row ends at map.short_width (required with one).
  RowLanes(Kernel& k, const RowMap& m, Reg<U32> lane, std::optional<Pred> short_row = {});
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
  // Per chunk (nullopt where complete): the lane loads its whole vector; the lane holds the
  // row's lone end elements (tail_chunk() only); either (the tail's elements' validity).
  std::vector<std::optional<Pred>> full_, tail_, any_;
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
  std::optional<Pred> tail(std::uint32_t j) const;  // the lone elements; only in the tail chunk

 private:
  const RowLanes* lanes_;
  std::optional<Pred> row_ok_;
  std::vector<std::optional<Pred>> vector_, tail_;  // per chunk, with row_ok
};

// `v` (chunk j's values) with the elements past the width set to `fill`: the identity of a
// reduction other than a sum (masked loads yield zeros there).
Values mask_past_width(Kernel& k, const RowLanes& lanes, std::uint32_t j, Values v, float fill);

// Masked loads and stores of chunk j at a thread's row pointer (row start + lane * V).
struct ChunkLoad {
  std::optional<Raw> vector;
  std::vector<Raw> tail;  // one a piece of RowMap::tail_pieces()
};
ChunkLoad issue_chunk(Kernel& k, const RowMasks& m, GlobalDPtr thread_row, std::uint32_t j,
                      MemHints h);
Values decode_chunk(Kernel& k, const RowMasks& m, std::uint32_t j, const ChunkLoad& c);
// issue_chunk then decode_chunk: zeros past the width.
Values load_chunk(Kernel& k, const RowMasks& m, GlobalDPtr thread_row, std::uint32_t j,
                  MemHints h = kNoHints);
// The line holding chunk j's first element into `level`, for lanes that hold any of its elements.
void prefetch_chunk(Kernel& k, const RowMasks& m, GlobalDPtr thread_row, std::uint32_t j,
                    PrefetchLevel level);
// Stores in thread_row's dtype, rounding to nearest even.
void store_chunk(Kernel& k, const RowMasks& m, GlobalDPtr thread_row, std::uint32_t j,
                 const Values& v, MemHints h = kNoHints);

}  // namespace ptxdsl
