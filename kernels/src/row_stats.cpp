#include "row_stats.hpp"

namespace ptxdsl::kernels::detail {
namespace {

Reg<F32> pairwise(Kernel& k, const Values& v) {
  return tree_reduce(k, v, Reduction::sum());
}

// Element e of chunk j less c, 0 past the width.
Reg<F32> centered(Kernel& k, const RowLanes& lanes, std::uint32_t j, std::uint32_t e, Reg<F32> v,
                  Reg<F32> c) {
  Reg<F32> d = k.sub(v, c);
  if (const auto ok = lanes.element_valid(j, e)) d = k.selp<F32>(d, 0.0f, *ok);
  return d;
}

}  // namespace

Reg<F32> tree_sum(Kernel& k, const Values& v) {
  return pairwise(k, v);
}

Reg<F32> tree_sum_squares(Kernel& k, const Values& v) {
  Values sq;
  for (Reg<F32> e : v) sq.push_back(k.mul(e, e));
  return pairwise(k, sq);
}

Reg<F32> centered_squares(Kernel& k, const RowLanes& lanes, std::uint32_t j, const Values& v,
                          Reg<F32> mean) {
  Values sq;
  for (std::uint32_t e = 0; e < v.size(); ++e) {
    const Reg<F32> d = centered(k, lanes, j, e, v[e], mean);
    sq.push_back(k.mul(d, d));
  }
  return pairwise(k, sq);
}

ShiftedSums shifted_sums(Kernel& k, const RowLanes& lanes, std::uint32_t j, const Values& v,
                         Reg<F32> shift) {
  Values d, sq;
  for (std::uint32_t e = 0; e < v.size(); ++e) {
    d.push_back(centered(k, lanes, j, e, v[e], shift));
    sq.push_back(k.mul(d.back(), d.back()));
  }
  return {pairwise(k, d), pairwise(k, sq)};
}

Reg<F32> reciprocal_std(Kernel& k, Reg<F32> mean_square, Reg<F32> eps) {
  return rsqrt_rn(k, k.add(mean_square, eps));
}

}  // namespace ptxdsl::kernels::detail
