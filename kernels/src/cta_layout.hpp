#pragma once

#include <bit>
#include <cstdint>
#include <optional>

#include "heuristics.hpp"
#include "ptxdsl/dsl.hpp"

// How a CTA's threads split into row groups: thread tid works on row slot tid / T as lane tid % T.
namespace ptxdsl::kernels::detail {

// x / c and x % c for a build-time c: shifts and masks for powers of two.
inline Reg<U32> div_by(Kernel& k, Reg<U32> x, std::uint32_t c) {
  if (c == 1) return x;
  if (std::has_single_bit(c)) return k.shr(x, static_cast<std::uint32_t>(std::countr_zero(c)));
  return k.div(x, c);
}
inline Reg<U32> rem_by(Kernel& k, Reg<U32> x, std::uint32_t c) {
  if (std::has_single_bit(c)) return k.and_(x, c - 1);
  return k.rem(x, c);
}

struct CtaLayout {
  Reg<U32> tid;
  Reg<U32> lane;  // within the row group
  Reg<U32> slot;  // row group within the CTA (0 when one row a CTA)
};

inline CtaLayout cta_layout(Kernel& k, const Plan& p) {
  CtaLayout c;
  c.tid = k.tid_x();
  c.lane = p.rows_per_cta == 1 ? c.tid : rem_by(k, c.tid, p.threads_per_row);
  c.slot = p.rows_per_cta == 1 ? k.mov<U32>(0u) : div_by(k, c.tid, p.threads_per_row);
  return c;
}

// Row group g of a CTA holds rows g·R + slot (R = rows a CTA). With R > 1 the last group can run
// past the batch: those rows are masked, never returned early (group reductions need every
// thread). Written once for the forward and the persistent row walks.
//
// Persistent CTAs walk g = ctaid, ctaid + grid, ... < count(). By default (row_order 0) that g is
// the row group itself, so the CTAs work on neighbouring groups at once; with `blocked(grid)`
// (row_order 1) CTA c takes a run of neighbouring groups instead, as many as it would have taken:
// count = grid·q + r, CTA c starts at c·q + min(c, r), and the i-th g of CTA c is its start + i.
// With `rotated(grid)` (row_order 4) round j = g / grid of the walk is still the groups
// [j·grid, (j + 1)·grid), but CTA c takes the one at (c + j·s) % grid of them, s = kRotation %
// grid: its groups lie at positions that change round to round, not at c in each. The last round,
// when not full, and g past count() stay themselves.
// Past count() a g stays itself (a row past the batch, masked like any other).
struct RowGroups {
  Kernel& k;
  const Plan& plan;
  Reg<U32> slot;
  Reg<U32> batch;
  struct Runs {
    Reg<U32> grid, count, each, longer;  // grid, count(), q and r
  };
  std::optional<Runs> runs = std::nullopt;
  struct Rotation {
    Reg<U32> grid, full_rounds, step;
  };
  std::optional<Rotation> rotation = std::nullopt;
  // The position's step a round: about the golden section of a 132-CTA grid, so that a CTA's
  // positions spread over the round instead of creeping.
  static constexpr std::uint32_t kRotation = 81;

  void blocked(Reg<U32> grid) {
    const Reg<U32> n = count();
    runs = Runs{grid, n, k.div(n, grid), k.rem(n, grid)};
  }
  void rotated(Reg<U32> grid) {
    rotation = Rotation{grid, k.div(count(), grid), k.rem(k.mov<U32>(kRotation), grid)};
  }
  Reg<U32> group(Reg<U32> g) const {
    if (rotation) {
      const Reg<U32> round = k.div(g, rotation->grid);
      const Reg<U32> position = k.sub(g, k.mul(round, rotation->grid));
      const Reg<U32> moved = k.rem(k.mad(round, rotation->step, position), rotation->grid);
      return k.selp<U32>(k.mad(round, rotation->grid, moved), g,
                         k.setp(Cmp::Lt, round, rotation->full_rounds));
    }
    if (!runs) return g;
    const Reg<U32> cta = k.rem(g, runs->grid);
    const Reg<U32> start = k.mad(cta, runs->each, k.min(cta, runs->longer));
    const Reg<U32> run = k.add(start, k.div(g, runs->grid));
    return k.selp<U32>(run, g, k.setp(Cmp::Lt, g, runs->count));
  }
  Reg<U32> row(Reg<U32> g) const {
    const Reg<U32> at = group(g);
    return plan.rows_per_cta == 1 ? at : k.mad(at, plan.rows_per_cta, slot);
  }
  // The row is inside the batch (nullopt: always, one row a CTA and no group past the batch).
  std::optional<Pred> row_ok(Reg<U32> row) const {
    if (plan.rows_per_cta == 1) return std::nullopt;
    return k.setp(Cmp::Lt, row, batch);
  }
  Reg<U32> count() const {
    const std::uint32_t R = plan.rows_per_cta;
    return R == 1 ? batch : div_by(k, k.add(batch, R - 1), R);
  }
};

}  // namespace ptxdsl::kernels::detail
