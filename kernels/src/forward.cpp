// Layer norm and RMS norm forward. One row group (T threads) per row, R rows a CTA; each thread
// loads its slice of x once (a RowTile, holding it as the plan's strategies say), the group
// reduces Σx (then Σ(x − mean)² over the values it still holds) or Σx², and the same values are
// normalized and stored. The grid (Plan::grid) is a CTA a row group, or persistent CTAs that walk
// rows with the rows ahead in flight (RowsAhead), w and b read from L2 by every row or, with
// shared_weights, copied into shared memory before the walk.
#include <limits>
#include <map>

#include "access_hints.hpp"
#include "builders.hpp"
#include "chunk_loop.hpp"
#include "cta_layout.hpp"
#include "model_numerics.hpp"
#include "row_address.hpp"
#include "row_stats.hpp"
#include "rows_ahead.hpp"

namespace ptxdsl::kernels::detail {
namespace {

// The forward's parameters, declared in the contract's order.
struct ForwardParams {
  GlobalDPtr x;
  std::optional<GlobalDPtr> residual, w, b;
  GlobalDPtr y;
  std::optional<GlobalDPtr> y_scale;  // a quantized y's scales, written (quant_scale_type)
  std::optional<GlobalPtr<F32>> quant_scale_in;  // read: QuantScale::Static's, nvfp4's global
  std::optional<GlobalDPtr> h, mean;
  GlobalDPtr rstd;
  Reg<U32> batch, stride;
  Reg<F32> eps;
};

ForwardParams declare_params(Kernel& k, const NormSpec& spec) {
  const GlobalDPtr x = param_dptr(k, NormArg::X, spec.dtype);
  std::optional<GlobalDPtr> residual, w, b, h, mean;
  if (has_residual(spec)) residual = param_dptr(k, NormArg::Residual, residual_dtype(spec));
  if (has_weight(spec)) w = param_dptr(k, NormArg::W, spec.weight_dtype);
  if (has_bias(spec)) b = param_dptr(k, NormArg::B, spec.weight_dtype);
  // nvfp4's pairs of e2m1 are addressed as bytes.
  const ScalarType y_type = quant_element_type(spec.quant) == ScalarType::E2M1x2
                                ? ScalarType::U8
                                : quant_element_type(spec.quant);
  const GlobalDPtr y = spec.quant == Quant::None
                           ? param_dptr(k, NormArg::Y, spec.dtype)
                           : ptxdsl::param_dptr(k, arg_name(NormArg::Y), y_type);
  std::optional<GlobalDPtr> y_scale;
  std::optional<GlobalPtr<F32>> quant_scale_in;
  if (quant_group(spec) > 0) {
    y_scale = ptxdsl::param_dptr(k, arg_name(NormArg::YScale), quant_scale_type(spec.quant));
  }
  if (reads_quant_scale(spec)) {
    quant_scale_in = param_dptr(k, NormArg::QuantScaleIn, DType::F32).p.as<F32>();
  }
  if (residual) h = param_dptr(k, NormArg::H, residual_dtype(spec));
  if (spec.kind == NormKind::LayerNormFwd) mean = param_dptr(k, NormArg::Mean, DType::F32);
  const GlobalDPtr rstd = param_dptr(k, NormArg::Rstd, DType::F32);
  const Reg<U32> batch = k.param<U32>(arg_name(NormArg::Batch));
  const Reg<U32> stride = k.param<U32>(arg_name(NormArg::Stride));
  const Reg<F32> eps = k.param<F32>(arg_name(NormArg::Eps));
  return {x, residual, w, b, y, y_scale, quant_scale_in, h, mean, rstd, batch, stride, eps};
}

Kernel& start_kernel(Module& m, const NormSpec& spec, const Plan& plan) {
  Kernel& k = m.kernel(entry_name(spec));
  k.require_threads(plan.block());
  k.max_registers(plan.max_registers);
  return k;
}

// Dynamic shared memory, as the plan lays it out (SharedLayout): x's staging, or its ring, and
// with shared_weights this thread's columns of w and b.
struct ForwardShared {
  TileBuffers buffers;
  std::optional<SharedDPtr> w, b;
};

ForwardShared shared_regions(Kernel& k, const NormSpec& spec, const Plan& plan,
                             const SharedLayout& layout, const CtaLayout& cta,
                             const RowLanes& lanes, const ForwardParams& p) {
  ForwardShared out;
  if (layout.bytes == 0) return out;
  const SharedDPtr base{k.shared_dynamic<B32>("stage", layout.bytes), element_type(spec.dtype)};
  if (layout.weights.bytes > 0) {
    std::uint32_t offset = layout.weights.offset;
    const auto next_tensor = [&] {
      const SharedDPtr tensor{{base.p.base, base.p.offset + offset},
                              element_type(spec.weight_dtype)};
      offset += layout.weight_tensor_bytes;
      return at(k, tensor, lanes.first_element());
    };
    if (p.w) out.w = next_tensor();
    if (p.b) out.b = next_tensor();
  }
  if (layout.staging.bytes > 0) {
    out.buffers.staging = staging_for(k, base, plan, cta.slot, lanes.first_element());
  }
  if (layout.ring.bytes > 0) {
    out.buffers.ring = ring_for(k, base + layout.ring.offset / dtype_bytes(spec.dtype), plan,
                                cta.slot, lanes.first_element());
  }
  return out;
}

// One row's passes: its masks, the residual add's row, and one_pass_stats' shift.
struct RowPass {
  RowMasks masks;
  std::optional<GlobalDPtr> residual_row;
  bool residual_reread = false;
  std::optional<Reg<F32>> shift;
};

// w and b of the chunks held with the row (early_weights), by chunk.
using HeldWeights = std::map<std::uint32_t, std::pair<ChunkLoad, std::optional<ChunkLoad>>>;

// The first pass's sums: Σx or Σx², or one_pass_stats' Σ(x − x₀) and Σ(x − x₀)².
struct RowSums {
  RunningSum first;
  std::optional<RunningSum> second;
};

struct RowStats {
  std::optional<Reg<F32>> mean;
  Reg<F32> rstd;
};

// The forward kernel, step by step; the members are what every step reads, set up in the order
// the kernel's instructions need them.
class ForwardBuilder {
 public:
  ForwardBuilder(Module& m, const NormSpec& spec, const Plan& plan)
      : k(start_kernel(m, spec, plan)),
        spec(spec),
        plan(plan),
        ln(spec.kind == NormKind::LayerNormFwd),
        p(declare_params(k, spec)),
        cta(cta_layout(k, plan)),
        map(row_map(plan)),
        T(plan.threads_per_row),
        slice_of_row(slice_rank(k, plan)),
        lanes(k, map, cta.lane, slice_of_row.short_slice),
        cluster(checked_cluster(plan)),
        slice(row_slice(k, spec, plan, cta, lanes, 2, slice_of_row)),
        rank(slice.rank),
        first_column(slice.first_column),
        columns(k, lanes, std::nullopt),
        groups{k, plan, cta.slot, p.batch},
        layout(plan.shared_layout(spec)),
        shared(shared_regions(k, spec, plan, layout, cta, lanes, p)),
        first_group(rank ? k.special(Special::ClusteridX) : k.ctaid_x()),
        first_row(groups.row(first_group)),
        hints(access_hints(k, plan, kNc, kNoHints, kNc)),
        xt(k, plan, layout, x_row_at(first_row), shared.buffers, hints.row_loads),
        per_chunk(map.threads * map.vec),
        fence{k.setp(Cmp::Ne, p.stride, 0u), p.stride},
        inv_width(1.0f / static_cast<float>(spec.width)),
        one_pass(ln && plan.one_pass_stats),
        scratch_floats(group_reduce_scratch_floats(plan.block(), one_pass ? 2 : 1)),
        persistent(plan.grid == Grid::Persistent) {
    make_scratch();
  }

