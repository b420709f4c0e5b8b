#include "rows_ahead.hpp"

namespace ptxdsl::kernels::detail {

RowsAhead::RowsAhead(const Plan& plan, const RowLanes& lanes, const RowGroups& groups,
                     Reg<U32> grid, std::vector<RowTile*> tiles,
                     std::function<GlobalDPtr(std::size_t, Reg<U32>)> row_at,
                     const RowTickets* tickets)
    : plan_(plan),
      lanes_(lanes),
      groups_(groups),
      grid_(grid),
      tiles_(std::move(tiles)),
      row_at_(std::move(row_at)),
      tickets_(tickets),
      ahead_(tiles_.size()) {}

Reg<U32> RowsAhead::group_ahead(Kernel& k, Reg<U32> g, std::uint32_t i) const {
  if (tickets_ != nullptr) return tickets_->ahead(i);
  if (i == 1) return k.add(g, grid_);
  return k.add(g, i == 2 ? k.add(grid_, grid_) : k.mul(grid_, i));
}

void RowsAhead::fill_ring(Kernel& k, Reg<U32> row, const RowMasks& masks) {
  for (std::size_t t = 0; t < tiles_.size(); ++t) tiles_[t]->ring_fill(k, masks, row_at_(t, row));
  k.cp_async_commit();
}

void RowsAhead::start(Kernel& k, Reg<U32> first_group, Reg<U32> first_row, const RowMasks& first) {
  if (plan_.ring) {
    fill_ring(k, first_row, first);
    // Rows past the batch copy nothing; the loop ends before they would be used.
    Reg<U32> group = first_group;
    for (std::uint32_t r = 1; r < plan_.ring_rows; ++r) {
      group = k.add(group, grid_);
      const Reg<U32> row = groups_.row(group);
      fill_ring(k, row, RowMasks(k, lanes_, k.setp(Cmp::Lt, row, groups_.batch)));
    }
    k.cp_async_wait(plan_.ring_rows - 1);
    for (RowTile* tile : tiles_) tile->ring_take(k);
    return;
  }
  for (RowTile* tile : tiles_) tile->preload(k, first);
  if (plan_.async_staging) k.cp_async_commit();
}

void RowsAhead::issue(Kernel& k, Reg<U32> g, std::optional<std::pair<Reg<U32>, Pred>> next) {
  if (plan_.ring) {
    // The row ring_rows groups on into the ring (the ones before it are there or on their way).
    const Reg<U32> last = groups_.row(group_ahead(k, g, plan_.ring_rows));
    fill_ring(k, last, RowMasks(k, lanes_, k.setp(Cmp::Lt, last, groups_.batch)));
    return;
  }
  if (!next) {
    const Reg<U32> row = groups_.row(group_ahead(k, g, 1));
    next.emplace(row, k.setp(Cmp::Lt, row, groups_.batch));
  }
  const RowMasks masks(k, lanes_, next->second);
  for (std::size_t t = 0; t < tiles_.size(); ++t) {
    ahead_[t] = tiles_[t]->prefetch(k, masks, row_at_(t, next->first));
  }
}

void RowsAhead::await_current(Kernel& k) const {
  if (!plan_.async_staging) return;
  k.cp_async_commit();
  k.cp_async_wait(1);  // this row's copies have landed
}

void RowsAhead::advance(Kernel& k) {
  if (plan_.ring) {
    k.cp_async_wait(plan_.ring_rows - 1);  // the next row has landed in the ring
    for (RowTile* tile : tiles_) tile->ring_take(k);
    return;
  }
  for (std::size_t t = 0; t < tiles_.size(); ++t) tiles_[t]->advance(k, ahead_[t]);
}

}  // namespace ptxdsl::kernels::detail
