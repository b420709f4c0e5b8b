// Layer norm and RMS norm backward on a persistent grid. Each CTA walks row groups g = ctaid,
// ctaid + gridDim, ...; per row it loads x and dy once, reduces Σ x̂·g (and Σ g) over the row
// group, and writes dx. dw (and db) add up in f32 registers, each thread always owning the same
// columns, and leave the CTA as one f32 partial row in the workspace for the column reduce; or,
// in one launch (WeightGrads::SingleLaunch), the CTAs sum them by columns after their rows. x
// and dy are RowTiles, holding their rows as the plan's strategies say, with the rows ahead in
// flight by RowsAhead.
#include <fmt/format.h>

#include <algorithm>

#include "access_hints.hpp"
#include "builders.hpp"
#include "chunk_loop.hpp"
#include "cta_layout.hpp"
#include "row_stats.hpp"
#include "rows_ahead.hpp"

namespace ptxdsl::kernels::detail {
namespace {

// One accumulator (dw or db) over this thread's columns. Each chunk lives where the plan put it:
// f32 registers, shared memory, or the CTA's partial row in the workspace; only the owning thread
// ever touches it, so none of them needs a barrier.
class Accumulator {
 public:
  Accumulator(Kernel& k, const Plan& plan, const RowMasks& columns, GlobalDPtr row_start,
              GlobalDPtr partial_row, std::optional<SharedPtr<F32>> shared)
      : plan_(plan),
        columns_(columns),
        row_start_(row_start),
        partial_row_(partial_row),
        shared_(shared) {
    std::uint32_t staged = 0;
    regs_.resize(plan.chunks);
    for (std::uint32_t j = 0; j < plan.chunks; ++j) {
      shared_index_.push_back(plan.accum[j] == Place::Shared ? staged++ : 0);
      Values z;
      for (std::uint32_t e = 0; e < plan.vec; ++e) z.push_back(k.mov<F32>(0.0f));
      if (plan.accum[j] == Place::Registers) {
        regs_[j] = z;
      } else {
        put(k, j, z);
      }
    }
  }

  GlobalDPtr row_start() const { return row_start_; }
  const Values& registers(std::uint32_t j) const { return regs_[j]; }

  // acc[j] += a·b, or += a; `shift` as for_each_chunk passes it.
  void add(Kernel& k, std::uint32_t j, const Values& a, const Values* b,
           std::optional<Reg<U32>> shift) {
    if (plan_.accum[j] == Place::Registers) {
      for (std::uint32_t e = 0; e < plan_.vec; ++e) {
        if (b) {
          k.fma(regs_[j][e], a[e], (*b)[e], regs_[j][e]);
        } else {
          k.add(regs_[j][e], regs_[j][e], a[e]);
        }
      }
      return;
    }
    Values v = get(k, j, shift);
    for (std::uint32_t e = 0; e < plan_.vec; ++e)
      v[e] = b ? k.fma(a[e], (*b)[e], v[e]) : k.add(v[e], a[e]);
    put(k, j, v, shift);
  }

  // The CTA's partial row from this thread's register and shared chunks (workspace chunks are
  // already there).
  void write_out(Kernel& k, ChunkFence fence) {
    std::vector<int> keys;
    for (std::uint32_t j = 0; j < plan_.chunks; ++j) {
      keys.push_back(plan_.accum[j] == Place::Shared && columns_.lanes().map().complete(j) ? 1
                                                                                           : -1);
    }
    const std::uint32_t per = per_chunk();
    const RowLanes& lanes = columns_.lanes();
    const bool by_warp = warp_blocked_columns(plan_) > 0;
    for_each_chunk(
        k, keys, plan_.loop_group,
        [&](std::uint32_t j, std::optional<Reg<U32>> shift) {
          if (plan_.accum[j] == Place::Global) return;
          if (by_warp && lanes.map().complete(j)) {
            // The lane's halves at 4·lane and 128 + 4·lane of its warp's 256 floats. Made here,
            // chunk by chunk: an address held from the start costs a spill (32768 wide, sm_80).
            const Reg<U32> in_warp = k.and_(lanes.lane(), 31u);
            const Reg<U32> piece = k.sub(lanes.first_element(), k.shl(in_warp, 2u));
            const GlobalDPtr q =
                shifted(k, at(k, row_start_, piece), shift, per) + lanes.map().chunk_offset(j);
            const Values v = get(k, j, shift);
            for (std::uint32_t half = 0; half < 2; ++half) {
              Raw r;
              r.f32.assign(v.begin() + 4 * half, v.begin() + 4 * half + 4);
              store_raw(k, q + 128 * half, r, std::nullopt, kNoHints);
            }
            return;
          }
          store_chunk(k, columns_, shifted(k, partial_row_, shift, per), j, get(k, j, shift),
                      kNoHints);
        },
        fence);
  }

