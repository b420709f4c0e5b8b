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

// Where the plan splits rows over a cluster of plan.cluster_ctas CTAs (nothing for one CTA a row):
// the kernel's cluster attribute and this CTA's %cluster_ctarank, and whether its slice is the
// shorter last one (RowLanes masks that one's row at plan.last_slice_width).
struct SliceRank {
  std::optional<Reg<U32>> rank;
  std::optional<Pred> short_slice;
};

inline SliceRank slice_rank(Kernel& k, const Plan& plan) {
  SliceRank r;
  if (plan.cluster_ctas == 1) return r;
  k.require_cluster({plan.cluster_ctas, 1, 1});
  r.rank = k.cluster_ctarank();
  if (plan.last_slice_width > 0) r.short_slice = k.setp(Cmp::Eq, *r.rank, plan.cluster_ctas - 1);
  return r;
}

// A row split over a cluster: this CTA's rank, the slots its row reductions of up to
// `reduced_values` values exchange through (st.async onto transaction barriers where the target
// has them), the arrival its peers wait for before they write its shared memory (`started`, made
// after the slots' barriers are initialized and awaited before the first reduction), and the
// thread's first column of the row in global memory: its slice's, rank·width + its first element.
struct RowSlice {
  std::optional<Reg<U32>> rank;
  std::optional<ClusterSlots> slots;
  std::optional<ClusterStart> started;
  Reg<U32> first_column;
};

inline RowSlice row_slice(Kernel& k, const NormSpec& spec, const Plan& plan, const CtaLayout& cta,
                          const RowLanes& lanes, std::uint32_t reduced_values,
                          const SliceRank& rank) {
  RowSlice s;
  s.rank = rank.rank;
  if (s.rank) {
    s.slots.emplace(k, plan.cluster_ctas, reduced_values, cta.tid,
                    ClusterSlots::best_for(spec.arch, spec.ptx_version), "cluster_sums");
    s.started.emplace(k, spec.ptx_version >= PtxVersion{8, 0} ? MemSem::Relaxed : MemSem::None);
  }
  s.first_column =
      s.rank ? k.mad(*s.rank, plan.width, lanes.first_element()) : lanes.first_element();
  return s;
}

// Row group g of a CTA holds rows g·R + slot (R = rows a CTA). With R > 1 the last group can run
// past the batch: those rows are masked, never returned early (group reductions need every
// thread). Written once for the forward and the persistent row walks.
//
// Persistent CTAs walk g = ctaid, ctaid + grid, ... < count() (row_order fixed), or take g from
// RowTickets (row_order tickets). Past count() a g is a row past the batch, masked like any other.
struct RowGroups {
  Kernel& k;
  const Plan& plan;
  Reg<U32> slot;
  Reg<U32> batch;
  Reg<U32> row(Reg<U32> g) const {
    return plan.rows_per_cta == 1 ? g : k.mad(g, plan.rows_per_cta, slot);
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
