#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "cta_layout.hpp"
#include "row_tickets.hpp"
#include "row_tile.hpp"

// Persistent CTAs walk row groups g = first, first + grid, ... with the rows ahead already in
// flight, one schedule a Lookahead: the next row (its register chunks into a second set of
// registers, its staged chunks, with Staging::Async, copied by cp.async into a second buffer), or
// a ring of 2 to 4 rows copied by cp.async. Which rows the tiles fetch (RowTile::fetch), and which
// cp.async groups are committed and waited for, in which order, for every tile walking the same
// rows (x; x and dy): written once here.
namespace ptxdsl::kernels::detail {

class RowsAhead {
 public:
  // `row_at(t, row)`: tile t's address for this thread in `row`.
  // `tickets`: the CTA takes its groups from a counter (row_order tickets), which says the ones
  // ahead. nullptr where the plan loads no row ahead (Lookahead::None).
  static std::unique_ptr<RowsAhead> make(const Plan& plan, const RowLanes& lanes,
                                         const RowGroups& groups, Reg<U32> grid,
                                         std::vector<RowTile*> tiles,
                                         std::function<GlobalDPtr(std::size_t, Reg<U32>)> row_at,
                                         const RowTickets* tickets = nullptr);
  virtual ~RowsAhead() = default;
  // The group i ahead of g (i ≤ the rows in flight).
  Reg<U32> group_ahead(Kernel& k, Reg<U32> g, std::uint32_t i) const;

  // Before the loop: the first row group's row `first_row` (masked by `first`) on its way; with
  // the ring the next groups' too, and the first one moved into registers.
  virtual void start(Kernel& k, Reg<U32> first_group, Reg<U32> first_row,
                     const RowMasks& first) = 0;
  // At the top of iteration g: the rows ahead issued. `next` is the next group's row and its
  // predicate where the caller made them (to load its own per-row values alongside).
  virtual void issue(Kernel& k, Reg<U32> g,
                     std::optional<std::pair<Reg<U32>, Pred>> next = std::nullopt) = 0;
  // After issue (and the caller's own loads ahead): the current row's copies have landed.
  virtual void await_current(Kernel& k) const = 0;
  // At the bottom of the iteration: the next row becomes the current one.
  virtual void advance(Kernel& k) = 0;

 protected:
  struct Walk {
    const RowLanes& lanes;
    const RowGroups& groups;
    Reg<U32> grid;
    std::vector<RowTile*> tiles;
    std::function<GlobalDPtr(std::size_t, Reg<U32>)> row_at;
    const RowTickets* tickets;
  };
  explicit RowsAhead(Walk walk) : walk_(std::move(walk)) {}
  // Every tile's chunks of `row` fetched (masked by `masks`).
  void fetch(Kernel& k, Reg<U32> row, const RowMasks& masks) const;
  // The masks of a row ahead: rows past the batch load nothing, and the loop ends before they
  // would be used.
  RowMasks masks_ahead(Kernel& k, Reg<U32> row) const;
  Walk walk_;
};

}  // namespace ptxdsl::kernels::detail
