// Warp and group reductions: the instruction shape for each group size, and that every
// shape assembles without local memory.
#include <fmt/format.h>

#include <cstdio>
#include <vector>

#include "support.hpp"

using namespace ptxdsl;

namespace {

struct Shape {
  std::uint32_t group;
  std::uint32_t block;
  int values;
};

// One CTA reduces `values` sums (or maxima) per group of `group` threads and writes group results.
void build_reduce(Module& m, const Shape& s, ReduceOp op) {
  Kernel& k = m.kernel(fmt::format("reduce_{}_g{}_b{}_v{}", op == ReduceOp::Sum ? "sum" : "max",
                                   s.group, s.block, s.values));
  GlobalPtr<F32> x = k.param_ptr<F32>("x");
  GlobalPtr<F32> y = k.param_ptr<F32>("y");
  k.require_threads(s.block);
  SharedPtr<F32> scratch =
      k.shared_array<F32>("scratch", group_reduce_scratch_floats(s.block, s.values));
  Reg<U32> tid = k.tid_x();
  std::vector<Reg<F32>> values;
  for (int i = 0; i < s.values; ++i) values.push_back(k.ld(k.index(x, tid) + i * s.block));
  const std::vector<Reg<F32>> out = group_reduce(k, values, op, s.group, s.block, tid, scratch);
  for (int i = 0; i < s.values; ++i) k.st(k.index(y, tid) + i * s.block, out[i]);
}

}  // namespace

TEST_CASE("group_reduce shapes: warp butterflies and then shared partials", "[dsl][reduce]") {
  const Shape shapes[] = {{1, 32, 1},    {8, 64, 1},    {16, 128, 2},   {32, 256, 1},
                          {64, 128, 1},  {96, 192, 1},  {128, 128, 2},  {256, 256, 1},
                          {256, 512, 3}, {512, 512, 1}, {1024, 1024, 2}};
  for (Arch arch : test::kArches) {
    Module m(arch);
    for (const Shape& s : shapes) {
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) build_reduce(m, s, op);
    }
    test::require_assembles(m, /*no_spills=*/true);
    for (const auto& k : m.kernels()) {
      const std::string body = test::body_text(*k);
      INFO(k->name() << "\n" << body);
      const KernelContract c = k->contract();
      const std::uint32_t block = c.block_threads;
      // Decode the shape from the name's numbers rather than repeat the table.
      std::uint32_t group = 0, b = 0;
      int values = 0;
      const std::size_t g_at = k->name().find("_g");
      REQUIRE(std::sscanf(k->name().c_str() + g_at, "_g%u_b%u_v%d", &group, &b, &values) == 3);
      CHECK(b == block);
      const std::uint32_t lanes = group < 32 ? group : 32;
      int butterflies = 0;
      for (std::uint32_t w = lanes / 2; w >= 1; w /= 2) ++butterflies;
      if (group <= 32) {
        CHECK(test::count(body, "shfl.sync.bfly.b32") == butterflies * values);
        CHECK(test::count(body, "bar.sync") == 0);
        CHECK(test::count(body, "st.shared") == 0);
      } else {
        const std::uint32_t warps = group / 32;
        std::uint32_t width = 1;
        while (width < warps) width *= 2;
        int second = 0;
        for (std::uint32_t w = width / 2; w >= 1; w /= 2) ++second;
        CHECK(test::count(body, "shfl.sync.bfly.b32") == (5 + second) * values);
        CHECK(test::count(body, "bar.sync 0;") == 1);
        CHECK(test::count(body, "st.shared.f32") == values);
        CHECK(test::count(body, "ld.shared.f32") == values);
        // Lanes past the partials read nothing: the loads are predicated, with the identity.
        CHECK(test::count(body, "ld.shared.f32") == test::count(body, " ld.shared.f32"));
        CHECK(test::count(body, "shfl.sync.idx.b32") == (width < 32 ? values : 0));
      }
    }
  }
}

TEST_CASE("block_reduce_sum is group_reduce over the whole CTA", "[dsl][reduce]") {
  Module m;
  Kernel& k = m.kernel("block_sum");
  GlobalPtr<F32> x = k.param_ptr<F32>("x");
  k.require_threads(256);
  SharedPtr<F32> scratch = k.shared_array<F32>("partials", group_reduce_scratch_floats(256, 1));
  Reg<U32> tid = k.tid_x();
  Reg<F32> v = k.ld(k.index(x, tid));
  Reg<F32> sum = block_reduce_sum(k, v, 256, tid, scratch);
  k.if_(k.setp(Cmp::Eq, tid, 0u), [&] { k.st(x, sum); });
  const std::string body = test::body_text(k);
  CHECK(test::count(body, "shfl.sync.bfly.b32") == 5 + 3);
  CHECK(test::count(body, "@%p") >= 2);  // the lane-0 store and the predicated partial load
  CHECK(k.contract().static_shared_bytes == 8 * 4);
  test::require_assembles(m, /*no_spills=*/true);
}

TEST_CASE("group_reduce of no values emits nothing", "[dsl][reduce]") {
  Module m;
  Kernel& k = m.kernel("nothing");
  const SharedPtr<F32> scratch = k.shared_array<F32>("scratch", 8);
  const Reg<U32> tid = k.tid_x();
  const std::size_t before = k.instructions().size();
  CHECK(
      group_reduce(k, std::span<const Reg<F32>>{}, ReduceOp::Sum, 256, 256, tid, scratch).empty());
  CHECK(k.instructions().size() == before);
}
