#pragma once

#include <cstdint>
#include <vector>

#include "ptxdsl/dsl/blocks/element_io.hpp"
#include "ptxdsl/dsl/blocks/reduce_op.hpp"
#include "ptxdsl/dsl/blocks/row_map.hpp"

// One row a CTA, the simplest layout of a row kernel (softmax, a norm): the block is the row
// map's threads, %ctaid.x is the row, and each thread holds its chunks of the row in registers.
namespace ptxdsl {

class RowPerCta {
 public:
  // Requires `map.threads` threads (`.reqntid`), reads %tid.x and %ctaid.x, and makes the lanes'
  // masks and a reducer over the block (sized for `max_values` values a call).
  RowPerCta(Kernel& k, const RowMap& map, std::uint32_t max_values = 4);
  RowPerCta(const RowPerCta&) = delete;  // masks_ points into lanes_
  RowPerCta& operator=(const RowPerCta&) = delete;

  const RowMap& map() const { return lanes_.map(); }
  Reg<U32> tid() const { return tid_; }
  Reg<U32> row() const { return row_; }
  const RowLanes& lanes() const { return lanes_; }
  const RowMasks& masks() const { return masks_; }
  Reducer& reducer() { return reducer_; }

  // This thread's first element of this CTA's row of `p` (rows `map().width` elements apart, or
  // as `layout` says).
  GlobalDPtr thread_row(Kernel& k, GlobalDPtr p, const RowLayout& layout = {}) const;
  // Every chunk of this thread's slice of the row, as f32 (zeros past the width); and back. With
  // a layout, the row of a tensor whose rows are wider or start further in.
  std::vector<Values> load(Kernel& k, GlobalDPtr p, MemHints h = kNc) const;
  std::vector<Values> load(Kernel& k, GlobalDPtr p, const RowLayout& layout,
                           MemHints h = kNc) const;
  void store(Kernel& k, GlobalDPtr p, const std::vector<Values>& chunks,
             MemHints h = kNoHints) const;
  void store(Kernel& k, GlobalDPtr p, const RowLayout& layout, const std::vector<Values>& chunks,
             MemHints h = kNoHints) const;
  // op over every element of the row in `chunks` (elements past the width count as op's
  // identity), the result in every thread.
  Reg<F32> reduce(Kernel& k, const std::vector<Values>& chunks, const Reduction& op);

 private:
  Reg<U32> tid_;
  Reg<U32> row_;
  RowLanes lanes_;
  RowMasks masks_;
  Reducer reducer_;
};

}  // namespace ptxdsl
