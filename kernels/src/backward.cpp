// Layer norm and RMS norm backward on a persistent grid. Each CTA walks row groups g = ctaid,
// ctaid + gridDim, ...; per row it loads x and dy once (RowTiles, holding them as the plan's
// strategies say, with the rows ahead in flight by RowsAhead), reduces Σ x̂·g (and Σ g) over the
// row group, and writes dx. dw (and db) add up as the plan's WeightGradSums type says: by rows
// into per-CTA partial rows for the column reduce, or by columns after the rows, in one launch.

#include "access_hints.hpp"
#include "builders.hpp"
#include "chunk_loop.hpp"
#include "cta_layout.hpp"
#include "model_numerics.hpp"
#include "row_address.hpp"
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

namespace {

// The backward's parameters, declared in the contract's order (the dw/db sums' own between dx and
// the row counter).
struct BackwardParams {
  GlobalDPtr x;
  std::optional<GlobalDPtr> w, mean;
  GlobalDPtr rstd, dy;
  // The residual add's h gradient from h's other uses: dx is h's whole gradient.
  std::optional<GlobalDPtr> dh;
  GlobalDPtr dx;
  std::optional<GlobalPtr<U32>> row_counter;
  Reg<U32> batch, stride;
};

BackwardParams declare_params(Kernel& k, const NormSpec& spec, WeightGradSums& grad_sums,
                              bool ticketed) {
  const GlobalDPtr x = param_dptr(k, NormArg::X, spec.dtype);
  std::optional<GlobalDPtr> w, mean, dh;
  if (has_weight(spec)) w = param_dptr(k, NormArg::W, spec.weight_dtype);
  if (spec.kind == NormKind::LayerNormBwd) mean = param_dptr(k, NormArg::Mean, DType::F32);
  const GlobalDPtr rstd = param_dptr(k, NormArg::Rstd, DType::F32);
  const GlobalDPtr dy = param_dptr(k, NormArg::Dy, spec.dtype);
  if (has_residual(spec)) dh = param_dptr(k, NormArg::Dh, residual_dtype(spec));
  const GlobalDPtr dx = param_dptr(k, NormArg::Dx, spec.dtype);
  grad_sums.declare(k);
  std::optional<GlobalPtr<U32>> row_counter;
  if (ticketed) row_counter = k.param_ptr<U32>(arg_name(NormArg::RowCounter));
  const Reg<U32> batch = k.param<U32>(arg_name(NormArg::Batch));
  const Reg<U32> stride = k.param<U32>(arg_name(NormArg::Stride));
  return {x, w, mean, rstd, dy, dh, dx, row_counter, batch, stride};
}

Kernel& start_kernel(Module& m, const NormSpec& spec, const Plan& plan, std::string_view step) {
  Kernel& k = m.kernel(entry_name(spec, step));
  k.require_threads(plan.block());
  k.max_registers(plan.max_registers);
  return k;
}

// A row split over a cluster (the cluster_ctas knob): CTA `rank` holds columns [rank·n, rank·n
// + n) of each row its cluster walks, n = plan.width (the last CTA fewer where
// plan.last_slice_width says); the clusters walk the row groups as CTAs do without them, and each
// leaves one partial row, its CTAs writing their slices' columns.
std::uint32_t checked_cluster(const Plan& plan) {
  if (plan.cluster_ctas > 1 && (plan.rows_per_cta != 1 || plan.row_order == RowOrder::Tickets ||
                                plan.weight_grads == WeightGrads::SingleLaunch)) {
    throw Error(
        "a backward split over a cluster takes one row a CTA, a fixed row walk and partial rows");
  }
  return plan.cluster_ctas;
}

// x̂ = (x − mean)·rstd (or x·rstd) and g = w·dy (dy without w; w with the weight offset added), for
// a chunk; masked elements give g = 0.
struct Terms {
  Values xhat, g, dy;
};

// One row: its masks and statistics.
struct BackwardRow {
  Reg<U32> row;
  RowMasks masks;
  std::optional<Reg<F32>> mean;
  Reg<F32> rstd;
};

// The backward kernel, step by step; the members are what every step reads, set up in the order
// the kernel's instructions need them.
class BackwardBuilder {
 public:
  BackwardBuilder(Module& m, const NormSpec& spec, const Plan& plan)
      : spec(spec),
        plan(plan),
        ln(spec.kind == NormKind::LayerNormBwd),
        ticketed(plan.row_order == RowOrder::Tickets),
        grad_sums(WeightGradSums::make(spec, plan)),
        k(start_kernel(m, spec, plan, grad_sums->entry_step())),
        p(declare_params(k, spec, *grad_sums, ticketed)),
        cta(cta_layout(k, plan)),
        map(row_map(plan)),
        T(plan.threads_per_row),
        slice_of_row(slice_rank(k, plan)),
        lanes(k, map, cta.lane, slice_of_row.short_slice),
        columns(k, lanes, std::nullopt),
        cluster(checked_cluster(plan)),
        slice(row_slice(k, spec, plan, cta, lanes, ln ? 2 : 1, slice_of_row)),
        rank(slice.rank),
        first_column(slice.first_column),
        s(dtype_bytes(spec.dtype)),
        layout(plan.shared_layout(spec)),
        per_chunk(map.threads * map.vec),
        inv_width(1.0f / static_cast<float>(spec.width)),
        scratch_floats(group_reduce_scratch_floats(plan.block(), ln ? 2 : 1)) {
    set_up_shared();
    set_up_sums();
    set_up_walk();
  }