  LaunchStep build();

 private:
  static std::uint32_t checked_cluster(const Plan& plan) {
    if (plan.cluster_ctas > 1 && plan.rows_per_cta != 1) {
      throw Error("a forward split over a cluster takes one row a CTA");
    }
    return plan.cluster_ctas;
  }
  // This thread's first column of a row of x.
  GlobalDPtr x_row_at(Reg<U32> row) {
    return at(k, row_start(k, spec, p.x, row, p.stride), first_column);
  }
  void make_scratch();
  std::vector<Reg<F32>> reduce_all(std::span<const Reg<F32>> values, std::int64_t buffer);
  Reg<F32> reduce(Reg<F32> v, std::int64_t buffer) {
    const Reg<F32> values[] = {v};
    return reduce_all(values, buffer)[0];
  }
  std::pair<std::optional<GlobalDPtr>, std::optional<GlobalDPtr>> weight_columns();
  Values row_values(RowPass& r, std::uint32_t j, std::optional<Reg<U32>> shift);
  void normalize_row(Reg<U32> row, std::optional<Pred> row_ok);
  RowSums load_and_sum(RowPass& r, Reg<U32> row, std::optional<Pred> row_ok);
  HeldWeights load_early_weights();
  RowStats statistics(RowPass& r, const RowSums& sums);
  void write_statistics(Reg<U32> row, std::optional<Pred> row_ok, const RowStats& stats);
  void store_normalized(RowPass& r, Reg<U32> row, std::optional<Pred> row_ok,
                        const HeldWeights& early, const RowStats& stats);
  Reg<F32> chunk_absmax(std::uint32_t j, std::optional<Reg<U32>> shift, const Values& y);
  void store_fp4_pairs(GlobalDPtr y_row, std::optional<Pred> row_ok, std::uint32_t j,
                       std::optional<Reg<U32>> shift, const Values& q);
  Reg<F32> write_scale(Reg<F32> absmax, Reg<U32> index, Pred writer);
  Reg<U32> scale_index(Reg<U32> row, std::optional<Reg<U32>> block);
  Reg<F32> quant_divisor(Reg<U32> row, std::optional<Pred> row_ok, Reg<F32> peak);
  Reg<F32> group_divisor(Reg<U32> row, std::optional<Pred> row_ok, std::uint32_t j,
                         std::optional<Reg<U32>> shift, const Values& y);
  void copy_weights_in();
  void walk_rows();

