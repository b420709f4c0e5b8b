#pragma once

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "builders.hpp"
#include "chunk_loop.hpp"
#include "cta_layout.hpp"
#include "row_map.hpp"

// How the backward sums dw (and db) over the rows, one type a Plan::weight_grads (none where the
// backward writes dx alone): partial rows
// (partial_rows.cpp) add each row's terms into accumulators that a CTA writes out as one f32
// partial row, summed by the column-reduce launch; the one launch (column_grads.cpp) adds nothing
// by rows and sums by columns after them. build_backward calls them in the order declared here.
namespace ptxdsl::kernels::detail {

// The backward's pieces that the sums by rows read, once the kernel has laid them out.
struct BackwardRows {
  const CtaLayout& cta;
  const RowLanes& lanes;
  const RowMasks& columns;                // every row's columns
  Reg<U32> cta_id;                        // the partial row: the CTA's, or its cluster's
  std::optional<SharedPtr<B32>> dynamic;  // the dynamic shared memory, laid out as `layout`
  const SharedLayout& layout;
  Reg<U32> first_column;  // this thread's first column of the row (its slice's, in a cluster)
};

// The backward's row inputs, for sums that read the rows again.
struct RowInputs {
  GlobalDPtr x, dy;
  std::optional<GlobalDPtr> mean;  // layer norm
  GlobalDPtr rstd;
  Reg<U32> batch, stride;
};

class WeightGradSums {
 public:
  static std::unique_ptr<WeightGradSums> make(const NormSpec& spec, const Plan& plan);
  virtual ~WeightGradSums() = default;
  // The kernel's entry name adds this (entry_name's `step`).
  virtual std::string_view entry_step() const = 0;
  // The dw (and db) parameters, in the contract's place (after dx).
  virtual void declare(Kernel& k) = 0;
  // Before the rows: the sums by rows at zero.
  virtual void start(Kernel& k, const BackwardRows& rows) = 0;
  // The first pass's for_each_chunk keys, from those of the rows' chunks.
  virtual std::vector<int> pass_keys(std::vector<int> keys) const = 0;
  // Chunk j of a row in the first pass: dw += dy·x̂, db += dy.
  virtual void add(Kernel& k, std::uint32_t j, const Values& dy, const Values& xhat,
                   std::optional<Reg<U32>> shift) = 0;
  // After the rows: dw and db, or the CTA's partial rows of them.
  virtual void finish(Kernel& k, const RowInputs& in, ChunkFence fence) = 0;
  // The launch's grid, beyond the persistent walk of the rows.
  virtual void size_grid(GridRule& grid) const = 0;
};

// The types, for WeightGradSums::make.
std::unique_ptr<WeightGradSums> partial_row_sums(const NormSpec& spec, const Plan& plan);
std::unique_ptr<WeightGradSums> column_sums(const NormSpec& spec, const Plan& plan);

}  // namespace ptxdsl::kernels::detail
