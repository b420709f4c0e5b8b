// Layer norm and RMS norm forward. One row group (T threads) per row, R rows a CTA; each thread
// loads its slice of x once (a RowTile, holding it as the plan's strategies say), the group
// reduces Σx (then Σ(x − mean)² over the values it still holds) or Σx², and the same values are
// normalized and stored. The grid (Plan::grid) is a CTA a row group, or persistent CTAs that walk
// rows with the rows ahead in flight (RowsAhead), w and b read from L2 by every row or, with
// shared_weights, copied into shared memory before the walk.
#include <map>

#include "access_hints.hpp"
#include "builders.hpp"
#include "chunk_loop.hpp"
#include "cta_layout.hpp"
#include "row_stats.hpp"
#include "rows_ahead.hpp"

namespace ptxdsl::kernels::detail {

LaunchStep build_forward(Module& m, const NormSpec& spec, const Plan& plan) {
  const bool ln = spec.kind == NormKind::LayerNormFwd;
  Kernel& k = m.kernel(entry_name(spec));
  k.require_threads(plan.block());
  k.max_registers(plan.max_registers);

  // Parameters, in the contract's order.
  const GlobalDPtr x = param_dptr(k, NormArg::X, spec.dtype);
  std::optional<GlobalDPtr> residual, h;
  if (has_residual(spec)) residual = param_dptr(k, NormArg::Residual, residual_dtype(spec));
  std::optional<GlobalDPtr> w, b;
  if (has_weight(spec)) w = param_dptr(k, NormArg::W, spec.weight_dtype);
  if (has_bias(spec)) b = param_dptr(k, NormArg::B, spec.weight_dtype);
  const GlobalDPtr y = param_dptr(k, NormArg::Y, spec.dtype);
  if (residual) h = param_dptr(k, NormArg::H, residual_dtype(spec));
  std::optional<GlobalDPtr> mean_out;
  if (ln) mean_out = param_dptr(k, NormArg::Mean, DType::F32);
  const GlobalDPtr rstd_out = param_dptr(k, NormArg::Rstd, DType::F32);
  const Reg<U32> batch = k.param<U32>(arg_name(NormArg::Batch));
  const Reg<U32> stride = k.param<U32>(arg_name(NormArg::Stride));
  const Reg<F32> eps = k.param<F32>(arg_name(NormArg::Eps));

  const CtaLayout cta = cta_layout(k, plan);
  const RowMap map = row_map(plan);
  const std::uint32_t T = plan.threads_per_row;
  const SliceRank slice_of_row = slice_rank(k, plan);
  const RowLanes lanes(k, map, cta.lane, slice_of_row.short_slice);
  // A row split over a cluster: CTA `rank` holds columns [rank·n, rank·n + n) of its cluster's
  // row, n = plan.width (the last CTA fewer where plan.last_slice_width says); the row's sums are
  // reduced over the cluster through distributed shared memory. The clusters take rows as CTAs do
  // without them: %clusterid.x, or walking from it.
  const std::uint32_t cluster = plan.cluster_ctas;
  if (cluster > 1 && plan.rows_per_cta != 1) {
    throw Error("a forward split over a cluster takes one row a CTA");
  }
  // This thread's first column in global memory (its slice's first column on shared memory's side
  // is lanes.first_element()).
  RowSlice slice = row_slice(k, spec, plan, cta, lanes, 2, slice_of_row);
  const std::optional<Reg<U32>> rank = slice.rank;
  const Reg<U32> first_column = slice.first_column;
  const RowMasks columns(k, lanes, std::nullopt);  // w and b: every row's columns
  // Row group g holds rows g·R + slot. With several rows a CTA the last group masks rows past the
  // batch (it cannot return early: the group reduction needs every thread).
  RowGroups groups{k, plan, cta.slot, batch};
  const auto x_row_at = [&](Reg<U32> row) {
    return at(k, row_of(k, x, row, stride), first_column);
  };
  // Dynamic shared memory, as the plan lays it out (SharedLayout): x's staging, or its ring, and
  // with shared_weights this thread's columns of w and b.
  TileBuffers buffers;
  const SharedLayout layout = plan.shared_layout(spec);
  std::optional<SharedDPtr> w_shared, b_shared;
  if (layout.bytes > 0) {
    const SharedDPtr base{k.shared_dynamic<B32>("stage", layout.bytes), element_type(spec.dtype)};
    if (layout.weights.bytes > 0) {
      std::uint32_t offset = layout.weights.offset;
      const auto next_tensor = [&] {
        const SharedDPtr tensor{{base.p.base, base.p.offset + offset},
                                element_type(spec.weight_dtype)};
        offset += layout.weight_tensor_bytes;
        return at(k, tensor, lanes.first_element());
      };
      if (w) w_shared = next_tensor();
      if (b) b_shared = next_tensor();
    }
    if (layout.staging.bytes > 0) {
      buffers.staging = staging_for(k, base, plan, cta.slot, lanes.first_element());
    }
    if (layout.ring.bytes > 0) {
      buffers.ring = ring_for(k, base + layout.ring.offset / dtype_bytes(spec.dtype), plan,
                              cta.slot, lanes.first_element());
    }
  }
  const Reg<U32> first_group = rank ? k.special(Special::ClusteridX) : k.ctaid_x();
  const Reg<U32> first_row = groups.row(first_group);
  // x through L1 (.nc, allocating) and y stored plainly: faster than .L1::no_allocate loads and
  // .cs stores, which the next kernel's reads of y pay for.
  const AccessHints hints = access_hints(k, plan, kNc, kNoHints, kNc);
  RowTile xt(k, plan, layout, x_row_at(first_row), buffers, hints.row_loads);
  const std::uint32_t per_chunk = map.threads * map.vec;
  // Keeps ptxas from hoisting every chunk's loads to the top of a pass (stride ≥ width ≥ 1).
  const ChunkFence fence{k.setp(Cmp::Ne, stride, 0u), stride};
  const float inv_width = 1.0f / static_cast<float>(spec.width);
  // Group reductions' scratch: layer norm's two reductions take one buffer each, and a persistent
  // CTA with one reduction a row (RMS, or layer norm's two sums at once) alternates two, so that a
  // fast warp's next row cannot overwrite partials a slow warp is still reading: between two uses
  // of a buffer every warp passes another barrier.
  const bool one_pass = ln && plan.one_pass_stats;
  const bool one_reduction = !ln || one_pass;
  const std::uint32_t scratch_floats = group_reduce_scratch_floats(plan.block(), one_pass ? 2 : 1);
  const bool persistent = plan.grid == Grid::Persistent;
  SharedPtr<F32> scratch{};
  std::optional<Reg<U32>> scratch_offset;
  if (T > 32) {
    scratch = k.shared_array<F32>("red", (!one_reduction || persistent ? 2 : 1) * scratch_floats);
    if (one_reduction && persistent) scratch_offset = k.mov<U32>(0u);
  }
  const auto reduce_all = [&](std::span<const Reg<F32>> values, std::int64_t buffer) {
    SharedPtr<F32> at_buffer = scratch;
    if (T > 32) {
      at_buffer = scratch_offset ? k.index(scratch, *scratch_offset)
                                 : scratch + buffer * static_cast<std::int64_t>(scratch_floats);
    }
    if (rank) {
      slice.started->await(k);  // the first reduction, where no walk awaited it before
      return cluster_reduce(k, values, Reduction::sum(), plan.block(), cta.tid, at_buffer,
                            *slice.slots);
    }
    return group_reduce(k, values, Reduction::sum(), T, plan.block(), cta.tid, at_buffer);
  };
  const auto reduce = [&](Reg<F32> v, std::int64_t buffer) {
    const Reg<F32> values[] = {v};
    return reduce_all(values, buffer)[0];
  };

  // This thread's first column of w and b (every row's).
  const auto weight_columns = [&] {
    std::pair<std::optional<GlobalDPtr>, std::optional<GlobalDPtr>> columns_at;
    if (w) columns_at.first = at(k, *w, first_column);
    if (b) columns_at.second = at(k, *b, first_column);
    return columns_at;
  };
  const auto normalize_row = [&](Reg<U32> row, std::optional<Pred> row_ok) {
    const RowMasks masks(k, lanes, row_ok);
    if (persistent) xt.set_row(x_row_at(row));
    // The residual add: the row normalized is h = x + residual, the residual's chunks read from
    // memory by every pass (held nowhere, so the plans of x fit unchanged) and h stored by the
    // first.
    std::optional<GlobalDPtr> residual_row;
    if (residual) residual_row = at(k, row_of(k, *residual, row, stride), first_column);
    bool residual_reread = false;
    const auto row_values = [&](std::uint32_t j, std::optional<Reg<U32>> shift) {
      Values v = xt.get(k, masks, j, shift);
      if (!residual_row) return v;
      const GlobalDPtr at_chunk = shifted(k, *residual_row, shift, per_chunk);
      const MemHints rh = residual_reread ? hints.row_rereads : hints.row_loads;
      const Values r = decode_chunk(k, masks, j, issue_chunk(k, masks, at_chunk, j, rh));
      for (std::size_t e = 0; e < v.size(); ++e) v[e] = k.add(v[e], r[e]);
      return v;
    };
    // Σx (layer norm) or Σx² (RMS) while the loads land; with one_pass_stats, Σ(x − x₀) and
    // Σ(x − x₀)², x₀ the row's first element (every thread reads it: one L1 line).
    std::optional<Reg<F32>> shift;
    if (one_pass) {
      shift = decode(k, load_raw(k, row_of(k, x, row, stride), 1, row_ok, kNc))[0];
      if (residual) {
        const Raw r0 = load_raw(k, row_of(k, *residual, row, stride), 1, row_ok, kNc);
        shift = k.add(*shift, decode(k, r0)[0]);
      }
    }
    RunningSum first(k);
    std::optional<RunningSum> second;
    if (one_pass) second.emplace(k);
    const auto sum = [&](std::uint32_t j, const Values& v) {
      if (shift) {
        const ShiftedSums s = shifted_sums(k, lanes, j, v, *shift);
        first.add(k, s.sum);
        second->add(k, s.squares);
        return;
      }
      first.add(k, ln ? tree_sum(k, v) : tree_sum_squares(k, v));
    };
    if (residual) {
      // h's chunks, stored and summed once x's loads are all issued.
      xt.load(k, masks, {}, fence);
      const GlobalDPtr h_row = at(k, row_of(k, *h, row, stride), first_column);
      for_each_chunk(
          k, fence_all(xt.loop_keys()), plan.loop_group,
          [&](std::uint32_t j, std::optional<Reg<U32>> chunk_shift) {
            const Values hv = row_values(j, chunk_shift);
            store_chunk(k, masks, shifted(k, h_row, chunk_shift, per_chunk), j, hv,
                        hints.row_stores);
            sum(j, hv);
          },
          fence);
      residual_reread = true;
    } else {
      xt.load(k, masks, sum, fence);
    }
    // early_weights: w and b of the chunks in registers, issued with the row and held to the
    // normalizing pass. Plain loads, which ptxas keeps before the reductions' barriers (.nc ones
    // it may sink past them).
    std::map<std::uint32_t, std::pair<ChunkLoad, std::optional<ChunkLoad>>> early;
    if (plan.early_weights && w && !w_shared) {
      MemHints plain = hints.weight_loads;
      plain.nc = false;
      const auto [w_col, b_col] = weight_columns();
      for (std::uint32_t j = 0; j < plan.data.size(); ++j) {
        if (plan.data[j] != Place::Registers) continue;
        ChunkLoad wj = issue_chunk(k, columns, *w_col, j, plain);
        std::optional<ChunkLoad> bj;
        if (b_col) bj = issue_chunk(k, columns, *b_col, j, plain);
        early.emplace(j, std::pair{std::move(wj), std::move(bj)});
      }
    }

    // Layer norm: the mean, then Σ(x − mean)² over the values the thread still holds (two passes,
    // exact for rows far from zero; a Welford merge in one reduction was no faster). RMS: Σx².
    std::optional<Reg<F32>> mean;
    Reg<F32> mean_square;
    if (shift) {
      // mean = x₀ + Σd / n; variance = Σd² / n − (Σd / n)², never below 0 by rounding.
      const Reg<F32> sums[] = {first.value(), second->value()};
      const std::vector<Reg<F32>> total = reduce_all(sums, 0);
      const Reg<F32> offset = k.mul(total[0], inv_width);
      mean = k.add(*shift, offset);
      mean_square = k.max(k.sub(k.mul(total[1], inv_width), k.mul(offset, offset)), 0.0f);
    } else if (ln) {
      mean = k.mul(reduce(first.value(), 0), inv_width);
      xt.reread_with(hints.row_loads);  // read a third time below
      RunningSum squares(k);
      for_each_chunk(
          k, xt.loop_keys(), plan.loop_group,
          [&](std::uint32_t j, std::optional<Reg<U32>> shift) {
            squares.add(k, centered_squares(k, lanes, j, row_values(j, shift), *mean));
          },
          fence);
      mean_square = k.mul(reduce(squares.value(), 1), inv_width);
    } else {
      mean_square = k.mul(reduce(first.value(), 0), inv_width);
    }
    if (scratch_offset) k.mov(*scratch_offset, k.xor_(*scratch_offset, scratch_floats));
    const Reg<F32> rstd = reciprocal_std(k, mean_square, eps);

    // Lane 0 of each row group writes the row's statistics (of the cluster's first CTA).
    Pred writer = k.setp(Cmp::Eq, cta.lane, 0u);
    if (rank) writer = k.and_(writer, k.setp(Cmp::Eq, *rank, 0u));
    if (row_ok) writer = k.and_(writer, *row_ok);
    k.predicated(writer, [&] {
      if (mean) k.st(at(k, *mean_out, row).p.as<F32>(), *mean);
      k.st(at(k, rstd_out, row).p.as<F32>(), rstd);
    });

    // y = (x − mean)·rstd·w + b, or x·rstd·w (without b or w as the affine variant has them); w
    // and b come from L1 (read by every row).
    xt.reread_with(hints.row_rereads);
    const auto [w_col, b_col] = weight_columns();
    const auto weights = [&](const GlobalDPtr& col, const std::optional<SharedDPtr>& in_shared,
                             std::uint32_t j, std::optional<Reg<U32>> shift) {
      if (in_shared) {
        // Every element of the chunk is there (zeros past the width): one unmasked vector.
        const SharedDPtr at_chunk = shifted(k, *in_shared, shift, per_chunk) + map.chunk_offset(j);
        return load_values(k, at_chunk, map.vec);
      }
      const GlobalDPtr at_chunk = shifted(k, col, shift, per_chunk);
      return decode_chunk(k, columns, j, issue_chunk(k, columns, at_chunk, j, hints.weight_loads));
    };
    const GlobalDPtr y_row = at(k, row_of(k, y, row, stride), first_column);
    for_each_chunk(
        k, fence_all(xt.loop_keys()), plan.loop_group,
        [&](std::uint32_t j, std::optional<Reg<U32>> shift) {
          const auto held = shift ? early.end() : early.find(j);
          const bool is_held = held != early.end();
          Values wv;
          if (w_col) {
            wv = is_held ? decode_chunk(k, columns, j, held->second.first)
                         : weights(*w_col, w_shared, j, shift);
          }
          Values bv;
          if (b_col) {
            bv = is_held ? decode_chunk(k, columns, j, *held->second.second)
                         : weights(*b_col, b_shared, j, shift);
          }
          const Values xv = row_values(j, shift);
          Values out;
          for (std::size_t e = 0; e < xv.size(); ++e) {
            const Reg<F32> xhat = ln ? k.mul(k.sub(xv[e], *mean), rstd) : k.mul(xv[e], rstd);
            if (b_col) {
              out.push_back(k.fma(xhat, wv[e], bv[e]));
            } else if (w_col) {
              out.push_back(k.mul(xhat, wv[e]));
            } else {
              out.push_back(xhat);
            }
          }
          store_chunk(k, masks, shifted(k, y_row, shift, per_chunk), j, out, hints.row_stores);
        },
        fence);
  };
  LaunchStep step;
  switch (plan.grid) {
    case Grid::RowGroupPerCta:
      // The grid covers the batch.
      normalize_row(first_row, groups.row_ok(first_row));
      step.grid.kind = GridRule::Kind::RowsPerCta;
      break;
    case Grid::Persistent: {
      // CTAs (or clusters) walk row groups ctaid, ctaid + nctaid, ... (the grid never exceeds the
      // groups, so the first is real) with the rows ahead in flight (a persistent forward loads
      // some).
      const Reg<U32> grid = rank ? k.special(Special::NclusteridX) : k.nctaid_x();
      const std::unique_ptr<RowsAhead> ahead =
          RowsAhead::make(plan, lanes, groups, grid, {&xt},
                          [&](std::size_t, Reg<U32> row) { return x_row_at(row); });
      if (!ahead) throw Error("a persistent forward loads rows ahead, but its plan has none");
      ahead->start(k, first_group, first_row, RowMasks(k, lanes, groups.row_ok(first_row)));
      // shared_weights: the thread's columns of w and b, copied while the first rows load. With
      // one row a CTA each thread reads back only what it wrote; several row groups share the
      // columns, which the first copies and a barrier hands to the others.
      if (w_shared || b_shared) {
        const auto [w_col, b_col] = weight_columns();
        const auto copy_in = [&](const GlobalDPtr& col, const SharedDPtr& to) {
          for (std::uint32_t j = 0; j < map.chunks; ++j) {
            const Values v = load_chunk(k, columns, col, j, hints.weight_loads);
            store_values(k, to + map.chunk_offset(j), v);
          }
        };
        const auto copy_all = [&] {
          if (w_shared) copy_in(*w_col, *w_shared);
          if (b_shared) copy_in(*b_col, *b_shared);
        };
        if (plan.rows_per_cta > 1) {
          k.if_(k.setp(Cmp::Eq, cta.slot, 0u), copy_all);
          k.bar_sync(0);
        } else {
          copy_all();
        }
      }
      if (slice.started) slice.started->await(k);  // before the walk, which writes peers' slots
      k.for_range(first_group, groups.count(), grid, [&](Reg<U32> g) {
        const Reg<U32> row = groups.row(g);
        ahead->issue(k, g);
        ahead->await_current(k);
        normalize_row(row, groups.row_ok(row));
        ahead->advance(k);
      });
      step.grid.kind = GridRule::Kind::Persistent;
      break;
    }
  }
  k.finalize();

  step.grid.cluster_ctas = cluster;
  step.contract = k.contract();
  step.grid.rows_per_cta = plan.rows_per_cta;
  step.grid.max_ctas = plan.sm_count * plan.ctas_per_sm;
  return step;
}

}  // namespace ptxdsl::kernels::detail
