// Layer norm and RMS norm backward on a persistent grid. Each CTA walks row groups g = ctaid,
// ctaid + gridDim, ...; per row it loads x and dy once, reduces Σ x̂·g (and Σ g) over the row
// group, and writes dx. dw (and db) add up in f32 registers, each thread always owning the same
// columns, and leave the CTA as one f32 partial row in the workspace for the column reduce.
#include <fmt/format.h>

#include "builders.hpp"
#include "cta_layout.hpp"
#include "row_stats.hpp"

namespace ptxdsl::kernels::detail {
namespace {

// One accumulator (dw or db) over this thread's columns: per chunk, f32 registers or the CTA's
// partial row in the workspace (read-modify-write by the owning thread only).
struct Accumulator {
  std::vector<Values> regs;
  GlobalDPtr row_start;    // the CTA's partial row
  GlobalDPtr partial_row;  // this thread's first column in it
};

Values zeros(Kernel& k, std::uint32_t n) {
  Values v;
  for (std::uint32_t i = 0; i < n; ++i) v.push_back(k.mov<F32>(0.0f));
  return v;
}

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
      r.f32 = accs[a].regs[j];
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
    const GlobalPtr<F32> out = k.index(accs[a].row_start.p.as<F32>(), cta.tid);
    for (std::uint32_t first = 0; first < plan.width; first += block) {
      Reg<F32> sum = k.ld(column + static_cast<std::int64_t>(a * R * span + first));
      for (std::uint32_t r = 1; r < R; ++r) {
        sum = k.add(sum, k.ld(column + static_cast<std::int64_t>(a * R * span + r * span + first)));
      }
      if (first + block <= plan.width) {
        k.st(out + first, sum);
      } else {
        k.st_if(k.setp(Cmp::Lt, cta.tid, plan.width - first), out + first, sum);
      }
    }
  }
}

}  // namespace

std::uint32_t partial_pitch(std::uint32_t width) {
  return (width + 3) / 4 * 4;
}

