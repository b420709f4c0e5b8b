#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "cta_layout.hpp"
#include "row_tickets.hpp"
#include "row_tile.hpp"

// Persistent CTAs walk row groups g = first, first + grid, ... with the rows ahead already in
// flight: prefetch_rows 1 loads the next row's register chunks into registers (and copies its
// staged chunks by cp.async into a second buffer), prefetch_rows 2 to 4 copy the next two to four
// rows by cp.async into a ring of as many shared buffers. Which cp.async groups are committed and
// waited for, and in which order, for every tile walking the same rows (x; x and dy): written once
// here.
namespace ptxdsl::kernels::detail {

class RowsAhead {
 public:
  // `row_at(t, row)`: tile t's address for this thread in `row`.
  // `tickets`: the CTA takes its groups from a counter (row_order tickets), which says the ones
  // ahead.
  RowsAhead(const Plan& plan, const RowLanes& lanes, const RowGroups& groups, Reg<U32> grid,
            std::vector<RowTile*> tiles, std::function<GlobalDPtr(std::size_t, Reg<U32>)> row_at,
            const RowTickets* tickets = nullptr);
  // The group i ahead of g (i ≤ the rows in flight).
  Reg<U32> group_ahead(Kernel& k, Reg<U32> g, std::uint32_t i) const;

  // Before the loop: the first row group's row `first_row` (masked by `first`) on its way; with
  // the ring the second group's too, and the first one moved into registers.
  void start(Kernel& k, Reg<U32> first_group, Reg<U32> first_row, const RowMasks& first);
  // At the top of iteration g: the rows ahead issued. `next` is the next group's row and its
  // predicate where the caller made them (to load its own per-row values alongside).
  void issue(Kernel& k, Reg<U32> g, std::optional<std::pair<Reg<U32>, Pred>> next = std::nullopt);
  // After issue (and the caller's own loads ahead): the current row's staged copies have landed.
  void await_current(Kernel& k) const;
  // At the bottom of the iteration: the next row becomes the current one.
  void advance(Kernel& k);

 private:
  const Plan& plan_;
  const RowLanes& lanes_;
  const RowGroups& groups_;
  Reg<U32> grid_;
  std::vector<RowTile*> tiles_;
  std::function<GlobalDPtr(std::size_t, Reg<U32>)> row_at_;
  const RowTickets* tickets_;
  std::vector<std::vector<ChunkLoad>> ahead_;  // per tile: the next row's register loads

  // Every tile's register chunks of `row` into the ring's next buffer, as one cp.async group.
  void fill_ring(Kernel& k, Reg<U32> row, const RowMasks& masks);
};

}  // namespace ptxdsl::kernels::detail
