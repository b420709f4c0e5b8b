#pragma once

#include "element_io.hpp"
#include "heuristics.hpp"

// The plan's row tile as the DSL's row map (<ptxdsl/dsl/blocks/row_map.hpp>): its width, vector,
// threads per row and chunks, and a cluster's shorter last slice.
namespace ptxdsl::kernels::detail {

inline RowMap row_map(const Plan& p) {
  return {p.width, p.vec, p.threads_per_row, p.chunks, p.last_slice_width};
}

}  // namespace ptxdsl::kernels::detail
