#include "row_stats.hpp"

namespace ptxdsl::kernels::detail {
namespace {

Reg<F32> pairwise(Kernel& k, Values v) {
  while (v.size() > 1) {
    Values next;
    for (std::size_t i = 0; i + 1 < v.size(); i += 2) next.push_back(k.add(v[i], v[i + 1]));
    if (v.size() % 2) next.push_back(v.back());
    v = std::move(next);
  }
  return v.at(0);
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
    Reg<F32> d = k.sub(v[e], mean);
    if (const auto ok = lanes.element_valid(j, e)) d = k.selp<F32>(d, 0.0f, *ok);
    sq.push_back(k.mul(d, d));
  }
  return pairwise(k, sq);
}

LocalMoments local_moments(Kernel& k, const RowLanes& lanes, Reg<F32> sum) {
  const RowMap& m = lanes.map();
  const auto whole = static_cast<float>(m.chunks * m.vec);
  // Lanes past the width's end hold a vector less than the rest, the lane at the end the tail.
  const float ragged = whole - static_cast<float>(m.vec) + static_cast<float>(m.tail());
  const float nothing = whole - static_cast<float>(m.vec);
  const auto inverse = [](float n) { return n > 0 ? 1.0f / n : 0.0f; };
  LocalMoments lm;
  lm.count = lanes.by_last_chunk(k, whole, ragged, nothing);
  const Reg<F32> inv = lanes.by_last_chunk(k, inverse(whole), inverse(ragged), inverse(nothing));
  lm.mean = k.mul(sum, inv, kRn);
  return lm;
}

std::vector<Reg<F32>> merge_moments(Kernel& k, std::span<const Reg<F32>> a,
                                    std::span<const Reg<F32>> b) {
  // .rn everywhere: ptxas may not contract a product and a sum into an fma, which would round
  // the two orders differently.
  const Reg<F32> n = k.add(a[0], b[0], kRn);
  const Reg<F32> inv = k.rcp(k.max(n, 1.0f), kRn);
  const Reg<F32> mean = k.mul(k.add(k.mul(a[0], a[1], kRn), k.mul(b[0], b[1], kRn), kRn), inv, kRn);
  const Reg<F32> d = k.sub(b[1], a[1], kRn);
  const Reg<F32> weight = k.mul(k.mul(a[0], b[0], kRn), inv, kRn);
  const Reg<F32> m2 = k.add(k.add(a[2], b[2], kRn), k.mul(k.mul(d, d, kRn), weight, kRn), kRn);
  return {n, mean, m2};
}

Reg<F32> reciprocal_std(Kernel& k, Reg<F32> mean_square, Reg<F32> eps) {
  return k.rcp(k.sqrt(k.add(mean_square, eps)));
}

}  // namespace ptxdsl::kernels::detail
