#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "ptxdsl/dsl.hpp"

// The kernel the norms will split rows with, for the executor's and the GPU's cluster tests: one
// row of `width` f32 a cluster of `ctas` CTAs of `threads`; each CTA sums its slice and
// cluster_reduce_sum gives every thread of every CTA the row's total, which it stores at
// y[(row · ctas + rank) · threads + tid]. The caller sets the cluster attribute.
namespace ptxdsl::test {

inline void build_cluster_row_sum(Kernel& k, std::uint32_t ctas, std::uint32_t width,
                                  std::uint32_t threads) {
  k.require_threads(threads);
  ClusterStart started(k);
  const GlobalPtr<F32> x = k.param_ptr<F32>("x"), y = k.param_ptr<F32>("y");
  const SharedPtr<F32> scratch =
      k.shared_array<F32>("scratch", group_reduce_scratch_floats(threads, 1));
  const SharedPtr<F32> slots = k.shared_array<F32>("slots", cluster_reduce_slot_floats(ctas, 1));
  const Reg<U32> tid = k.tid_x(), rank = k.cluster_ctarank();
  const Reg<U32> row_index = k.special(Special::ClusteridX);
  const GlobalPtr<F32> row = k.row(x, row_index, width);
  const std::uint32_t slice = (width + ctas - 1) / ctas;
  const Reg<U32> begin = k.mul(rank, slice);
  const Reg<U32> end = k.min(k.add(begin, slice), width);
  const Reg<F32> sum = k.mov<F32>(0.0f);
  k.for_range(k.add(begin, tid), end, threads,
              [&](Reg<U32> i) { k.add(sum, sum, k.ld(k.index(row, i))); });
  started.await(k);
  const Reg<F32> total = cluster_reduce_sum(k, sum, threads, tid, scratch, ctas, slots);
  k.st(k.index(y, k.mad(k.mad(row_index, ctas, rank), threads, tid)), total);
}

// Rows of values in [-0.25, 0.75), the same on every run.
inline std::vector<float> cluster_row_sum_inputs(std::uint32_t rows, std::uint32_t width) {
  std::vector<float> xs(std::size_t{rows} * width);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    xs[i] = static_cast<float>((i * 7919) % 1009) / 1009.0f - 0.25f;
  }
  return xs;
}

// Every thread of every CTA of row r's cluster holds that row's sum (to float rounding), and all
// of them the same bits.
inline void check_cluster_row_sums(const std::vector<float>& xs, const std::vector<float>& ys,
                                   std::uint32_t rows, std::uint32_t width, std::uint32_t ctas,
                                   std::uint32_t threads) {
  for (std::uint32_t r = 0; r < rows; ++r) {
    double ref = 0, scale = 0;
    for (std::uint32_t i = 0; i < width; ++i) {
      ref += xs[r * width + i];
      scale += std::fabs(xs[r * width + i]);
    }
    INFO("cluster of " << ctas << ", width " << width << ", row " << r);
    const float first = ys[r * ctas * threads];
    CHECK(std::fabs(first - ref) <= 1e-6 * scale + 1e-30);
    for (std::uint32_t t = 0; t < ctas * threads; ++t) {
      if (ys[r * ctas * threads + t] != first) FAIL("thread " << t << " differs");
    }
  }
}

}  // namespace ptxdsl::test
