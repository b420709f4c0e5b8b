#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

// Host-side work over the rows of a batch on every core (inputs, float64 references).
namespace ptxdsl::kernels {

struct RowBlock {
  std::uint32_t first = 0;
  std::uint32_t rows = 0;
};

// The batch in consecutive blocks of rows: one a core (16 at most), and no more than one a MiB of
// elements (`row_elements` a row), so that a small batch stays on one thread.
std::vector<RowBlock> row_blocks(std::uint32_t batch, std::uint64_t row_elements);

// Runs f(block index, first row, rows) for every block, each on a thread of its own (on this one
// where there is a single block); rethrows the first block's error once all have ended.
void for_row_blocks(const std::vector<RowBlock>& blocks,
                    const std::function<void(std::size_t, std::uint32_t, std::uint32_t)>& f);

}  // namespace ptxdsl::kernels
