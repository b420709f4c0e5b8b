// The backward's second step: dw (and db) = the column sums of the partial rows, in a fixed order
// so that every run gives the same bits. A CTA takes 32·V columns, V a thread (one vector load a
// partial row); its warps ("slices") sum rows slice, slice + S, slice + 2S, ... in order, then
// slice 0 adds the S slice sums in slice order.
#include "builders.hpp"
#include "element_io.hpp"

namespace ptxdsl::kernels::detail {

void store_slice_sums(Kernel& k, const SliceSums& s, const std::vector<GlobalDPtr>& outs,
                      Reg<U32> column, Pred column_ok, DType dtype) {
  // [tensor][slice][the slice's threads][per_thread]: a slice's columns are contiguous.
  const std::uint32_t per = s.per_thread;
  const std::int64_t tensor_floats = static_cast<std::int64_t>(s.slices) * s.threads * per;
  const SharedPtr<F32> mine = k.index(s.table, per == 1 ? s.tid : k.mul(s.tid, per));
  const auto write = [&] {
    for (std::size_t a = 0; a < s.sums.size(); ++a) {
      for (std::uint32_t e = 0; e < per; ++e) {
        k.st(mine + static_cast<std::int64_t>(a) * tensor_floats + e, s.sums[a][e]);
      }
    }
  };
  if (s.holds) {
    k.predicated(*s.holds, write);
  } else {
    write();
  }
  k.bar_sync(0);
  Pred adds = k.and_(column_ok, k.setp(Cmp::Eq, s.slice, 0u));
  if (s.holds) adds = k.and_(adds, *s.holds);
  k.if_(adds, [&] {
    for (std::size_t a = 0; a < s.sums.size(); ++a) {
      std::vector<Reg<F32>> totals;
      for (std::uint32_t e = 0; e < per; ++e) {
        const SharedPtr<F32> first = mine + static_cast<std::int64_t>(a) * tensor_floats + e;
        Reg<F32> total = k.ld(first);
        for (std::uint32_t slice = 1; slice < s.slices; ++slice) {
          total = k.add(total, k.ld(first + static_cast<std::int64_t>(slice) * s.threads * per));
        }
        totals.push_back(total);
      }
      store_raw(k, at(k, outs[a], column), encode(k, totals, element_type(dtype)), std::nullopt,
                kNoHints);
    }
  });
}

LaunchStep build_column_reduce(Module& m, const NormSpec& spec, const Plan& plan) {
  const bool ln = has_bias(spec);  // db beside dw
  Kernel& k = m.kernel(entry_name(spec, ln ? "dwdb" : "dw"));
  const std::uint32_t C = plan.reduce_columns;
  const std::uint32_t S = plan.reduce_slices;
  const std::uint32_t unroll = plan.reduce_unroll;
  const std::uint32_t V = plan.reduce_vector;
  k.require_threads(C * S);

  std::vector<GlobalDPtr> partials{param_dptr(k, NormArg::PartialDw, DType::F32)};
  if (ln) partials.push_back(param_dptr(k, NormArg::PartialDb, DType::F32));
  std::vector<GlobalDPtr> outs{param_dptr(k, NormArg::Dw, spec.weight_dtype)};
  if (ln) outs.push_back(param_dptr(k, NormArg::Db, spec.weight_dtype));
  const Reg<U32> rows = k.param<U32>(arg_name(NormArg::PartialRows));
  // Launched while the row step finishes: its partial rows are complete and visible from here on.
  if (plan.overlap_reduce) k.griddep_wait();

  const Reg<U32> tid = k.tid_x();
  const Reg<U32> lane = k.and_(tid, C - 1);
  const Reg<U32> slice = k.shr(tid, 5u);
  // Positions in the partial rows (a thread's V of them consecutive, and so their columns); the
  // columns they hold differ where the row step wrote them by whole warps.
  const Reg<U32> first = k.mad(k.ctaid_x(), C, lane);
  const Reg<U32> position = V == 1 ? first : k.mul(first, V);
  const Pred column_ok = k.setp(Cmp::Lt, position, spec.width);
  const std::uint32_t pitch = partial_pitch(spec.width);

  std::vector<GlobalDPtr> cols;
  std::vector<std::vector<Reg<F32>>> sums;
  for (const GlobalDPtr& p : partials) {
    cols.push_back(at(k, p, position));
    std::vector<Reg<F32>> zeros;
    for (std::uint32_t e = 0; e < V; ++e) zeros.push_back(k.mov<F32>(0.0f));
    sums.push_back(std::move(zeros));
  }
  k.for_range(slice, rows, S * unroll, [&](Reg<U32> r) {
    std::vector<Pred> ok;
    for (std::uint32_t u = 0; u < unroll; ++u) {
      ok.push_back(u == 0 ? column_ok : k.and_(column_ok, k.setp(Cmp::Lt, k.add(r, u * S), rows)));
    }
    for (std::size_t a = 0; a < cols.size(); ++a) {
      const GlobalDPtr base = row_of(k, cols[a], r, pitch);
      std::vector<Values> v;
      for (std::uint32_t u = 0; u < unroll; ++u) {
        const GlobalDPtr at_row = base + static_cast<std::int64_t>(u) * S * pitch;
        v.push_back(decode(k, load_raw(k, at_row, V, ok[u], kNcNoAllocate)));
      }
      for (const Values& row : v) {
        for (std::uint32_t e = 0; e < V; ++e) k.add(sums[a][e], sums[a][e], row[e]);
      }
    }
  });

  const SharedPtr<F32> table =
      k.shared_array<F32>("slices", static_cast<std::uint32_t>(cols.size()) * S * C * V);
  const Reg<U32> column = partial_column(k, position, warp_blocked_columns(plan), spec.width);
  store_slice_sums(k, SliceSums{table, tid, slice, C, S, V, sums, std::nullopt}, outs, column,
                   column_ok, spec.weight_dtype);
  k.finalize();

  LaunchStep step;
  step.contract = k.contract();
  step.grid.kind = GridRule::Kind::Columns;
  step.grid.columns_per_cta = plan.reduce_columns_per_cta();
  return step;
}

}  // namespace ptxdsl::kernels::detail