 private:
  std::uint32_t per_chunk() const { return plan_.threads_per_row * plan_.vec; }
  SharedDPtr shared_chunk(Kernel& k, std::uint32_t j, std::optional<Reg<U32>> shift) const {
    const SharedDPtr base =
        shifted(k, SharedDPtr{shared_->as<B32>(), DType::F32}, shift, per_chunk());
    return base + static_cast<std::int64_t>(shared_index_[j]) * per_chunk();
  }
  Values get(Kernel& k, std::uint32_t j, std::optional<Reg<U32>> shift = std::nullopt) {
    switch (plan_.accum[j]) {
      case Place::Registers:
        return regs_[j];
      case Place::Shared:
        return decode(k, load_raw(k, shared_chunk(k, j, shift), plan_.vec, std::nullopt, kNoHints));
      case Place::Global:
        break;
    }
    const GlobalDPtr row = shifted(k, partial_row_, shift, per_chunk());
    return decode_chunk(k, columns_, j, issue_chunk(k, columns_, row, j, kNoHints));
  }
  void put(Kernel& k, std::uint32_t j, const Values& v,
           std::optional<Reg<U32>> shift = std::nullopt) {
    if (plan_.accum[j] == Place::Shared) {
      Raw r;
      r.f32 = v;
      store_raw(k, shared_chunk(k, j, shift), r, std::nullopt, kNoHints);
    } else {
      store_chunk(k, columns_, shifted(k, partial_row_, shift, per_chunk()), j, v, kNoHints);
    }
  }

