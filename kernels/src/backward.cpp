// Layer norm and RMS norm backward on a persistent grid. Each CTA walks row groups g = ctaid,
// ctaid + gridDim, ...; per row it loads x and dy once (RowTiles, holding them as the plan's
// strategies say, with the rows ahead in flight by RowsAhead), reduces Σ x̂·g (and Σ g) over the
// row group, and writes dx. dw (and db) add up as the plan's WeightGradSums type says: by rows
// into per-CTA partial rows for the column reduce, or by columns after the rows, in one launch.

#include "access_hints.hpp"
#include "builders.hpp"
#include "chunk_loop.hpp"
#include "cta_layout.hpp"
#include "row_stats.hpp"
#include "rows_ahead.hpp"
#include "weight_grads.hpp"

namespace ptxdsl::kernels::detail {
namespace {

// A backward of dx alone: nothing to declare, add or write.
class NoWeightGrads final : public WeightGradSums {
 public:
  std::string_view entry_step() const override { return ""; }
  void declare(Kernel&) override {}
  void start(Kernel&, const BackwardRows&) override {}
  std::vector<int> pass_keys(std::vector<int> keys) const override { return keys; }
  void add(Kernel&, std::uint32_t, const Values&, const Values&, std::optional<Reg<U32>>) override {
  }
  void finish(Kernel&, const RowInputs&, ChunkFence) override {}
  void size_grid(GridRule&) const override {}
};

}  // namespace

std::unique_ptr<WeightGradSums> WeightGradSums::make(const NormSpec& spec, const Plan& plan) {
  switch (plan.weight_grads) {
    case WeightGrads::PartialRows:
      return partial_row_sums(spec, plan);
    case WeightGrads::SingleLaunch:
      return column_sums(spec, plan);
    case WeightGrads::None:
      return std::make_unique<NoWeightGrads>();
  }
  throw Error("the backward's dw/db sums: an unknown strategy");
}

LaunchStep build_backward(Module& m, const NormSpec& spec, const Plan& plan) {
  const bool ln = spec.kind == NormKind::LayerNormBwd;
  const bool ticketed = plan.row_order == RowOrder::Tickets;
  const std::unique_ptr<WeightGradSums> grad_sums = WeightGradSums::make(spec, plan);
  Kernel& k = m.kernel(entry_name(spec, grad_sums->entry_step()));
  k.require_threads(plan.block());
  k.max_registers(plan.max_registers);

  // Parameters, in the contract's order.
  const GlobalDPtr x = param_dptr(k, NormArg::X, spec.dtype);
  std::optional<GlobalDPtr> w;
  if (has_weight(spec)) w = param_dptr(k, NormArg::W, spec.weight_dtype);
  std::optional<GlobalDPtr> mean_in;
  if (ln) mean_in = param_dptr(k, NormArg::Mean, DType::F32);
  const GlobalDPtr rstd_in = param_dptr(k, NormArg::Rstd, DType::F32);
  const GlobalDPtr dy = param_dptr(k, NormArg::Dy, spec.dtype);
  // The residual add's h gradient from h's other uses: dx is h's whole gradient.
  std::optional<GlobalDPtr> dh;
  if (has_residual(spec)) dh = param_dptr(k, NormArg::Dh, residual_dtype(spec));
  const GlobalDPtr dx = param_dptr(k, NormArg::Dx, spec.dtype);
  grad_sums->declare(k);
  std::optional<GlobalPtr<U32>> row_counter;
  if (ticketed) row_counter = k.param_ptr<U32>(arg_name(NormArg::RowCounter));
  const Reg<U32> batch = k.param<U32>(arg_name(NormArg::Batch));
  const Reg<U32> stride = k.param<U32>(arg_name(NormArg::Stride));

  const CtaLayout cta = cta_layout(k, plan);
  const RowMap map = row_map(plan);
  const std::uint32_t T = plan.threads_per_row;
  const std::uint32_t R = plan.rows_per_cta;
  const SliceRank slice_of_row = slice_rank(k, plan);
  const RowLanes lanes(k, map, cta.lane, slice_of_row.short_slice);
  const RowMasks columns(k, lanes, std::nullopt);
  // A row split over a cluster (the cluster_ctas knob): CTA `rank` holds columns [rank·n, rank·n
  // + n) of each row its cluster walks, n = plan.width (the last CTA fewer where
  // plan.last_slice_width says); the clusters walk the row groups as CTAs
  // do without them, and each leaves one partial row, its CTAs writing their slices' columns.
  const std::uint32_t cluster = plan.cluster_ctas;
  if (cluster > 1 && (R != 1 || ticketed || plan.weight_grads == WeightGrads::SingleLaunch)) {
    throw Error(
        "a backward split over a cluster takes one row a CTA, a fixed row walk and partial rows");
  }
  RowSlice slice = row_slice(k, spec, plan, cta, lanes, ln ? 2 : 1, slice_of_row);
  const std::optional<Reg<U32>> rank = slice.rank;
  const Reg<U32> first_column = slice.first_column;

  // Dynamic shared memory, as the plan lays it out (SharedLayout).
  const int s = dtype_bytes(spec.dtype);
  const SharedLayout layout = plan.shared_layout(spec);
  std::optional<SharedPtr<B32>> dynamic;
  if (layout.bytes > 0) dynamic = k.shared_dynamic<B32>("stage", layout.bytes);
  const auto region = [&](std::uint32_t byte_offset) {
    return SharedPtr<F32>{dynamic->base, dynamic->offset + byte_offset};
  };
  // x's buffers, and dy's a tensor's share further on.
  TileBuffers x_buffers, dy_buffers;
  if (layout.staging.bytes > 0) {
    x_buffers.staging =
        staging_for(k, {*dynamic, element_type(spec.dtype)}, plan, cta.slot, lanes.first_element());
    dy_buffers.staging = *x_buffers.staging + layout.staged_tensor_bytes / s;
  }

  // What walks the rows: the CTA, or its cluster.
  const Reg<U32> cta_id = rank ? k.special(Special::ClusteridX) : k.ctaid_x();
  // The partial row: the walker's, or that of the cluster whose CTAs add theirs up on chip
  // (partial_cluster), each CTA still walking rows of its own.
  const std::uint32_t merging = plan.partial_cluster;
  if (merging > 1) k.require_cluster({merging, 1, 1});
  const Reg<U32> partial_id = merging > 1 ? k.special(Special::ClusteridX) : cta_id;
  grad_sums->start(k, {cta, lanes, columns, partial_id, dynamic, layout, first_column});
  std::optional<GlobalDPtr> w_col;
  if (w) w_col = at(k, *w, first_column);

  // Reduction scratch, double-buffered across iterations so no barrier is needed between them.
  const std::uint32_t reduced = ln ? 2 : 1;
  const std::uint32_t scratch_floats = group_reduce_scratch_floats(plan.block(), reduced);
  SharedPtr<F32> scratch{};
  Reg<U32> scratch_offset{};
  if (T > 32) {
    scratch = k.shared_array<F32>("red", 2 * scratch_floats);
    scratch_offset = k.mov<U32>(0u);
  }
  const float inv_width = 1.0f / static_cast<float>(spec.width);
  // Keeps ptxas from hoisting every chunk's loads to the top of a pass (stride ≥ width ≥ 1).
  const ChunkFence fence{k.setp(Cmp::Ne, stride, 0u), stride};

  const Reg<U32> grid = rank ? k.special(Special::NclusteridX) : k.nctaid_x();
  RowGroups groups{k, plan, cta.slot, batch};
  // Row groups from a counter: the current one and those whose rows are in flight are known.
  std::optional<RowTickets> tickets;
  if (ticketed) tickets.emplace(k, *row_counter, cta.tid, cta_id, grid, plan.rows_in_flight());
  const auto thread_row = [&](GlobalDPtr p, Reg<U32> row) {
    return at(k, row_of(k, p, row, stride), first_column);
  };
  // The row's mean (layer norm) and rstd: one raw f32 load each.
  const MemHints stat_loads = plan.row_nc ? kNc : kNoHints;
  const auto load_stats = [&](Reg<U32> row, std::optional<Pred> ok) {
    std::vector<Raw> stats;
    if (ln) stats.push_back(load_raw(k, at(k, *mean_in, row), 1, ok, stat_loads));
    stats.push_back(load_raw(k, at(k, rstd_in, row), 1, ok, stat_loads));
    return stats;
  };
  // The grid never exceeds the row groups, so every CTA's first group is real; except where the
  // dw/db sums give it a floor of CTAs (the one launch's tiles of columns) or the grid is whole
  // clusters of CTAs that merge their partial rows: there the first row is checked.
  const Reg<U32> first_row = groups.row(cta_id);
  // x and dy through L1 (.nc, allocating) when one CTA has the SM; several CTAs an SM thrash it,
  // and keep .L1::no_allocate.
  const AccessHints hints =
      access_hints(k, plan, plan.ctas_per_sm == 1 ? kNc : kNcNoAllocate, kStreaming, kNc);
  const GlobalDPtr x_first = thread_row(x, first_row);
  const GlobalDPtr dy_first = thread_row(dy, first_row);
  if (layout.ring.bytes > 0) {
    x_buffers.ring = ring_for(k, {region(layout.ring.offset).as<B32>(), element_type(spec.dtype)},
                              plan, cta.slot, lanes.first_element());
    dy_buffers.ring = *x_buffers.ring + layout.ring_tensor_bytes / s;
  }
  RowTile xt(k, plan, layout, x_first, x_buffers, hints.row_loads);
  RowTile dyt(k, plan, layout, dy_first, dy_buffers, hints.row_loads);
  xt.reread_with(hints.row_rereads);
  dyt.reread_with(hints.row_rereads);
  std::vector<Raw> stats;
  const std::unique_ptr<RowsAhead> ahead = RowsAhead::make(
      plan, lanes, groups, grid, {&xt, &dyt},
      [&](std::size_t t, Reg<U32> row) { return thread_row(t == 0 ? x : dy, row); },
      tickets ? &*tickets : nullptr);
  // The launch's grid: persistent CTAs, and as many more as the dw/db sums ask for.
  LaunchStep step;
  step.grid.kind = GridRule::Kind::Persistent;
  step.grid.rows_per_cta = R;
  step.grid.max_ctas = plan.sm_count * plan.ctas_per_sm;
  step.grid.min_row_groups = plan.min_row_groups_per_cta;
  step.grid.cluster_ctas = std::max(cluster, merging);
  grad_sums->size_grid(step.grid);
  if (ahead) {
    // The first row's chunks and statistics load before the loop; each iteration then loads the
    // next row's while it works on the current one.
    std::optional<Pred> ok = groups.row_ok(first_row);
    if ((step.grid.min_ctas > 0 || merging > 1) && !ok) ok = k.setp(Cmp::Lt, first_row, batch);
    ahead->start(k, cta_id, first_row, RowMasks(k, lanes, ok));
    stats = load_stats(first_row, ok);
  }

  const auto walk = [&](const std::function<void(Reg<U32>)>& body) {
    if (tickets) {
      tickets->for_each(k, groups.count(), body);
    } else {
      k.for_range(cta_id, groups.count(), grid, body);
    }
  };
  if (slice.started) slice.started->await(k);  // before the row walk, which writes peers' slots
  walk([&](Reg<U32> g) {
    if (tickets) tickets->take(k);
    const Reg<U32> row = groups.row(g);
    const std::optional<Pred> row_ok = groups.row_ok(row);
    const RowMasks masks(k, lanes, row_ok);

    std::vector<Raw> stats_ahead;
    if (ahead) {
      // Past the batch nothing loads; the loop ends before those values are used.
      const Reg<U32> next_row = groups.row(ahead->group_ahead(k, g, 1));
      const Pred next_ok = k.setp(Cmp::Lt, next_row, batch);
      ahead->issue(k, g, std::pair{next_row, next_ok});
      stats_ahead = load_stats(next_row, next_ok);
      ahead->await_current(k);
    } else {
      stats = load_stats(row, row_ok);
    }
    std::optional<Reg<F32>> mean;
    if (ln) mean = decode(k, stats[0])[0];
    const Reg<F32> rstd = decode(k, stats.back())[0];
    xt.set_row(thread_row(x, row));
    dyt.set_row(thread_row(dy, row));
    xt.load(k, masks, {}, fence);
    dyt.load(k, masks, {}, fence);

    // x̂ = (x − mean)·rstd (or x·rstd) and g = w·dy (dy without w), for chunk j; masked elements
    // give g = 0.
    struct Terms {
      Values xhat, g, dy;
    };
    const std::uint32_t per_chunk = map.threads * map.vec;
    const auto terms = [&](std::uint32_t j, std::optional<Reg<U32>> shift) {
      Terms t;
      const Values xv = xt.get(k, masks, j, shift);
      t.dy = dyt.get(k, masks, j, shift);
      Values wv;
      if (w_col) {
        const GlobalDPtr wj = shifted(k, *w_col, shift, per_chunk);
        wv = decode_chunk(k, columns, j, issue_chunk(k, columns, wj, j, hints.weight_loads));
      }
      for (std::uint32_t e = 0; e < plan.vec; ++e) {
        t.xhat.push_back(ln ? k.mul(k.sub(xv[e], *mean), rstd) : k.mul(xv[e], rstd));
        t.g.push_back(w_col ? k.mul(wv[e], t.dy[e]) : t.dy[e]);
      }
      return t;
    };

    // Pass 1: Σ x̂·g, Σ g, and (partial rows) dw += dy·x̂, db += dy.
    RunningSum sum_xg(k), sum_g(k);
    for_each_chunk(
        k, fence_all(grad_sums->pass_keys(xt.loop_keys())), plan.loop_group,
        [&](std::uint32_t j, std::optional<Reg<U32>> shift) {
          const Terms t = terms(j, shift);
          Values xg;
          for (std::uint32_t e = 0; e < plan.vec; ++e) xg.push_back(k.mul(t.xhat[e], t.g[e]));
          sum_xg.add(k, tree_sum(k, xg));
          if (ln) sum_g.add(k, tree_sum(k, t.g));
          grad_sums->add(k, j, t.dy, t.xhat, shift);
        },
        fence);
    std::vector<Reg<F32>> sums{sum_xg.value()};
    if (ln) sums.push_back(sum_g.value());
    const SharedPtr<F32> cur = T > 32 ? k.index(scratch, scratch_offset) : scratch;
    // The next ticket reaches the CTA through the group reduce's barrier (or one of its own).
    if (tickets) tickets->post(k);
    const auto total =
        rank ? cluster_reduce(k, sums, Reduction::sum(), plan.block(), cta.tid, cur, *slice.slots)
             : group_reduce(k, sums, Reduction::sum(), T, plan.block(), cta.tid, cur);
    if (tickets && T <= 32) k.bar_sync(0);
    const Reg<F32> c1 = k.mul(total[0], inv_width);
    std::optional<Reg<F32>> c2;
    if (ln) c2 = k.mul(total[1], inv_width);

    // Pass 2: dx = (g − (x̂·c1 + c2))·rstd.
    // With the residual add, dx += dh.
    const GlobalDPtr dx_row = thread_row(dx, row);
    std::optional<GlobalDPtr> dh_row;
    if (dh) dh_row = thread_row(*dh, row);
    for_each_chunk(
        k, fence_all(xt.loop_keys()), plan.loop_group,
        [&](std::uint32_t j, std::optional<Reg<U32>> shift) {
          const Terms t = terms(j, shift);
          Values dhv;
          if (dh_row) {
            dhv = decode_chunk(
                k, masks, j,
                issue_chunk(k, masks, shifted(k, *dh_row, shift, per_chunk), j, hints.row_loads));
          }
          Values out;
          for (std::uint32_t e = 0; e < plan.vec; ++e) {
            const Reg<F32> fit = ln ? k.fma(t.xhat[e], c1, *c2) : k.mul(t.xhat[e], c1);
            const Reg<F32> d = k.mul(k.sub(t.g[e], fit), rstd);
            out.push_back(dh_row ? k.add(d, dhv[e]) : d);
          }
          store_chunk(k, masks, shifted(k, dx_row, shift, per_chunk), j, out, hints.row_stores);
        },
        fence);
    if (T > 32) k.mov(scratch_offset, k.xor_(scratch_offset, scratch_floats));
    // Last: `g` (and `row`) are the current group's registers until here.
    if (tickets) tickets->receive(k);
    if (ahead) {
      ahead->advance(k);
      for (std::size_t i = 0; i < stats.size(); ++i) assign(k, stats[i], stats_ahead[i]);
    }
  });

  if (tickets) tickets->finish(k);
  grad_sums->finish(k, {x, dy, mean_in, rstd_in, batch, stride}, fence);
  k.finalize();

  step.contract = k.contract();
  return step;
}

}  // namespace ptxdsl::kernels::detail