LaunchStep build_backward(Module& m, const NormSpec& spec, const Plan& plan) {
  const bool ln = spec.kind == NormKind::LayerNormBwd;
  Kernel& k = m.kernel(entry_name(spec));
  k.require_threads(plan.block());

  // Parameters, in the contract's order.
  const GlobalDPtr x = param_dptr(k, "x", spec.dtype);
  const GlobalDPtr w = param_dptr(k, "w", spec.weight_dtype);
  std::optional<GlobalDPtr> mean_in;
  if (ln) mean_in = param_dptr(k, "mean", DType::F32);
  const GlobalDPtr rstd_in = param_dptr(k, "rstd", DType::F32);
  const GlobalDPtr dy = param_dptr(k, "dy", spec.dtype);
  const GlobalDPtr dx = param_dptr(k, "dx", spec.dtype);
  std::vector<GlobalDPtr> partials{param_dptr(k, "partial_dw", DType::F32)};
  if (ln) partials.push_back(param_dptr(k, "partial_db", DType::F32));
  const Reg<U32> batch = k.param<U32>("batch");
  const Reg<U32> stride = k.param<U32>("stride");

  const CtaLayout cta = cta_layout(k, plan);
  const RowMap map = RowMap::of(plan);
  const std::uint32_t T = plan.threads_per_row;
  const std::uint32_t R = plan.rows_per_cta;
  const RowLanes lanes(k, map, cta.lane);
  const RowMasks columns(k, lanes, std::nullopt);

  // Dynamic shared memory: [x staging][dy staging][merge of the row slots' partials].
  const int s = dtype_bytes(spec.dtype);
  const std::uint32_t staging = plan.staging_bytes(s, 1);
  const std::uint32_t span = plan.chunks * T * plan.vec;
  const std::uint32_t merge =
      R > 1 ? static_cast<std::uint32_t>(partials.size()) * R * span * 4 : 0;
  std::optional<SharedPtr<B32>> dynamic;
  if (2 * staging + merge > 0) dynamic = k.shared_dynamic<B32>("stage", 2 * staging + merge);
  std::optional<SharedDPtr> x_stage, dy_stage;
  if (staging > 0) {
    x_stage = staging_for(k, {*dynamic, spec.dtype}, plan, cta.slot, lanes.first_element());
    dy_stage = *x_stage + staging / s;
  }

  // Accumulators: registers start at zero; workspace-resident columns are zeroed by their owner.
  const Reg<U32> cta_id = k.ctaid_x();
  std::vector<Accumulator> accs(partials.size());
  for (std::size_t a = 0; a < accs.size(); ++a) {
    accs[a].row_start = row_of(k, partials[a], cta_id, partial_pitch(spec.width));
    accs[a].partial_row = at(k, accs[a].row_start, lanes.first_element());
    accs[a].regs.resize(plan.chunks);
    for (std::uint32_t j = 0; j < plan.chunks; ++j) {
      const Values z = zeros(k, plan.vec);
      if (plan.accum[j] == Place::Registers) {
        accs[a].regs[j] = z;
      } else {
        store_chunk(k, columns, accs[a].partial_row, j, z, kNoHints);
      }
    }
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

  const Reg<U32> groups = R == 1 ? batch : div_by(k, k.add(batch, R - 1), R);
  k.for_range(cta_id, groups, k.nctaid_x(), [&](Reg<U32> g) {
    const Reg<U32> row = R == 1 ? g : k.mad(g, R, cta.slot);
    std::optional<Pred> row_ok;
    if (R > 1) row_ok = k.setp(Cmp::Lt, row, batch);
    const RowMasks masks(k, lanes, row_ok);

    const GlobalDPtr x_row = at(k, row_of(k, x, row, stride), lanes.first_element());
    const GlobalDPtr dy_row = at(k, row_of(k, dy, row, stride), lanes.first_element());
    const auto row_stat = [&](GlobalDPtr p) {
      return decode(k, load_raw(k, at(k, p, row), 1, row_ok, kNc))[0];
    };
    std::optional<Reg<F32>> mean;
    if (ln) mean = row_stat(*mean_in);
    const Reg<F32> rstd = row_stat(rstd_in);
    RowTile xt(plan.data, x_row, x_stage, kNcNoAllocate);
    RowTile dyt(plan.data, dy_row, dy_stage, kNcNoAllocate);
    xt.load(k, masks);
    dyt.load(k, masks);

    // x̂ = (x − mean)·rstd (or x·rstd) and g = w·dy, for chunk j; masked elements give g = 0.
    struct Terms {
      Values xhat, g, dy;
    };
    const auto terms = [&](std::uint32_t j) {
      Terms t;
      const Values xv = xt.get(k, masks, j);
      t.dy = dyt.get(k, masks, j);
      const Values wv = decode_chunk(k, columns, j, issue_chunk(k, columns, w_col, j, kNc));
      for (std::uint32_t e = 0; e < plan.vec; ++e) {
        t.xhat.push_back(ln ? k.mul(k.sub(xv[e], *mean), rstd) : k.mul(xv[e], rstd));
        t.g.push_back(k.mul(wv[e], t.dy[e]));
      }
      return t;
    };

    // Pass 1: Σ x̂·g, Σ g, and dw += dy·x̂, db += dy.
    RunningSum sum_xg, sum_g;
    for (std::uint32_t j = 0; j < plan.chunks; ++j) {
      const Terms t = terms(j);
      Values xg;
      for (std::uint32_t e = 0; e < plan.vec; ++e) xg.push_back(k.mul(t.xhat[e], t.g[e]));
      sum_xg.add(k, tree_sum(k, xg));
      if (ln) sum_g.add(k, tree_sum(k, t.g));
      for (std::size_t a = 0; a < accs.size(); ++a) {
        const bool dw = a == 0;
        if (plan.accum[j] == Place::Registers) {
          for (std::uint32_t e = 0; e < plan.vec; ++e) {
            Reg<F32> acc = accs[a].regs[j][e];
            if (dw) {
              k.fma(acc, t.dy[e], t.xhat[e], acc);
            } else {
              k.add(acc, acc, t.dy[e]);
            }
          }
        } else {
          Values old = decode_chunk(k, columns, j,
                                    issue_chunk(k, columns, accs[a].partial_row, j, kNoHints));
          for (std::uint32_t e = 0; e < plan.vec; ++e) {
            old[e] = dw ? k.fma(t.dy[e], t.xhat[e], old[e]) : k.add(old[e], t.dy[e]);
          }
          store_chunk(k, columns, accs[a].partial_row, j, old, kNoHints);
        }
      }
    }
    std::vector<Reg<F32>> sums{sum_xg.value(k)};
    if (ln) sums.push_back(sum_g.value(k));
    const SharedPtr<F32> cur = T > 32 ? k.index(scratch, scratch_offset) : scratch;
    const auto total = group_reduce(k, sums, ReduceOp::Sum, T, plan.block(), cta.tid, cur);
    const Reg<F32> c1 = k.mul(total[0], inv_width);
    std::optional<Reg<F32>> c2;
    if (ln) c2 = k.mul(total[1], inv_width);

    // Pass 2: dx = (g − (x̂·c1 + c2))·rstd.
    const GlobalDPtr dx_row = at(k, row_of(k, dx, row, stride), lanes.first_element());
    for (std::uint32_t j = 0; j < plan.chunks; ++j) {
      const Terms t = terms(j);
      Values out;
      for (std::uint32_t e = 0; e < plan.vec; ++e) {
        const Reg<F32> fit = ln ? k.fma(t.xhat[e], c1, *c2) : k.mul(t.xhat[e], c1);
        out.push_back(k.mul(k.sub(t.g[e], fit), rstd));
      }
      store_chunk(k, masks, dx_row, j, out, kStreaming);
    }
    if (T > 32) k.mov(scratch_offset, k.xor_(scratch_offset, scratch_floats));
  });

  // The CTA's partial rows.
  if (R > 1) {
    const SharedPtr<F32> merge_base{dynamic->base, 2 * static_cast<std::int64_t>(staging)};
    merge_row_slots(k, plan, cta, lanes, merge_base, accs);
  } else {
    for (const Accumulator& acc : accs) {
      for (std::uint32_t j = 0; j < plan.chunks; ++j) {
        if (plan.accum[j] == Place::Registers) {
          store_chunk(k, columns, acc.partial_row, j, acc.regs[j], kNoHints);
        }
      }
    }
  }
  k.finalize();

  LaunchStep step;
  step.contract = k.contract();
  step.grid.kind = GridRule::Kind::Persistent;
  step.grid.rows_per_cta = R;
  step.grid.max_ctas = plan.sm_count * plan.ctas_per_sm;
  step.grid.min_row_groups = plan.min_row_groups_per_cta;
  return step;
}

}  // namespace ptxdsl::kernels::detail
