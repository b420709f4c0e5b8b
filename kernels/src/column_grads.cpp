// The backward in one launch: after its rows, each CTA sums dw = Σ dy·x̂ (and db = Σ dy) over every
// row for tiles of 32 lanes × cv columns, t = ctaid, ctaid + grid, ...; x and dy are read again,
// from L2 at the batches that use this. Warp s of the CTA sums rows s, s + S, s + 2S, ... with
// kUnroll rows' loads in flight at once, and the warps' sums meet in warp order, as in the column
// reduce: the same bits every run.
#include "builders.hpp"

namespace ptxdsl::kernels::detail {

void column_weight_grads(Kernel& k, const NormSpec& spec, const Plan& plan,
                         const ColumnGradInputs& in) {
  const int s = dtype_bytes(spec.dtype);
  // 16-bit pairs in one 4-byte load where every row holds whole, aligned pairs (the row vectors
  // are aligned to plan.vec elements).
  const std::uint32_t cv = s == 2 && plan.vec >= 2 && spec.width % 2 == 0 ? 2 : 1;
  const std::uint32_t C = 32 * cv;
  const std::uint32_t S = plan.block() / 32;
  constexpr std::uint32_t kUnroll = kColumnRowsInFlight;
  const std::uint32_t tiles = (spec.width + C - 1) / C;
  const auto nacc = static_cast<std::uint32_t>(in.outs.size());

  const Reg<U32> tid = k.tid_x();
  const Reg<U32> slice = k.shr(tid, 5u);
  const Reg<U32> lane_column = k.mul(k.and_(tid, 31u), cv);
  const SharedPtr<F32> table = k.shared_array<F32>("column_sums", nacc * S * C);
  k.for_range(k.ctaid_x(), tiles, k.nctaid_x(), [&](Reg<U32> tile) {
    const Reg<U32> column = k.mad(tile, C, lane_column);
    const Pred column_ok = k.setp(Cmp::Lt, column, spec.width);
    const GlobalDPtr x_col = at(k, in.x, column);
    const GlobalDPtr dy_col = at(k, in.dy, column);
    std::vector<std::vector<Reg<F32>>> sums(nacc);
    for (auto& sum : sums) {
      for (std::uint32_t e = 0; e < cv; ++e) sum.push_back(k.mov<F32>(0.0f));
    }
    k.for_range(slice, in.batch, S * kUnroll, [&](Reg<U32> first) {
      // Every load of the kUnroll rows first, then the sums; rows past the batch read nothing and
      // add zeros.
      struct Loaded {
        Raw x, dy;
        std::vector<Raw> stats;  // mean (layer norm), rstd
      };
      std::vector<Loaded> rows;
      for (std::uint32_t u = 0; u < kUnroll; ++u) {
        const Reg<U32> row = u == 0 ? first : k.add(first, u * S);
        const Pred ok = u == 0 ? column_ok : k.and_(column_ok, k.setp(Cmp::Lt, row, in.batch));
        Loaded l;
        l.x = load_raw(k, row_of(k, x_col, row, in.stride), cv, ok, kNcNoAllocate);
        l.dy = load_raw(k, row_of(k, dy_col, row, in.stride), cv, ok, kNcNoAllocate);
        if (in.mean) l.stats.push_back(load_raw(k, at(k, *in.mean, row), 1, ok, kNc));
        l.stats.push_back(load_raw(k, at(k, in.rstd, row), 1, ok, kNc));
        rows.push_back(std::move(l));
      }
      for (const Loaded& l : rows) {
        const std::vector<Reg<F32>> xv = decode(k, l.x);
        const std::vector<Reg<F32>> dyv = decode(k, l.dy);
        const Reg<F32> rstd = decode(k, l.stats.back())[0];
        for (std::uint32_t e = 0; e < cv; ++e) {
          const Reg<F32> xhat =
              in.mean ? k.mul(k.sub(xv[e], decode(k, l.stats[0])[0]), rstd) : k.mul(xv[e], rstd);
          k.fma(sums[0][e], dyv[e], xhat, sums[0][e]);          // dw += dy·x̂
          if (nacc > 1) k.add(sums[1][e], sums[1][e], dyv[e]);  // db += dy
        }
      }
    });
    store_slice_sums(k, SliceSums{table, tid, slice, 32, S, cv, sums}, in.outs, column, column_ok,
                     spec.weight_dtype);
    k.bar_sync(0);  // slice 0 has read the table before the next tile writes it
  });
}

}  // namespace ptxdsl::kernels::detail
