// The backward in one launch (WeightGrads::SingleLaunch): after its rows, each CTA sums dw = Σ dy·x̂
// (and db = Σ dy) over every row for tiles of columns t = ctaid, ctaid + grid, ...; x and dy are
// read again, from L2 at the batches that use this. A warp's load covers `lanes` lanes × cv columns
// of each of 32 / lanes rows (plan.column_row_lanes); warp s of the CTA walks rows from s · 32 /
// lanes, kColumnRowsInFlight loads in flight at once. The rows of a warp meet by a butterfly, the
// warps in shared memory in warp order (as in the column reduce): the same bits every run.
#include <algorithm>
#include <bit>

#include "model_numerics.hpp"
#include "row_address.hpp"
#include "weight_grads.hpp"

namespace ptxdsl::kernels::detail {
namespace {

// dw (and db) into `outs`.
void column_weight_grads(Kernel& k, const NormSpec& spec, const Plan& plan, const RowInputs& in,
                         const std::vector<GlobalDPtr>& outs) {
  const std::uint32_t cv = plan.column_vec;
  const std::uint32_t rows_a_load = plan.column_row_lanes;
  const std::uint32_t lanes = 32 / rows_a_load;  // across the columns
  const std::uint32_t C = plan.column_width();
  const std::uint32_t S = plan.block() / 32;
  const std::uint32_t rows_a_round = S * rows_a_load * kColumnRowsInFlight;
  const auto nacc = static_cast<std::uint32_t>(outs.size());

  const Reg<U32> tid = k.tid_x();
  const Reg<U32> slice = k.shr(tid, 5u);
  const Reg<U32> lane = k.and_(tid, 31u);
  const Reg<U32> column_lane = k.and_(lane, lanes - 1);
  const Reg<U32> row_lane = k.shr(lane, static_cast<std::uint32_t>(std::countr_zero(lanes)));
  const Reg<U32> lane_column = k.mul(column_lane, cv);
  const Reg<U32> first_row = k.mad(slice, rows_a_load, row_lane);
  const SharedPtr<F32> table = k.shared_array<F32>("column_sums", nacc * S * lanes * cv);
  k.for_range(k.ctaid_x(), plan.column_tiles(), k.nctaid_x(), [&](Reg<U32> tile) {
    const Reg<U32> column = k.mad(tile, C, lane_column);
    const Pred column_ok = k.setp(Cmp::Lt, column, spec.width);
    const GlobalDPtr x_col = at(k, in.x, column);
    const GlobalDPtr dy_col = at(k, in.dy, column);
    std::vector<std::vector<Reg<F32>>> sums(nacc);
    for (auto& sum : sums) {
      for (std::uint32_t e = 0; e < cv; ++e) sum.push_back(k.mov<F32>(0.0f));
    }
    k.for_range(first_row, in.batch, rows_a_round, [&](Reg<U32> first) {
      // Every load of the round first, then the sums; rows past the batch read nothing and add
      // zeros.
      struct Loaded {
        Raw x, dy;
        std::vector<Raw> stats;  // mean (layer norm), rstd
      };
      std::vector<Loaded> rows;
      for (std::uint32_t u = 0; u < kColumnRowsInFlight; ++u) {
        const Reg<U32> row = u == 0 ? first : k.add(first, u * S * rows_a_load);
        const Pred ok = u == 0 ? column_ok : k.and_(column_ok, k.setp(Cmp::Lt, row, in.batch));
        Loaded l;
        l.x = load_raw(k, row_start(k, spec, x_col, row, in.stride), cv, ok, kNcNoAllocate);
        l.dy = load_raw(k, row_start(k, spec, dy_col, row, in.stride), cv, ok, kNcNoAllocate);
        if (in.mean) l.stats.push_back(load_raw(k, at(k, *in.mean, row), 1, ok, kNc));
        l.stats.push_back(load_raw(k, at(k, in.rstd, row), 1, ok, kNc));
        rows.push_back(std::move(l));
      }
      for (const Loaded& l : rows) {
        const std::vector<Reg<F32>> xv = decode(k, l.x);
        const std::vector<Reg<F32>> dyv = decode(k, l.dy);
        const Reg<F32> rstd = decode(k, l.stats.back())[0];
        const auto normalized = [&](std::uint32_t e) {
          return in.mean ? k.mul(k.sub(xv[e], decode(k, l.stats[0])[0]), rstd) : k.mul(xv[e], rstd);
        };
        for_each_xhat(k, spec, cv, normalized, [&](std::size_t e, Reg<F32> xhat) {
          k.fma(sums[0][e], dyv[e], xhat, sums[0][e]);          // dw += dy·x̂
          if (nacc > 1) k.add(sums[1][e], sums[1][e], dyv[e]);  // db += dy
        });
      }
    });
    // The rows that shared a warp's loads, added by a butterfly over the row-lane bits.
    for (auto& sum : sums) {
      for (Reg<F32>& v : sum) {
        for (std::uint32_t mask = lanes; mask < 32; mask *= 2) v = k.add(v, k.shfl_bfly(v, mask));
      }
    }
    std::optional<Pred> holds;
    if (rows_a_load > 1) holds = k.setp(Cmp::Eq, row_lane, 0u);
    store_slice_sums(
        k, SliceSums{table, k.mad(slice, lanes, column_lane), slice, lanes, S, cv, sums, holds},
        outs, column, column_ok, spec.weight_dtype);
    k.bar_sync(0);  // slice 0 has read the table before the next tile writes it
  });
}

// Nothing adds up by rows; the CTAs' grid covers the tiles of columns too (a CTA for each, rows
// or not).
class ColumnSums final : public WeightGradSums {
 public:
  ColumnSums(const NormSpec& spec, const Plan& plan) : spec_(spec), plan_(plan) {}
  std::string_view entry_step() const override { return "single"; }
  void declare(Kernel& k) override {
    grads_.push_back(param_dptr(k, NormArg::Dw, spec_.weight_dtype));
    if (has_bias(spec_)) grads_.push_back(param_dptr(k, NormArg::Db, spec_.weight_dtype));
  }
  void start(Kernel&, const BackwardRows&) override {}
  std::vector<int> pass_keys(std::vector<int> keys) const override { return keys; }
  void add(Kernel&, std::uint32_t, const Values&, const Values&, std::optional<Reg<U32>>) override {
  }
  void finish(Kernel& k, const RowInputs& in, ChunkFence) override {
    column_weight_grads(k, spec_, plan_, in, grads_);
  }
  void size_grid(GridRule& grid) const override {
    grid.min_ctas = std::min(plan_.column_tiles(), grid.max_ctas);
  }

 private:
  const NormSpec& spec_;
  const Plan& plan_;
  std::vector<GlobalDPtr> grads_;
};

}  // namespace

std::unique_ptr<WeightGradSums> column_sums(const NormSpec& spec, const Plan& plan) {
  return std::make_unique<ColumnSums>(spec, plan);
}

}  // namespace ptxdsl::kernels::detail