  const Plan& plan_;
  const RowMasks& columns_;
  GlobalDPtr row_start_;
  GlobalDPtr partial_row_;
  std::optional<SharedPtr<F32>> shared_;
  std::vector<std::uint32_t> shared_index_;
  std::vector<Values> regs_;
};

// Sums the R row slots' accumulators in slot order through shared memory, then writes the CTA's
// partial row: column c by thread c, c + block, ...
void merge_row_slots(Kernel& k, const Plan& plan, const CtaLayout& cta, const RowLanes& lanes,
                     SharedPtr<F32> merge, const std::vector<Accumulator>& accs) {
  const RowMap& map = lanes.map();
  const std::uint32_t span = plan.chunks * plan.threads_per_row * plan.vec;
  const std::uint32_t R = plan.rows_per_cta;
  const SharedPtr<F32> mine = k.index(merge, k.mad(cta.slot, span, lanes.first_element()));
  for (std::size_t a = 0; a < accs.size(); ++a) {
    for (std::uint32_t j = 0; j < plan.chunks; ++j) {
      Raw r;
      r.f32 = accs[a].registers(j);
      store_raw(
          k,
          SharedDPtr{
              (mine + static_cast<std::int64_t>(a * R * span) + map.chunk_offset(j)).as<B32>(),
              DType::F32},
          r, std::nullopt, kNoHints);
    }
  }
  k.bar_sync(0);
  const std::uint32_t block = plan.block();
  const SharedPtr<F32> column = k.index(merge, cta.tid);
  for (std::size_t a = 0; a < accs.size(); ++a) {
    const GlobalPtr<F32> out = k.index(accs[a].row_start().p.as<F32>(), cta.tid);
    for (std::uint32_t first = 0; first < plan.width; first += block) {
      const auto column_sum = [&] {
        Reg<F32> sum = k.ld(column + static_cast<std::int64_t>(a * R * span + first));
        for (std::uint32_t r = 1; r < R; ++r) {
          sum =
              k.add(sum, k.ld(column + static_cast<std::int64_t>(a * R * span + r * span + first)));
        }
        k.st(out + first, sum);
      };
      if (first + block <= plan.width) {
        column_sum();
      } else {
        k.if_(k.setp(Cmp::Lt, cta.tid, plan.width - first), column_sum);
      }
    }
  }
}

}  // namespace

std::uint32_t partial_pitch(std::uint32_t width) {
  return (width + 3) / 4 * 4;
}

std::uint32_t warp_blocked_columns(const Plan& plan) {
  const bool whole_warps = plan.vec == 8 && plan.threads_per_row % 32 == 0;
  const bool one_writer =
      plan.weight_grads == WeightGrads::PartialRows && plan.rows_per_cta == 1 &&
      std::find(plan.accum.begin(), plan.accum.end(), Place::Global) == plan.accum.end();
  if (!whole_warps || !one_writer) return 0;
  const std::uint32_t chunk = plan.threads_per_row * plan.vec;
  return plan.width / chunk * chunk;
}

Reg<U32> partial_column(Kernel& k, Reg<U32> position, std::uint32_t blocked, std::uint32_t width) {
  if (blocked == 0) return position;
  // Position 4·lane + e of a block is column 8·lane + e; 128 + 4·lane + e is 8·lane + 4 + e.
  const Reg<U32> in_block = k.and_(position, 255u);
  const Reg<U32> lane_first = k.shl(k.shr(k.and_(in_block, 127u), 2u), 3u);
  const Reg<U32> half = k.shl(k.shr(in_block, 7u), 2u);
  const Reg<U32> column =
      k.add(k.and_(position, ~255u), k.add(lane_first, k.add(half, k.and_(in_block, 3u))));
  if (blocked >= width) return column;
  return k.selp(column, position, k.setp(Cmp::Lt, position, blocked));
}

LaunchStep build_backward(Module& m, const NormSpec& spec, const Plan& plan) {
  const bool ln = spec.kind == NormKind::LayerNormBwd;
  const bool single = plan.weight_grads == WeightGrads::SingleLaunch;
  const bool ticketed = plan.row_order == RowOrder::Tickets;
  Kernel& k = m.kernel(entry_name(spec, single ? "single" : ""));
  k.require_threads(plan.block());
  k.max_registers(plan.max_registers);

  // Parameters, in the contract's order.
  const GlobalDPtr x = param_dptr(k, "x", spec.dtype);
  const GlobalDPtr w = param_dptr(k, "w", spec.weight_dtype);
  std::optional<GlobalDPtr> mean_in;
  if (ln) mean_in = param_dptr(k, "mean", DType::F32);
  const GlobalDPtr rstd_in = param_dptr(k, "rstd", DType::F32);
  const GlobalDPtr dy = param_dptr(k, "dy", spec.dtype);
  const GlobalDPtr dx = param_dptr(k, "dx", spec.dtype);
  // One launch: dw and db themselves; else per-CTA partial rows for the column reduce.
  std::vector<GlobalDPtr> grads, partials;
  if (single) {
    grads.push_back(param_dptr(k, "dw", spec.weight_dtype));
    if (ln) grads.push_back(param_dptr(k, "db", spec.weight_dtype));
  } else {
    partials.push_back(param_dptr(k, "partial_dw", DType::F32));
    if (ln) partials.push_back(param_dptr(k, "partial_db", DType::F32));
  }
  std::optional<GlobalPtr<U32>> row_counter;
  if (ticketed) row_counter = k.param_ptr<U32>("row_counter");
  const Reg<U32> batch = k.param<U32>("batch");
  const Reg<U32> stride = k.param<U32>("stride");

  const CtaLayout cta = cta_layout(k, plan);
  const RowMap map = RowMap::of(plan);
  const std::uint32_t T = plan.threads_per_row;
  const std::uint32_t R = plan.rows_per_cta;
  const RowLanes lanes(k, map, cta.lane);
  const RowMasks columns(k, lanes, std::nullopt);

  // Dynamic shared memory, as the plan lays it out (SharedLayout).
  const int s = dtype_bytes(spec.dtype);
  const SharedLayout layout = plan.shared_layout(spec);
  const std::uint32_t nacc = static_cast<std::uint32_t>(partials.size());
  const std::uint32_t acc_bytes = layout.accumulator_bytes;
  std::optional<SharedPtr<B32>> dynamic;
  if (layout.bytes > 0) dynamic = k.shared_dynamic<B32>("stage", layout.bytes);
  const auto region = [&](std::uint32_t byte_offset) {
    return SharedPtr<F32>{dynamic->base, dynamic->offset + byte_offset};
  };
  // x's buffers, and dy's a tensor's share further on.
  TileBuffers x_buffers, dy_buffers;
  if (layout.staging.bytes > 0) {
    x_buffers.staging =
        staging_for(k, {*dynamic, spec.dtype}, plan, cta.slot, lanes.first_element());
    dy_buffers.staging = *x_buffers.staging + layout.staged_tensor_bytes / s;
  }

  // Accumulators start at zero wherever they live.
  const Reg<U32> cta_id = k.ctaid_x();
  std::vector<Accumulator> accs;
  for (std::uint32_t a = 0; a < nacc; ++a) {
    const GlobalDPtr row_start = row_of(k, partials[a], cta_id, partial_pitch(spec.width));
    std::optional<SharedPtr<F32>> shared;
    if (acc_bytes > 0) {
      shared = k.index(region(layout.accumulators.offset + a * acc_bytes), lanes.first_element());
    }
    accs.emplace_back(k, plan, columns, row_start, at(k, row_start, lanes.first_element()), shared);
  }
  const GlobalDPtr w_col = at(k, w, lanes.first_element());

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

  const Reg<U32> grid = k.nctaid_x();
  RowGroups groups{k, plan, cta.slot, batch};
  // Row groups from a counter: the current one and those whose rows are in flight are known.
  std::optional<RowTickets> tickets;
  if (ticketed) tickets.emplace(k, *row_counter, cta.tid, cta_id, grid, plan.rows_in_flight());
  const auto thread_row = [&](GlobalDPtr p, Reg<U32> row) {
    return at(k, row_of(k, p, row, stride), lanes.first_element());
  };
  // The row's mean (layer norm) and rstd: one raw f32 load each.
  const MemHints stat_loads = plan.row_nc ? kNc : kNoHints;
  const auto load_stats = [&](Reg<U32> row, std::optional<Pred> ok) {
    std::vector<Raw> stats;
    if (ln) stats.push_back(load_raw(k, at(k, *mean_in, row), 1, ok, stat_loads));
    stats.push_back(load_raw(k, at(k, rstd_in, row), 1, ok, stat_loads));
    return stats;
  };
  // The grid never exceeds the row groups, so every CTA's first group is real; except in one
  // launch, whose grid covers the tiles of columns too: there the first row is checked.
  const Reg<U32> first_row = groups.row(cta_id);
  // x and dy through L1 (.nc, allocating) when one CTA has the SM; several CTAs an SM thrash it,
  // and keep .L1::no_allocate.
  const AccessHints hints =
      access_hints(k, plan, plan.ctas_per_sm == 1 ? kNc : kNcNoAllocate, kStreaming, kNc);
  const GlobalDPtr x_first = thread_row(x, first_row);
  const GlobalDPtr dy_first = thread_row(dy, first_row);
  if (layout.ring.bytes > 0) {
    x_buffers.ring = ring_for(k, {region(layout.ring.offset).as<B32>(), spec.dtype}, plan, cta.slot,
                              lanes.first_element());
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
  if (ahead) {
    // The first row's chunks and statistics load before the loop; each iteration then loads the
    // next row's while it works on the current one.
    std::optional<Pred> ok = groups.row_ok(first_row);
    if (single && !ok) ok = k.setp(Cmp::Lt, first_row, batch);
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

    // x̂ = (x − mean)·rstd (or x·rstd) and g = w·dy, for chunk j; masked elements give g = 0.
    struct Terms {
      Values xhat, g, dy;
    };
    const std::uint32_t per_chunk = map.threads * map.vec;
    const auto terms = [&](std::uint32_t j, std::optional<Reg<U32>> shift) {
      Terms t;
      const Values xv = xt.get(k, masks, j, shift);
      t.dy = dyt.get(k, masks, j, shift);
      const GlobalDPtr wj = shifted(k, w_col, shift, per_chunk);
      const Values wv =
          decode_chunk(k, columns, j, issue_chunk(k, columns, wj, j, hints.weight_loads));
      for (std::uint32_t e = 0; e < plan.vec; ++e) {
        t.xhat.push_back(ln ? k.mul(k.sub(xv[e], *mean), rstd) : k.mul(xv[e], rstd));
        t.g.push_back(k.mul(wv[e], t.dy[e]));
      }
      return t;
    };

    // Pass 1: Σ x̂·g, Σ g, and (partial rows) dw += dy·x̂, db += dy.
    RunningSum sum_xg(k), sum_g(k);
    std::vector<int> keys = xt.loop_keys();
    for (std::uint32_t j = 0; j < plan.chunks && !accs.empty(); ++j) {
      // Register accumulators cannot loop; fence them unless their data is in registers too.
      if (keys[j] > 0 && plan.accum[j] == Place::Registers) keys[j] = -1;
      if (keys[j] > 0) keys[j] = keys[j] * 4 + 1 + static_cast<int>(plan.accum[j]);
    }
    for_each_chunk(
        k, fence_all(keys), plan.loop_group,
        [&](std::uint32_t j, std::optional<Reg<U32>> shift) {
          const Terms t = terms(j, shift);
          Values xg;
          for (std::uint32_t e = 0; e < plan.vec; ++e) xg.push_back(k.mul(t.xhat[e], t.g[e]));
          sum_xg.add(k, tree_sum(k, xg));
          if (ln) sum_g.add(k, tree_sum(k, t.g));
          if (!accs.empty()) {
            accs[0].add(k, j, t.dy, &t.xhat, shift);          // dw += dy·x̂
            if (ln) accs[1].add(k, j, t.dy, nullptr, shift);  // db += dy
          }
        },
        fence);
    std::vector<Reg<F32>> sums{sum_xg.value()};
    if (ln) sums.push_back(sum_g.value());
    const SharedPtr<F32> cur = T > 32 ? k.index(scratch, scratch_offset) : scratch;
    // The next ticket reaches the CTA through the group reduce's barrier (or one of its own).
    if (tickets) tickets->post(k);
    const auto total = group_reduce(k, sums, ReduceOp::Sum, T, plan.block(), cta.tid, cur);
    if (tickets && T <= 32) k.bar_sync(0);
    const Reg<F32> c1 = k.mul(total[0], inv_width);
    std::optional<Reg<F32>> c2;
    if (ln) c2 = k.mul(total[1], inv_width);

    // Pass 2: dx = (g − (x̂·c1 + c2))·rstd.
    const GlobalDPtr dx_row = thread_row(dx, row);
    for_each_chunk(
        k, fence_all(xt.loop_keys()), plan.loop_group,
        [&](std::uint32_t j, std::optional<Reg<U32>> shift) {
          const Terms t = terms(j, shift);
          Values out;
          for (std::uint32_t e = 0; e < plan.vec; ++e) {
            const Reg<F32> fit = ln ? k.fma(t.xhat[e], c1, *c2) : k.mul(t.xhat[e], c1);
            out.push_back(k.mul(k.sub(t.g[e], fit), rstd));
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
  if (plan.overlap_reduce) k.griddep_launch_dependents();
  if (single) {
    column_weight_grads(k, spec, plan, {x, dy, mean_in, rstd_in, grads, batch, stride});
  } else if (R > 1) {  // the CTA's partial rows
    merge_row_slots(k, plan, cta, lanes, region(layout.merge.offset), accs);
  } else {
    for (Accumulator& acc : accs) acc.write_out(k, fence);
  }
  k.finalize();

  LaunchStep step;
  step.contract = k.contract();
  step.grid.kind = GridRule::Kind::Persistent;
  step.grid.rows_per_cta = R;
  step.grid.max_ctas = plan.sm_count * plan.ctas_per_sm;
  step.grid.min_row_groups = plan.min_row_groups_per_cta;
  // One launch: a CTA for each tile of columns, rows or not.
  if (single) step.grid.min_ctas = std::min(plan.column_tiles(), step.grid.max_ctas);
  return step;
}

}  // namespace ptxdsl::kernels::detail
