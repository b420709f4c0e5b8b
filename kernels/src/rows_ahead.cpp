#include "rows_ahead.hpp"

namespace ptxdsl::kernels::detail {
namespace {

// Lookahead::NextRow: each iteration fetches the next row; the tiles' cp.async copies (staged
// chunks) of a row are one group, committed after the caller's own loads ahead.
class NextRow final : public RowsAhead {
 public:
  explicit NextRow(Walk walk) : RowsAhead(std::move(walk)) {
    for (const RowTile* tile : walk_.tiles) copies_ = copies_ || tile->copies();
  }
  // The tiles start at the first row: its chunks load into the current registers and buffers.
  void start(Kernel& k, Reg<U32>, Reg<U32>, const RowMasks& first) override {
    for (RowTile* tile : walk_.tiles) tile->fetch(k, first, tile->row());
    if (copies_) k.cp_async_commit();
  }
  void issue(Kernel& k, Reg<U32> g, std::optional<std::pair<Reg<U32>, Pred>> next) override {
    if (!next) {
      const Reg<U32> row = walk_.groups.row(group_ahead(k, g, 1));
      next.emplace(row, k.setp(Cmp::Lt, row, walk_.groups.batch));
    }
    fetch(k, next->first, RowMasks(k, walk_.lanes, next->second));
  }
  void await_current(Kernel& k) const override {
    if (!copies_) return;
    k.cp_async_commit();
    k.cp_async_wait(1);  // this row's copies have landed
  }
  void advance(Kernel& k) override {
    for (RowTile* tile : walk_.tiles) tile->advance(k);
  }

 private:
  bool copies_ = false;
};

// Lookahead::Ring: `rows` rows in flight, each one cp.async group; a row leaves the ring for the
// registers once its group has landed.
class Ring final : public RowsAhead {
 public:
  Ring(Walk walk, std::uint32_t rows) : RowsAhead(std::move(walk)), rows_(rows) {}
  void start(Kernel& k, Reg<U32> first_group, Reg<U32> first_row, const RowMasks& first) override {
    fill(k, first_row, first);
    Reg<U32> group = first_group;
    for (std::uint32_t r = 1; r < rows_; ++r) {
      group = k.add(group, walk_.grid);
      const Reg<U32> row = walk_.groups.row(group);
      fill(k, row, masks_ahead(k, row));
    }
    take(k);
  }
  // The row `rows` groups on into the ring (the ones before it are there or on their way).
  void issue(Kernel& k, Reg<U32> g, std::optional<std::pair<Reg<U32>, Pred>>) override {
    const Reg<U32> last = walk_.groups.row(group_ahead(k, g, rows_));
    fill(k, last, masks_ahead(k, last));
  }
  void await_current(Kernel&) const override {}
  void advance(Kernel& k) override { take(k); }

 private:
  // Every tile's register chunks of `row` into the ring's next buffer, as one cp.async group.
  void fill(Kernel& k, Reg<U32> row, const RowMasks& masks) const {
    fetch(k, row, masks);
    k.cp_async_commit();
  }
  // The oldest row in the ring, landed, into the registers.
  void take(Kernel& k) const {
    k.cp_async_wait(rows_ - 1);
    for (RowTile* tile : walk_.tiles) tile->advance(k);
  }
  std::uint32_t rows_;
};

}  // namespace

std::unique_ptr<RowsAhead> RowsAhead::make(const Plan& plan, const RowLanes& lanes,
                                           const RowGroups& groups, Reg<U32> grid,
                                           std::vector<RowTile*> tiles,
                                           std::function<GlobalDPtr(std::size_t, Reg<U32>)> row_at,
                                           const RowTickets* tickets) {
  Walk walk{lanes, groups, grid, std::move(tiles), std::move(row_at), tickets};
  switch (plan.lookahead) {
    case Lookahead::None:
      return nullptr;
    case Lookahead::NextRow:
      return std::make_unique<NextRow>(std::move(walk));
    case Lookahead::Ring:
      return std::make_unique<Ring>(std::move(walk), plan.ring_rows);
  }
  return nullptr;
}

Reg<U32> RowsAhead::group_ahead(Kernel& k, Reg<U32> g, std::uint32_t i) const {
  if (walk_.tickets != nullptr) return walk_.tickets->ahead(i);
  if (i == 1) return k.add(g, walk_.grid);
  return k.add(g, i == 2 ? k.add(walk_.grid, walk_.grid) : k.mul(walk_.grid, i));
}

void RowsAhead::fetch(Kernel& k, Reg<U32> row, const RowMasks& masks) const {
  for (std::size_t t = 0; t < walk_.tiles.size(); ++t) {
    walk_.tiles[t]->fetch(k, masks, walk_.row_at(t, row));
  }
}

RowMasks RowsAhead::masks_ahead(Kernel& k, Reg<U32> row) const {
  return RowMasks(k, walk_.lanes, k.setp(Cmp::Lt, row, walk_.groups.batch));
}

}  // namespace ptxdsl::kernels::detail
