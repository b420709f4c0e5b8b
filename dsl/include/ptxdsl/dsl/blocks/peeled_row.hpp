#pragma once

#include <cstdint>
#include <vector>

#include "ptxdsl/dsl/blocks/element_io.hpp"
#include "ptxdsl/dsl/blocks/reduce_op.hpp"
#include "ptxdsl/dsl/blocks/row_map.hpp"

// One row a CTA for rows whose starts are not aligned to a vector (an odd width or stride), where
// RowMap::fit would read every row one element at a time: each row's first elements up to the
// vector alignment (the head) one at a time, then whole 16-byte vectors, then the last elements
// (the tail) one at a time. Where the head ends depends on the row, so the split is computed at
// run time from the row's first element; the allocation must be 16-byte aligned (the driver's
// are).
namespace ptxdsl {

class PeeledRow {
 public:
  // Requires `threads` threads (a power of two in [32, 1024]; `.reqntid`), reads %tid.x and
  // %ctaid.x (the row), and computes this thread's share of the row.
  PeeledRow(Kernel& k, std::uint32_t width, ScalarType dtype, std::uint32_t threads = 256,
            const RowLayout& layout = {}, std::uint32_t max_values = 4);
  PeeledRow(const PeeledRow&) = delete;
  PeeledRow& operator=(const PeeledRow&) = delete;

  std::uint32_t vec() const { return vec_; }  // elements a vector: 16 bytes
  std::uint32_t threads() const { return threads_; }
  Reg<U32> tid() const { return tid_; }
  Reg<U32> row() const { return row_; }

  // Chunk 0 is this thread's one element of the head or the tail (threads past them: zero), then
  // one chunk of `vec()` elements a vector round (zeros past the row). Store writes them back.
  std::vector<Values> load(Kernel& k, GlobalDPtr p, MemHints h = kNc) const;
  void store(Kernel& k, GlobalDPtr p, const std::vector<Values>& chunks,
             MemHints h = kNoHints) const;
  // op over every element of the row in `chunks` (what lies past it counts as op's identity), the
  // result in every thread.
  Reg<F32> reduce(Kernel& k, const std::vector<Values>& chunks, const Reduction& op);

 private:
  // The chunk's pointer in the row of `p`, and the predicate of its elements being in the row.
  GlobalDPtr chunk_ptr(Kernel& k, GlobalDPtr p, std::uint32_t j) const;

  std::uint32_t width_, vec_, threads_, stride_, offset_;
  Reg<U32> tid_, row_;
  Reg<U32> edge_index_;    // this thread's head or tail element
  Reg<U32> first_vector_;  // the element its first vector starts at
  std::vector<Pred> ok_;   // per chunk: it holds row elements
  Reducer reducer_;
};

}  // namespace ptxdsl