  Kernel& k;
  const NormSpec& spec;
  const Plan& plan;
  const bool ln;
  const ForwardParams p;
  const CtaLayout cta;
  const RowMap map;
  const std::uint32_t T;
  const SliceRank slice_of_row;
  const RowLanes lanes;
  const std::uint32_t cluster;
  // A row split over a cluster: CTA `rank` holds columns [rank·n, rank·n + n) of its cluster's
  // row, n = plan.width (the last CTA fewer where plan.last_slice_width says); the row's sums are
  // reduced over the cluster through distributed shared memory. The clusters take rows as CTAs do
  // without them: %clusterid.x, or walking from it.
  RowSlice slice;
  const std::optional<Reg<U32>> rank;
  // This thread's first column in global memory (its slice's first column on shared memory's side
  // is lanes.first_element()).
  const Reg<U32> first_column;
  const RowMasks columns;  // w and b: every row's columns
  // Row group g holds rows g·R + slot. With several rows a CTA the last group masks rows past the
  // batch (it cannot return early: the group reduction needs every thread).
  const RowGroups groups;
  const SharedLayout layout;
  const ForwardShared shared;
  const Reg<U32> first_group, first_row;
  // x through L1 (.nc, allocating) and y stored plainly: faster than .L1::no_allocate loads and
  // .cs stores, which the next kernel's reads of y pay for.
  const AccessHints hints;
  RowTile xt;
  const std::uint32_t per_chunk;
  // Keeps ptxas from hoisting every chunk's loads to the top of a pass (stride ≥ width ≥ 1).
  const ChunkFence fence;
  const float inv_width;
  const bool one_pass;
  const std::uint32_t scratch_floats;
  const bool persistent;
  SharedPtr<F32> scratch{};
  std::optional<Reg<U32>> scratch_offset;
  // The quantized output's absmax reduction: a buffer of its own, so that it needs no barrier
  // beyond the statistics' (which every warp passes between two rows' absmax).
  SharedPtr<F32> absmax_scratch{};
  // A quantized y's scales: over the row (per-token, or a row no wider than a group), over
  // groups of the row (each within a chunk and a warp: check_quant_groups), or the caller's.
  const bool row_scale = quant_group(spec) > 0 && quant_group(spec) >= spec.width;
  const std::uint32_t scale_group = row_scale ? 0 : quant_group(spec);
  const bool fp4 = quant_element_type(spec.quant) == ScalarType::E2M1x2;
  std::optional<Reg<F32>> caller_scale;  // quant_scale_in's, loaded with each row's scales
};

// Group reductions' scratch: layer norm's two reductions take one buffer each, and a persistent
// CTA with one reduction a row (RMS, or layer norm's two sums at once) alternates two, so that a
// fast warp's next row cannot overwrite partials a slow warp is still reading: between two uses
// of a buffer every warp passes another barrier.
void ForwardBuilder::make_scratch() {
  const bool one_reduction = !ln || one_pass;
  if (T > 32) {
    scratch = k.shared_array<F32>("red", (!one_reduction || persistent ? 2 : 1) * scratch_floats);
    if (one_reduction && persistent) scratch_offset = k.mov<U32>(0u);
    if (row_scale) absmax_scratch = k.shared_array<F32>("red_absmax", scratch_floats);
  }
}

std::vector<Reg<F32>> ForwardBuilder::reduce_all(std::span<const Reg<F32>> values,
                                                 std::int64_t buffer) {
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
}

// This thread's first column of w and b (every row's).
std::pair<std::optional<GlobalDPtr>, std::optional<GlobalDPtr>> ForwardBuilder::weight_columns() {
  std::pair<std::optional<GlobalDPtr>, std::optional<GlobalDPtr>> columns_at;
  if (p.w) columns_at.first = at(k, *p.w, first_column);
  if (p.b) columns_at.second = at(k, *p.b, first_column);
  return columns_at;
}

// A chunk of the row normalized: x's, or h = x + residual's (as stored, under the casting that
// says so), the residual's chunks read from memory by every pass (held nowhere, so the plans of x
// fit unchanged).
Values ForwardBuilder::row_values(RowPass& r, std::uint32_t j, std::optional<Reg<U32>> shift) {
  Values v = xt.get(k, r.masks, j, shift);
  if (!r.residual_row) return v;
  const GlobalDPtr at_chunk = shifted(k, *r.residual_row, shift, per_chunk);
  const MemHints rh = r.residual_reread ? hints.row_rereads : hints.row_loads;
  const Values res = decode_chunk(k, r.masks, j, issue_chunk(k, r.masks, at_chunk, j, rh));
  for (std::size_t e = 0; e < v.size(); ++e) v[e] = k.add(v[e], res[e]);
  return normalized_h(k, spec, std::move(v));
}

void ForwardBuilder::normalize_row(Reg<U32> row, std::optional<Pred> row_ok) {
  RowPass r{RowMasks(k, lanes, row_ok), std::nullopt, false, std::nullopt};
  if (persistent) xt.set_row(x_row_at(row));
  if (p.residual)
    r.residual_row = at(k, row_start(k, spec, *p.residual, row, p.stride), first_column);
  const RowSums sums = load_and_sum(r, row, row_ok);
  const HeldWeights early = load_early_weights();
  const RowStats stats = statistics(r, sums);
  write_statistics(row, row_ok, stats);
  store_normalized(r, row, row_ok, early, stats);
}

// Σx (layer norm) or Σx² (RMS) while the loads land; with one_pass_stats, Σ(x − x₀) and
// Σ(x − x₀)², x₀ the row's first element (every thread reads it: one L1 line). The residual add
// stores h, and sums it, once x's loads are all issued.
RowSums ForwardBuilder::load_and_sum(RowPass& r, Reg<U32> row, std::optional<Pred> row_ok) {
  if (one_pass) {
    r.shift = decode(k, load_raw(k, row_start(k, spec, p.x, row, p.stride), 1, row_ok, kNc))[0];
    if (p.residual) {
      const Raw r0 = load_raw(k, row_start(k, spec, *p.residual, row, p.stride), 1, row_ok, kNc);
      r.shift = k.add(*r.shift, decode(k, r0)[0]);
    }
  }
  RowSums sums{RunningSum(k), std::nullopt};
  if (one_pass) sums.second.emplace(k);
  const auto sum = [&](std::uint32_t j, const Values& v) {
    if (r.shift) {
      const ShiftedSums s = shifted_sums(k, lanes, j, v, *r.shift);
      sums.first.add(k, s.sum);
      sums.second->add(k, s.squares);
      return;
    }
    sums.first.add(k, ln ? tree_sum(k, v) : tree_sum_squares(k, v));
  };
  if (!p.residual) {
    xt.load(k, r.masks, sum, fence);
    return sums;
  }
  xt.load(k, r.masks, {}, fence);
  const GlobalDPtr h_row = at(k, row_start(k, spec, *p.h, row, p.stride), first_column);
  for_each_chunk(
      k, fence_all(xt.loop_keys()), plan.loop_group,
      [&](std::uint32_t j, std::optional<Reg<U32>> chunk_shift) {
        const Values hv = row_values(r, j, chunk_shift);
        store_chunk(k, r.masks, shifted(k, h_row, chunk_shift, per_chunk), j, hv, hints.row_stores);
        sum(j, hv);
      },
      fence);
  r.residual_reread = true;
  return sums;
}

// early_weights: w and b of the chunks in registers, issued with the row and held to the
// normalizing pass. Plain loads, which ptxas keeps before the reductions' barriers (.nc ones it
// may sink past them).
HeldWeights ForwardBuilder::load_early_weights() {
  HeldWeights early;
  if (!plan.early_weights || !p.w || shared.w) return early;
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
  return early;
}

// Layer norm: the mean, then Σ(x − mean)² over the values the thread still holds (two passes,
// exact for rows far from zero; a Welford merge in one reduction was no faster). RMS: Σx².
RowStats ForwardBuilder::statistics(RowPass& r, const RowSums& sums) {
  std::optional<Reg<F32>> mean;
  Reg<F32> mean_square;
  if (r.shift) {
    // mean = x₀ + Σd / n; variance = Σd² / n − (Σd / n)², never below 0 by rounding.
    const Reg<F32> both[] = {sums.first.value(), sums.second->value()};
    const std::vector<Reg<F32>> total = reduce_all(both, 0);
    const Reg<F32> offset = k.mul(total[0], inv_width);
    mean = k.add(*r.shift, offset);
    mean_square = k.max(k.sub(k.mul(total[1], inv_width), k.mul(offset, offset)), 0.0f);
  } else if (ln) {
    mean = k.mul(reduce(sums.first.value(), 0), inv_width);
    xt.reread_with(hints.row_loads);  // read a third time below
    RunningSum squares(k);
    for_each_chunk(
        k, xt.loop_keys(), plan.loop_group,
        [&](std::uint32_t j, std::optional<Reg<U32>> shift) {
          squares.add(k, centered_squares(k, lanes, j, row_values(r, j, shift), *mean));
        },
        fence);
    mean_square = k.mul(reduce(squares.value(), 1), inv_width);
  } else {
    mean_square = k.mul(reduce(sums.first.value(), 0), inv_width);
  }
  if (scratch_offset) k.mov(*scratch_offset, k.xor_(*scratch_offset, scratch_floats));
  return {mean, reciprocal_std(k, mean_square, p.eps)};
}

// Lane 0 of each row group writes the row's statistics (of the cluster's first CTA).
void ForwardBuilder::write_statistics(Reg<U32> row, std::optional<Pred> row_ok,
                                      const RowStats& stats) {
  Pred writer = k.setp(Cmp::Eq, cta.lane, 0u);
  if (rank) writer = k.and_(writer, k.setp(Cmp::Eq, *rank, 0u));
  if (row_ok) writer = k.and_(writer, *row_ok);
  k.predicated(writer, [&] {
    if (stats.mean) k.st(at(k, *p.mean, row).p.as<F32>(), *stats.mean);
    k.st(at(k, p.rstd, row).p.as<F32>(), stats.rstd);
  });
}

// y = (x − mean)·rstd·w + b, or x·rstd·w (without b or w as the affine variant has them; w with
// the weight offset added, x̂ rounded as the casting says); w and b come from L1 (read by every
// row), or from shared memory, or held since the row's loads. A quantized output takes y twice:
// its absmax first, then y / scale in the format.
void ForwardBuilder::store_normalized(RowPass& r, Reg<U32> row, std::optional<Pred> row_ok,
                                      const HeldWeights& early, const RowStats& stats) {
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
  const auto y_of = [&](std::uint32_t j, std::optional<Reg<U32>> shift) {
    const auto held = shift ? early.end() : early.find(j);
    const bool is_held = held != early.end();
    Values wv;
    if (w_col) {
      wv = applied_weights(k, spec,
                           is_held ? decode_chunk(k, columns, j, held->second.first)
                                   : weights(*w_col, shared.w, j, shift));
    }
    Values bv;
    if (b_col) {
      bv = is_held ? decode_chunk(k, columns, j, *held->second.second)
                   : weights(*b_col, shared.b, j, shift);
    }
    const Values xv = row_values(r, j, shift);
    const auto normalized = [&](std::size_t e) {
      return ln ? k.mul(k.sub(xv[e], *stats.mean), stats.rstd) : k.mul(xv[e], stats.rstd);
    };
    Values out;
    for_each_xhat(k, spec, xv.size(), normalized, [&](std::size_t e, Reg<F32> xhat) {
      if (b_col) {
        out.push_back(k.fma(xhat, wv[e], bv[e]));
      } else if (w_col) {
        out.push_back(k.mul(xhat, wv[e]));
      } else {
        out.push_back(xhat);
      }
    });
    return out;
  };
  // nvfp4: a byte holds two elements (row groups refused, stride a multiple of the vector).
  const GlobalDPtr y_row =
      fp4 ? at(k, row_of(k, p.y, row, k.shr(p.stride, 1u)), k.shr(first_column, 1u))
          : at(k, row_start(k, spec, p.y, row, p.stride), first_column);
  std::optional<Reg<F32>> divisor;
  if (p.quant_scale_in) caller_scale = k.ld(*p.quant_scale_in);
  if (spec.quant_scale == QuantScale::Static) divisor = caller_scale;
  if (row_scale) {
    const Reg<F32> peak = k.mov<F32>(0.0f);
    for_each_chunk(
        k, fence_all(xt.loop_keys()), plan.loop_group,
        [&](std::uint32_t j, std::optional<Reg<U32>> shift) {
          k.mov(peak, k.max(peak, chunk_absmax(j, shift, y_of(j, shift))));
        },
        fence);
    divisor = quant_divisor(row, row_ok, peak);
    xt.reread_with(hints.row_rereads);
  }
  for_each_chunk(
      k, fence_all(xt.loop_keys()), plan.loop_group,
      [&](std::uint32_t j, std::optional<Reg<U32>> shift) {
        Values out = y_of(j, shift);
        if (scale_group > 0) divisor = group_divisor(row, row_ok, j, shift, out);
        if (divisor) {
          for (Reg<F32>& v : out) {
            v = spec.quant == Quant::Mxfp8 ? k.mul(v, *divisor) : k.div(v, *divisor);
            // int8 is symmetric: -128 is never written (the cvt's .sat stops at -128).
            if (spec.quant == Quant::Int8) v = k.max(k.min(v, 127.0f), -127.0f);
          }
        }
        if (fp4) {
          store_fp4_pairs(y_row, row_ok, j, shift, out);
        } else {
          store_chunk(k, r.masks, shifted(k, y_row, shift, per_chunk), j, out, hints.row_stores);
        }
      },
      fence);
}

// nvfp4: chunk j's elements (y / its divisor) two a byte, the first in the low nibble
// (cvt.rn.satfinite.e2m1x2.f32), each byte stored where its pair lies inside the row.
void ForwardBuilder::store_fp4_pairs(GlobalDPtr y_row, std::optional<Pred> row_ok, std::uint32_t j,
                                     std::optional<Reg<U32>> shift, const Values& q) {
  Reg<U32> column = k.add(first_column, static_cast<std::uint32_t>(map.chunk_offset(j)));
  if (shift) column = k.mad(*shift, per_chunk, column);
  const GlobalDPtr at_chunk = shifted(k, y_row, shift, per_chunk / 2);
  for (std::size_t e = 0; e + 1 < q.size(); e += 2) {
    const Reg<E2M1x2> pair = k.cvt_pack<E2M1x2>(q[e], q[e + 1]);
    Pred inside = k.setp(Cmp::Lt, k.add(column, static_cast<std::uint32_t>(e)), spec.width);
    if (row_ok) inside = k.and_(inside, *row_ok);
    const auto byte = static_cast<std::int64_t>((map.chunk_offset(j) + e) / 2);
    k.predicated(inside, [&] { k.st((at_chunk + byte).p.as<E2M1x2>(), pair); });
  }
}

// max |y| over the thread's elements of chunk j inside the row (past the width y need not be 0:
// the mean, the weight offset).
Reg<F32> ForwardBuilder::chunk_absmax(std::uint32_t j, std::optional<Reg<U32>> shift,
                                      const Values& y) {
  Reg<U32> chunk_column = first_column;
  if (shift) chunk_column = k.mad(*shift, per_chunk, first_column);
  const Reg<F32> peak = k.mov<F32>(0.0f);
  for (std::size_t e = 0; e < y.size(); ++e) {
    const Reg<U32> column =
        k.add(chunk_column, static_cast<std::uint32_t>(map.chunk_offset(j) + e));
    const Pred inside = k.setp(Cmp::Lt, column, spec.width);
    k.mov(peak, k.selp(k.max(peak, k.abs(y[e])), peak, inside));
  }
  return peak;
}

// The scale of elements whose largest magnitude is absmax, written at y_scale[index] by `writer`,
// and what y is divided by: absmax / the format's largest value, or 1 where absmax is 0 (y / 1 is
// 0 there, where y / 0 is NaN). mxfp8 (OCP MX): 2^e, e = floor(log2(absmax)) − 8 (e4m3's largest
// exponent) within [−127, 127], its ue8m0 byte e + 127 from absmax's exponent bits (a subnormal's
// or 0's: e = −127); y is multiplied by the returned 2^−e (a normal f32, as e ≤ 119): exact.
Reg<F32> ForwardBuilder::write_scale(Reg<F32> absmax, Reg<U32> index, Pred writer) {
  if (spec.quant == Quant::Mxfp8) {
    const Reg<U32> exponent = k.and_(k.shr(k.bitcast<U32>(absmax), 23u), 0xFFu);
    const Reg<U32> code = k.sub(k.max(exponent, 8u), 8u);
    k.predicated(writer, [&] {
      const Reg<F32> as_value[] = {k.cvt<F32>(code)};
      store_values(k, at(k, *p.y_scale, index), as_value);
    });
    return k.bitcast<F32>(k.shl(k.sub(k.mov<U32>(254u), code), 23u));
  }
  if (spec.quant == Quant::Nvfp4) {
    // NVIDIA's NVFP4: s = e4m3(absmax / 6 / global), y divided by s·global (+inf where that is 0,
    // so that q is 0).
    const Reg<F32> wanted = k.div(k.div(absmax, quant_max(spec.quant)), *caller_scale);
    k.predicated(writer, [&] {
      const Reg<F32> as_value[] = {wanted};
      store_values(k, at(k, *p.y_scale, index), as_value);
    });
    const Reg<F32> s =
        k.cvt<F32>(k.unpack<F16>(k.cvt_unpack(k.cvt_pack<E4M3x2>(wanted, wanted)))[0]);
    const Reg<F32> d = k.mul(s, *caller_scale);
    return k.selp<F32>(std::numeric_limits<float>::infinity(), d, k.setp(Cmp::Eq, d, 0.0f));
  }
  const Reg<F32> scale = k.div(absmax, quant_max(spec.quant));
  k.predicated(writer, [&] { k.st(k.index(p.y_scale->p.as<F32>(), index), scale); });
  return k.selp<F32>(1.0f, scale, k.setp(Cmp::Eq, absmax, 0.0f));
}

// The row's absmax over its group (its own scratch) and its one scale, written by lane 0.
Reg<F32> ForwardBuilder::quant_divisor(Reg<U32> row, std::optional<Pred> row_ok, Reg<F32> peak) {
  const Reg<F32> peaks[] = {peak};
  const Reg<F32> absmax =
      group_reduce(k, peaks, Reduction::max(), T, plan.block(), cta.tid, absmax_scratch)[0];
  Pred writer = k.setp(Cmp::Eq, cta.lane, 0u);
  if (row_ok) writer = k.and_(writer, *row_ok);
  return write_scale(absmax, scale_index(row, std::nullopt), writer);
}

// Where the row's scale `block` (none: 0) lies in y_scale, as quant_scale_index says.
Reg<U32> ForwardBuilder::scale_index(Reg<U32> row, std::optional<Reg<U32>> block) {
  const std::uint32_t per_row = quant_scales_per_row(spec);
  if (spec.quant_scale_layout == QuantScaleLayout::RowMajor) {
    if (block) return k.mad(row, per_row, *block);
    return per_row == 1 ? row : k.mul(row, per_row);
  }
  // cuBLAS's tiles of 128 rows × 4 blocks, 512 entries each.
  const Reg<U32> b = block ? *block : k.mov<U32>(0u);
  const Reg<U32> tile = k.mad(k.shr(row, 7u), (per_row + 3) / 4, k.shr(b, 2u));
  const Reg<U32> in_tile = k.mad(k.and_(row, 31u), 16u, k.shl(k.and_(k.shr(row, 5u), 3u), 2u));
  return k.add(k.mad(tile, 512u, in_tile), k.and_(b, 3u));
}

// Chunk j's group scales: the absmax over the scale_group / vec lanes that hold a group (a
// butterfly within the warp), written by the group's first lane at y_scale[row][column / group].
Reg<F32> ForwardBuilder::group_divisor(Reg<U32> row, std::optional<Pred> row_ok, std::uint32_t j,
                                       std::optional<Reg<U32>> shift, const Values& y) {
  Reg<F32> absmax = chunk_absmax(j, shift, y);
  for (std::uint32_t lanes = 1; lanes < scale_group / map.vec; lanes *= 2) {
    absmax = k.max(absmax, k.shfl_bfly(absmax, lanes));
  }
  Reg<U32> column = k.add(first_column, static_cast<std::uint32_t>(map.chunk_offset(j)));
  if (shift) column = k.mad(*shift, per_chunk, column);
  Pred writer = k.and_(k.setp(Cmp::Eq, k.and_(column, scale_group - 1), 0u),
                       k.setp(Cmp::Lt, column, spec.width));
  if (row_ok) writer = k.and_(writer, *row_ok);
  return write_scale(absmax, scale_index(row, div_by(k, column, scale_group)), writer);
}

// shared_weights: the thread's columns of w and b, copied while the first rows load. With one
// row a CTA each thread reads back only what it wrote; several row groups share the columns,
// which the first copies and a barrier hands to the others.
void ForwardBuilder::copy_weights_in() {
  if (!shared.w && !shared.b) return;
  const auto [w_col, b_col] = weight_columns();
  const auto copy_in = [&](const GlobalDPtr& col, const SharedDPtr& to) {
    for (std::uint32_t j = 0; j < map.chunks; ++j) {
      const Values v = load_chunk(k, columns, col, j, hints.weight_loads);
      store_values(k, to + map.chunk_offset(j), v);
    }
  };
  const auto copy_all = [&] {
    if (shared.w) copy_in(*w_col, *shared.w);
    if (shared.b) copy_in(*b_col, *shared.b);
  };
  if (plan.rows_per_cta > 1) {
    k.if_(k.setp(Cmp::Eq, cta.slot, 0u), copy_all);
    k.bar_sync(0);
  } else {
    copy_all();
  }
}

// CTAs (or clusters) walk row groups ctaid, ctaid + nctaid, ... (the grid never exceeds the
// groups, so the first is real) with the rows ahead in flight (a persistent forward loads some).
void ForwardBuilder::walk_rows() {
  const Reg<U32> grid = rank ? k.special(Special::NclusteridX) : k.nctaid_x();
  const std::unique_ptr<RowsAhead> ahead = RowsAhead::make(
      plan, lanes, groups, grid, {&xt}, [&](std::size_t, Reg<U32> row) { return x_row_at(row); });
  if (!ahead) throw Error("a persistent forward loads rows ahead, but its plan has none");
  ahead->start(k, first_group, first_row, RowMasks(k, lanes, groups.row_ok(first_row)));
  copy_weights_in();
  if (slice.started) slice.started->await(k);  // before the walk, which writes peers' slots
  k.for_range(first_group, groups.count(), grid, [&](Reg<U32> g) {
    const Reg<U32> row = groups.row(g);
    ahead->issue(k, g);
    ahead->await_current(k);
    normalize_row(row, groups.row_ok(row));
    ahead->advance(k);
  });
}

LaunchStep ForwardBuilder::build() {
  LaunchStep step;
  if (persistent) {
    walk_rows();
    step.grid.kind = GridRule::Kind::Persistent;
  } else {
    // The grid covers the batch.
    normalize_row(first_row, groups.row_ok(first_row));
    step.grid.kind = GridRule::Kind::RowsPerCta;
  }
  k.finalize();
  step.grid.cluster_ctas = cluster;
  step.contract = k.contract();
  step.grid.rows_per_cta = plan.rows_per_cta;
  step.grid.max_ctas = plan.sm_count * plan.ctas_per_sm;
  return step;
}

}  // namespace

LaunchStep build_forward(Module& m, const NormSpec& spec, const Plan& plan) {
  return ForwardBuilder(m, spec, plan).build();
}

}  // namespace ptxdsl::kernels::detail