  LaunchStep build();

 private:
  GlobalDPtr thread_row(GlobalDPtr ptr, Reg<U32> row) {
    return at(k, row_start(k, spec, ptr, row, p.stride), first_column);
  }
  void set_up_shared();
  void set_up_sums();
  void set_up_walk();
  std::vector<Raw> load_stats(Reg<U32> row, std::optional<Pred> ok);
  void start_rows(const GridRule& grid);
  void row_step(Reg<U32> g);
  BackwardRow load_row(Reg<U32> g, std::vector<Raw>& stats_ahead);
  Terms terms(const BackwardRow& r, std::uint32_t j, std::optional<Reg<U32>> shift);
  std::vector<Reg<F32>> sum_terms(const BackwardRow& r);
  void store_dx(const BackwardRow& r, Reg<F32> c1, std::optional<Reg<F32>> c2);

  const NormSpec& spec;
  const Plan& plan;
  const bool ln, ticketed;
  const std::unique_ptr<WeightGradSums> grad_sums;
  Kernel& k;
  const BackwardParams p;
  const CtaLayout cta;
  const RowMap map;
  const std::uint32_t T;
  const SliceRank slice_of_row;
  const RowLanes lanes;
  const RowMasks columns;
  const std::uint32_t cluster;
  RowSlice slice;
  const std::optional<Reg<U32>> rank;
  const Reg<U32> first_column;
  const int s;
  // Dynamic shared memory, as the plan lays it out (SharedLayout).
  const SharedLayout layout;
  const std::uint32_t per_chunk;
  const float inv_width;
  const std::uint32_t scratch_floats;
  std::optional<SharedPtr<B32>> dynamic;
  TileBuffers x_buffers, dy_buffers;  // dy's a tensor's share further on than x's
  Reg<U32> cta_id;                    // what walks the rows: the CTA, or its cluster
  std::optional<GlobalDPtr> w_col;
  // Reduction scratch, double-buffered across iterations so no barrier is needed between them.
  SharedPtr<F32> scratch{};
  Reg<U32> scratch_offset{};
  // Keeps ptxas from hoisting every chunk's loads to the top of a pass (stride ≥ width ≥ 1).
  ChunkFence fence{};
  Reg<U32> grid;
  std::optional<RowGroups> groups;
  // Row groups from a counter: the current one and those whose rows are in flight are known.
  std::optional<RowTickets> tickets;
  Reg<U32> first_row;
  AccessHints hints{};
  std::optional<RowTile> xt, dyt;
  std::vector<Raw> stats;  // the current row's mean (layer norm) and rstd, loaded ahead
  std::unique_ptr<RowsAhead> ahead;
};

void BackwardBuilder::set_up_shared() {
  if (layout.bytes > 0) dynamic = k.shared_dynamic<B32>("stage", layout.bytes);
  if (layout.staging.bytes > 0) {
    x_buffers.staging =
        staging_for(k, {*dynamic, element_type(spec.dtype)}, plan, cta.slot, lanes.first_element());
    dy_buffers.staging = *x_buffers.staging + layout.staged_tensor_bytes / s;
  }
}

// The partial row: the walker's, or that of the cluster whose CTAs add theirs up on chip
// (partial_cluster), each CTA still walking rows of its own.
void BackwardBuilder::set_up_sums() {
  cta_id = rank ? k.special(Special::ClusteridX) : k.ctaid_x();
  const std::uint32_t merging = plan.partial_cluster;
  if (merging > 1) k.require_cluster({merging, 1, 1});
  // Under deterministic portable each row slot leaves its own: slot r of walker w, w·R + r.
  const bool slot_rows = plan.portable.on() && plan.rows_per_cta > 1;
  const Reg<U32> partial_id = merging > 1 ? k.special(Special::ClusteridX)
                              : slot_rows ? k.mad(cta_id, plan.rows_per_cta, cta.slot)
                                          : cta_id;
  grad_sums->start(k, {cta, lanes, columns, partial_id, dynamic, layout, first_column});
  if (p.w) w_col = at(k, *p.w, first_column);
  if (T > 32) {
    scratch = k.shared_array<F32>("red", 2 * scratch_floats);
    scratch_offset = k.mov<U32>(0u);
  }
  fence = {k.setp(Cmp::Ne, p.stride, 0u), p.stride};
}

// The grid, the row groups, and the tiles that hold x and dy.
void BackwardBuilder::set_up_walk() {
  grid = rank ? k.special(Special::NclusteridX) : k.nctaid_x();
  groups.emplace(RowGroups{k, plan, cta.slot, p.batch});
  if (ticketed) tickets.emplace(k, *p.row_counter, cta.tid, cta_id, grid, plan.rows_in_flight());
  // The grid never exceeds the row groups, so every CTA's first group is real; except where the
  // dw/db sums give it a floor of CTAs (the one launch's tiles of columns) or the grid is whole
  // clusters of CTAs that merge their partial rows: there the first row is checked.
  first_row = groups->row(cta_id);
  // x and dy through L1 (.nc, allocating) when one CTA has the SM; several CTAs an SM thrash it,
  // and keep .L1::no_allocate.
  hints = access_hints(k, plan, plan.ctas_per_sm == 1 ? kNc : kNcNoAllocate, kStreaming, kNc);
  const GlobalDPtr x_first = thread_row(p.x, first_row);
  const GlobalDPtr dy_first = thread_row(p.dy, first_row);
  if (layout.ring.bytes > 0) {
    const SharedPtr<F32> ring{dynamic->base, dynamic->offset + layout.ring.offset};
    x_buffers.ring = ring_for(k, {ring.as<B32>(), element_type(spec.dtype)}, plan, cta.slot,
                              lanes.first_element());
    dy_buffers.ring = *x_buffers.ring + layout.ring_tensor_bytes / s;
  }
  xt.emplace(k, plan, layout, x_first, x_buffers, hints.row_loads);
  dyt.emplace(k, plan, layout, dy_first, dy_buffers, hints.row_loads);
  xt->reread_with(hints.row_rereads);
  dyt->reread_with(hints.row_rereads);
  ahead = RowsAhead::make(
      plan, lanes, *groups, grid, {&*xt, &*dyt},
      [this](std::size_t t, Reg<U32> row) { return thread_row(t == 0 ? p.x : p.dy, row); },
      tickets ? &*tickets : nullptr);
}

// The row's mean (layer norm) and rstd: one raw f32 load each.
std::vector<Raw> BackwardBuilder::load_stats(Reg<U32> row, std::optional<Pred> ok) {
  const MemHints stat_loads = plan.row_nc ? kNc : kNoHints;
  std::vector<Raw> out;
  if (ln) out.push_back(load_raw(k, at(k, *p.mean, row), 1, ok, stat_loads));
  out.push_back(load_raw(k, at(k, p.rstd, row), 1, ok, stat_loads));
  return out;
}

// The first row's chunks and statistics load before the loop; each iteration then loads the next
// row's while it works on the current one.
void BackwardBuilder::start_rows(const GridRule& launch) {
  if (!ahead) return;
  std::optional<Pred> ok = groups->row_ok(first_row);
  if ((launch.min_ctas > 0 || plan.partial_cluster > 1) && !ok) {
    ok = k.setp(Cmp::Lt, first_row, p.batch);
  }
  ahead->start(k, cta_id, first_row, RowMasks(k, lanes, ok));
  stats = load_stats(first_row, ok);
}

BackwardRow BackwardBuilder::load_row(Reg<U32> g, std::vector<Raw>& stats_ahead) {
  const Reg<U32> row = groups->row(g);
  const std::optional<Pred> row_ok = groups->row_ok(row);
  BackwardRow r{row, RowMasks(k, lanes, row_ok), std::nullopt, {}};
  if (ahead) {
    // Past the batch nothing loads; the loop ends before those values are used.
    const Reg<U32> next_row = groups->row(ahead->group_ahead(k, g, 1));
    const Pred next_ok = k.setp(Cmp::Lt, next_row, p.batch);
    ahead->issue(k, g, std::pair{next_row, next_ok});
    stats_ahead = load_stats(next_row, next_ok);
    ahead->await_current(k);
  } else {
    stats = load_stats(row, row_ok);
  }
  if (ln) r.mean = decode(k, stats[0])[0];
  r.rstd = decode(k, stats.back())[0];
  xt->set_row(thread_row(p.x, row));
  dyt->set_row(thread_row(p.dy, row));
  xt->load(k, r.masks, {}, fence);
  dyt->load(k, r.masks, {}, fence);
  return r;
}

Terms BackwardBuilder::terms(const BackwardRow& r, std::uint32_t j, std::optional<Reg<U32>> shift) {
  Terms t;
  const Values xv = xt->get(k, r.masks, j, shift);
  t.dy = dyt->get(k, r.masks, j, shift);
  Values wv;
  if (w_col) {
    const GlobalDPtr wj = shifted(k, *w_col, shift, per_chunk);
    wv = applied_weights(
        k, spec, decode_chunk(k, columns, j, issue_chunk(k, columns, wj, j, hints.weight_loads)));
  }
  for (std::uint32_t e = 0; e < plan.vec; ++e) {
    t.xhat.push_back(ln ? k.mul(k.sub(xv[e], *r.mean), r.rstd) : k.mul(xv[e], r.rstd));
    t.g.push_back(w_col ? k.mul(wv[e], t.dy[e]) : t.dy[e]);
  }
  return t;
}

// Pass 1: Σ x̂·g, Σ g, and (partial rows) dw += dy·x̂ (x̂ rounded as the casting says), db += dy;
// then their sums over the row group (or the cluster).
std::vector<Reg<F32>> BackwardBuilder::sum_terms(const BackwardRow& r) {
  RunningSum sum_xg(k), sum_g(k);
  for_each_chunk(
      k, fence_all(grad_sums->pass_keys(xt->loop_keys())), plan.loop_group,
      [&](std::uint32_t j, std::optional<Reg<U32>> shift) {
        const Terms t = terms(r, j, shift);
        Values xg;
        for (std::uint32_t e = 0; e < plan.vec; ++e) xg.push_back(k.mul(t.xhat[e], t.g[e]));
        sum_xg.add(k, tree_sum(k, xg));
        if (ln) sum_g.add(k, tree_sum(k, t.g));
        const Values xhat_for_dw = has_weight_grads(spec) ? cast_xhat(k, spec, t.xhat) : t.xhat;
        grad_sums->add(k, j, t.dy, xhat_for_dw, shift);
      },
      fence);
  std::vector<Reg<F32>> sums{sum_xg.value()};
  if (ln) sums.push_back(sum_g.value());
  const SharedPtr<F32> cur = T > 32 ? k.index(scratch, scratch_offset) : scratch;
  // The next ticket reaches the CTA through the group reduce's barrier (or one of its own).
  if (tickets) tickets->post(k);
  auto total =
      rank ? cluster_reduce(k, sums, Reduction::sum(), plan.block(), cta.tid, cur, *slice.slots)
           : group_reduce(k, sums, Reduction::sum(), T, plan.block(), cta.tid, cur);
  if (tickets && T <= 32) k.bar_sync(0);
  return total;
}

// Pass 2: dx = (g − (x̂·c1 + c2))·rstd; with the residual add, dx += dh.
void BackwardBuilder::store_dx(const BackwardRow& r, Reg<F32> c1, std::optional<Reg<F32>> c2) {
  const GlobalDPtr dx_row = thread_row(p.dx, r.row);
  std::optional<GlobalDPtr> dh_row;
  if (p.dh) dh_row = thread_row(*p.dh, r.row);
  for_each_chunk(
      k, fence_all(xt->loop_keys()), plan.loop_group,
      [&](std::uint32_t j, std::optional<Reg<U32>> shift) {
        const Terms t = terms(r, j, shift);
        Values dhv;
        if (dh_row) {
          const GlobalDPtr at_chunk = shifted(k, *dh_row, shift, per_chunk);
          dhv = decode_chunk(k, r.masks, j, issue_chunk(k, r.masks, at_chunk, j, hints.row_loads));
        }
        Values out;
        for (std::uint32_t e = 0; e < plan.vec; ++e) {
          const Reg<F32> fit = ln ? k.fma(t.xhat[e], c1, *c2) : k.mul(t.xhat[e], c1);
          const Reg<F32> d = k.mul(k.sub(t.g[e], fit), r.rstd);
          out.push_back(dh_row ? k.add(d, dhv[e]) : d);
        }
        store_chunk(k, r.masks, shifted(k, dx_row, shift, per_chunk), j, out, hints.row_stores);
      },
      fence);
}

void BackwardBuilder::row_step(Reg<U32> g) {
  if (tickets) tickets->take(k);
  std::vector<Raw> stats_ahead;
  const BackwardRow r = load_row(g, stats_ahead);
  const std::vector<Reg<F32>> total = sum_terms(r);
  const Reg<F32> c1 = k.mul(total[0], inv_width);
  std::optional<Reg<F32>> c2;
  if (ln) c2 = k.mul(total[1], inv_width);
  store_dx(r, c1, c2);
  if (T > 32) k.mov(scratch_offset, k.xor_(scratch_offset, scratch_floats));
  // Last: `g` (and `row`) are the current group's registers until here.
  if (tickets) tickets->receive(k);
  if (ahead) {
    ahead->advance(k);
    for (std::size_t i = 0; i < stats.size(); ++i) assign(k, stats[i], stats_ahead[i]);
  }
}

LaunchStep BackwardBuilder::build() {
  // The launch's grid: persistent CTAs, and as many more as the dw/db sums ask for.
  LaunchStep step;
  step.grid.kind = GridRule::Kind::Persistent;
  step.grid.rows_per_cta = plan.rows_per_cta;
  step.grid.max_ctas = plan.sm_count * plan.ctas_per_sm;
  step.grid.min_row_groups = plan.min_row_groups_per_cta;
  step.grid.cluster_ctas = std::max(cluster, plan.partial_cluster);
  step.grid.portable = plan.portable;
  grad_sums->size_grid(step.grid);
  start_rows(step.grid);
  if (slice.started) slice.started->await(k);  // before the row walk, which writes peers' slots
  const auto body = [this](Reg<U32> g) { row_step(g); };
  if (tickets) {
    tickets->for_each(k, groups->count(), body);
  } else {
    k.for_range(cta_id, groups->count(), grid, body);
  }
  if (tickets) tickets->finish(k);
  grad_sums->finish(k, {p.x, p.dy, p.mean, p.rstd, p.batch, p.stride}, fence);
  k.finalize();
  step.contract = k.contract();
  return step;
}

}  // namespace

LaunchStep build_backward(Module& m, const NormSpec& spec, const Plan& plan) {
  return BackwardBuilder(m, spec, plan).build();
}

}  // namespace ptxdsl::kernels::detail
