#include <catch2/catch.hpp>

#include <limits>
#include <string>
#include <vector>

#include "cluster_row_sum.hpp"
#include "gpu_support.hpp"
#include "ptxdsl/dsl.hpp"
#include "ptxdsl/runtime.hpp"

// Thread-block clusters on the GPU: a kernel whose CTAs sum their slices of a row and combine them
// through distributed shared memory (cluster_reduce_sum, as the executor's tests run it), launched
// in the clusters its contract fixes and in clusters given at launch; the launch checks; the
// non-portable size; cuOccupancyMaxActiveClusters.
using namespace ptxdsl;
using namespace ptxdsl::runtime;

namespace {

constexpr std::uint32_t kThreads = 96;

struct Built {
  std::string ptx;
  KernelContract contract;
};

// The cluster row sum (tests/support/cluster_row_sum.hpp) with `ctas` CTAs a cluster. `fixed`:
// .reqnctapercluster; otherwise .explicitcluster.
Built row_sum(std::uint32_t ctas, std::uint32_t width, bool fixed) {
  Module m(Arch::Sm90);
  Kernel& k = m.kernel("row_sum");
  if (fixed) {
    k.require_cluster({ctas, 1, 1});
  } else {
    k.explicit_cluster();
  }
  test::build_cluster_row_sum(k, ctas, width, kThreads);
  return {m.emit(), k.contract()};
}

Function load(const Context& ctx, const Built& b) {
  return Function(ModuleCache::global().get(ctx, b.ptx, b.contract.entry), b.contract);
}

}  // namespace

TEST_CASE("kernels launch in clusters, fixed by the contract or given at launch",
          "[runtime][gpu][cluster]") {
  PTXDSL_REQUIRE_GPU(ctx);
  if (!ctx.info().model.has_clusters()) PTXDSL_SKIP("the device has no thread-block clusters");
  constexpr std::uint32_t kRows = 5;
  Stream s(ctx);
  for (const std::uint32_t ctas : {1u, 2u, 4u, 8u}) {
    for (const std::uint32_t width : {1u, 1000u, 4097u}) {
      const std::vector<float> xs = test::cluster_row_sum_inputs(kRows, width);
      DeviceBuffer<float> x(ctx, std::span<const float>(xs));
      DeviceBuffer<float> y(ctx, kRows * ctas * kThreads);
      for (const bool fixed : {true, false}) {
        INFO((fixed ? ".reqnctapercluster" : ".explicitcluster"));
        const Function f = load(ctx, row_sum(ctas, width, fixed));
        y.fill(std::numeric_limits<float>::quiet_NaN());
        if (fixed) {
          launch(f, kRows * ctas, kThreads, 0, s, x, y);
        } else {
          launch_clustered(f, kRows * ctas, {ctas, 1, 1}, kThreads, 0, s, x, y);
        }
        s.synchronize();
        test::check_cluster_row_sums(xs, y.to_host(), kRows, width, ctas, kThreads);
      }
    }
  }
}

TEST_CASE("cluster launches are checked against the contract before the driver sees them",
          "[runtime][gpu][cluster]") {
  PTXDSL_REQUIRE_GPU(ctx);
  if (!ctx.info().model.has_clusters()) PTXDSL_SKIP("the device has no thread-block clusters");
  Stream s(ctx);
  DeviceBuffer<float> x(ctx, 64), y(ctx, 8 * kThreads);
  const Function fixed = load(ctx, row_sum(4, 16, true));
  const Function any = load(ctx, row_sum(2, 16, false));
  CHECK_THROWS_WITH(launch(fixed, 6, kThreads, 0, s, x, y),
                    "launch of 'row_sum': the grid (6, 1, 1) must be a whole number of clusters "
                    "(4, 1, 1) in each dimension");
  CHECK_THROWS_WITH(launch_clustered(fixed, 8, {2, 1, 1}, kThreads, 0, s, x, y),
                    "launch of 'row_sum': the cluster must be (4, 1, 1) CTAs, as "
                    ".reqnctapercluster fixes it, got (2, 1, 1)");
  CHECK_THROWS_WITH(launch(any, 2, kThreads, 0, s, x, y),
                    Catch::Contains("the kernel is .explicitcluster: launch it with cluster "
                                    "dimensions"));
  // What passed the checks runs: the context is still usable.
  launch(fixed, 8, kThreads, 0, s, x, y);
  s.synchronize();
}

TEST_CASE("clusters of 16 CTAs opt into the non-portable size; occupancy counts clusters",
          "[runtime][gpu][cluster]") {
  PTXDSL_REQUIRE_GPU(ctx);
  const DeviceModel& model = ctx.info().model;
  if (model.max_cluster_size_nonportable < 16) PTXDSL_SKIP("the device has no 16-CTA clusters");
  // Each thread writes its CTA's rank and the cluster's size.
  Module m(Arch::Sm90);
  Kernel& k = m.kernel("ranks");
  k.require_threads(32);
  k.explicit_cluster();
  const GlobalPtr<U32> out = k.param_ptr<U32>("out");
  k.if_(k.tid_x() == 0u, [&] {
    const Reg<U32> cta = k.ctaid_x();
    k.st(k.index(out, k.mul(cta, 2u)), k.cluster_ctarank());
    k.st(k.index(out, k.add(k.mul(cta, 2u), 1u)), k.cluster_nctarank());
  });
  const Function f(ModuleCache::global().get(ctx, m.emit(), "ranks"), k.contract());
  Stream s(ctx);
  DeviceBuffer<std::uint32_t> ranks(ctx, 2 * 32);
  launch_clustered(f, 32, {16, 1, 1}, 32, 0, s, ranks);
  s.synchronize();
  const std::vector<std::uint32_t> got = ranks.to_host();
  for (std::uint32_t cta = 0; cta < 32; ++cta) {
    CHECK(got[2 * cta] == cta % 16);
    CHECK(got[2 * cta + 1] == 16u);
  }
  CHECK(max_active_clusters(f, {16, 1, 1}, 32, 0) >= 1u);
  const std::uint32_t pairs = max_active_clusters(f, {2, 1, 1}, 32, 0);
  CHECK(pairs >= model.sm_count / 2);
  CHECK_THROWS_WITH(max_active_clusters(f, {0, 1, 1}, 32, 0),
                    Catch::Contains("the cluster must hold at least one CTA"));
}
