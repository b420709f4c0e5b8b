#include "ptxdsl/kernels/row_blocks.hpp"

#include <algorithm>
#include <exception>
#include <thread>

namespace ptxdsl::kernels {

std::vector<RowBlock> row_blocks(std::uint32_t batch, std::uint64_t row_elements) {
  const std::uint64_t elements = std::uint64_t{batch} * row_elements;
  const unsigned cores = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  // At least one block (an empty batch has no rows to split; std::clamp needs lo <= hi).
  const std::uint64_t most = std::max<std::uint64_t>(1, std::min<std::uint64_t>(cores, batch));
  const auto n = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(elements >> 20, 1, most));
  std::vector<RowBlock> blocks;
  const std::uint32_t per = (batch + n - 1) / n;
  for (std::uint32_t r = 0; r < batch; r += per) blocks.push_back({r, std::min(per, batch - r)});
  return blocks;
}

void for_row_blocks(const std::vector<RowBlock>& blocks,
                    const std::function<void(std::size_t, std::uint32_t, std::uint32_t)>& f) {
  if (blocks.size() == 1) {
    f(0, blocks[0].first, blocks[0].rows);
    return;
  }
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(blocks.size());
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    threads.emplace_back([&, i] {
      try {
        f(i, blocks[i].first, blocks[i].rows);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace ptxdsl::kernels
