#include <catch2/catch.hpp>

#include <numeric>

#include "support.hpp"

using namespace ptxdsl;
using Catch::Matchers::Contains;

namespace {

// Runs a kernel whose first parameter is a u32 `out` array, one element per thread of the grid.
std::vector<std::uint32_t> run_out(Kernel& k, Dim3 grid, Dim3 block, ExecOptions opt = {},
                                   LaunchStats* stats = nullptr) {
  k.finalize();
  std::vector<std::uint32_t> out(grid.count() * block.count(), 0xDEADBEEFu);
  CpuDevice dev;
  const LaunchStats s = dev.launch(k, {grid, block}, {dev.map<std::uint32_t>(out, "out")}, opt);
  if (stats) *stats = s;
  return out;
}

Reg<U32> global_thread(Kernel& k) {
  return k.mad(k.ctaid_x(), k.ntid_x(), k.tid_x());
}

}  // namespace

TEST_CASE("divergent if/else reconverges before a full-warp shuffle", "[executor][control]") {
  Module m;
  Kernel& k = m.kernel("diverge");
  auto out = k.param_ptr<U32>("out");
  Reg<U32> t = k.tid_x();
  Reg<U32> v = k.mov<U32>(0u);
  k.if_else(
      k.setp(Cmp::Ne, k.and_(t, 1u), 0u), [&] { k.mov(v, k.mul(t, 10u)); },
      [&] {
        k.if_(k.setp(Cmp::Lt, t, 8u), [&] { k.mov(v, k.add(t, 1000u)); });
        k.if_(k.setp(Cmp::Ge, t, 8u), [&] { k.mov(v, k.add(t, 2000u)); });
      });
  k.st(k.index(out, t), k.shfl_bfly(v, 1u));
  const auto got = run_out(k, 1, 64);
  for (std::uint32_t i = 0; i < 64; ++i) {
    const std::uint32_t j = i ^ 1u;
    const std::uint32_t want = j & 1u ? j * 10 : (j < 8 ? j + 1000 : j + 2000);
    CHECK(got[i] == want);
  }
}

TEST_CASE("loops with per-thread trip counts reconverge; guarded ret exits some lanes",
          "[executor][control]") {
  Module m;
  Kernel& k = m.kernel("loops");
  auto out = k.param_ptr<U32>("out");
  Reg<U32> t = k.tid_x();
  Reg<U32> sum = k.mov<U32>(0u);
  k.for_range(0u, t, 1u,
              [&](Reg<U32> i) { k.for_range(0u, 2u, 1u, [&](Reg<U32>) { k.add(sum, sum, i); }); });
  k.st(k.index(out, t), k.shfl_down(sum, 1u));
  k.predicated(k.setp(Cmp::Ge, t, 16u), [&] { k.ret(); });
  k.st(k.index(out, t), k.add(k.ld(k.index(out, t)), 1u));
  const auto got = run_out(k, 1, 32);
  for (std::uint32_t i = 0; i < 32; ++i) {
    const std::uint32_t j = i == 31 ? 31 : i + 1;
    CHECK(got[i] == j * (j - 1) + (i < 16 ? 1 : 0));
  }
}

TEST_CASE("while_ loops until its condition fails, per thread", "[executor][control]") {
  Module m;
  Kernel& k = m.kernel("collatz");
  auto out = k.param_ptr<U32>("out");
  const Reg<U32> t = k.tid_x();
  Reg<U32> n = k.add(t, 1u);
  Reg<U32> steps = k.mov<U32>(0u);
  k.while_([&] { return k.setp(Cmp::Ne, n, 1u); },
           [&] {
             const Reg<U32> half = k.shr(n, 1u);
             const Reg<U32> triple = k.add(k.mul(n, 3u), 1u);
             k.mov(n, k.selp<U32>(triple, half, k.setp(Cmp::Ne, k.and_(n, 1u), 0u)));
             k.add(steps, steps, 1u);
           });
  k.st(k.index(out, t), steps);
  const auto got = run_out(k, 1, 32);
  for (std::uint32_t i = 0; i < 32; ++i) {
    std::uint32_t v = i + 1, want = 0;
    for (; v != 1; ++want) v = v % 2 ? 3 * v + 1 : v / 2;
    CHECK(got[i] == want);
  }
}

TEST_CASE("shfl.sync up/down/bfly/idx with segments and clamping", "[executor][shfl]") {
  for (std::uint32_t width : {32u, 16u, 8u, 4u, 1u}) {
    Module m;
    Kernel& k = m.kernel("shuffles");
    auto out = k.param_ptr<U32>("out");
    Reg<U32> lane = k.laneid();
    Reg<U32> base = k.mul(k.tid_x(), 5u);
    Reg<U32> v = k.add(lane, 100u);
    k.st(k.index(out, base), k.shfl_up(v, 2u, width));
    k.st(k.index(out, base) + 1, k.shfl_down(v, 1u, width));
    k.st(k.index(out, base) + 2, k.shfl_bfly(v, 2u, width));
    k.st(k.index(out, base) + 3, k.shfl_idx(v, 3u, width));
    k.st(k.index(out, base) + 4, k.shfl_idx(v, k.sub(k.mov<U32>(31u), lane), width));
    k.finalize();
    std::vector<std::uint32_t> got(64 * 5);
    CpuDevice dev;
    dev.launch(k, {1, 64}, {dev.map<std::uint32_t>(got, "out")});
    for (std::uint32_t t = 0; t < 64; ++t) {
      const std::uint32_t l = t % 32, seg = l / width * width, last = seg + width - 1;
      INFO("width " << width << " lane " << l);
      CHECK(got[t * 5 + 0] == 100 + (l >= seg + 2 ? l - 2 : l));
      CHECK(got[t * 5 + 1] == 100 + (l + 1 <= last ? l + 1 : l));
      CHECK(got[t * 5 + 2] == 100 + ((l ^ 2u) <= last ? (l ^ 2u) : l));
      CHECK(got[t * 5 + 3] == 100 + seg + (3 % width));
      CHECK(got[t * 5 + 4] == 100 + seg + ((31 - l) & (width - 1)));
    }
  }
}

TEST_CASE("shfl.sync errors: divergent members, reading a missing lane", "[executor][shfl]") {
  {
    Module m;
    Kernel& k = m.kernel("divergent_shfl");
    auto out = k.param_ptr<U32>("out");
    Reg<U32> t = k.tid_x();
    k.if_(k.setp(Cmp::Lt, t, 16u), [&] { k.st(k.index(out, t), k.shfl_bfly(t, 1u)); });
    CHECK_THROWS_WITH(run_out(k, 1, 32), Contains("lane 16 of the warp is not executing it"));
  }
  {
    Module m;
    Kernel& k = m.kernel("partial_warp");
    auto out = k.param_ptr<U32>("out");
    Reg<U32> t = k.tid_x();
    k.st(k.index(out, t), k.shfl_bfly(t, 8u));
    CHECK_THROWS_WITH(run_out(k, 1, 8),
                      Contains("reads lane 8, which does not execute this shfl.sync"));
  }
}

TEST_CASE("warp, block and group reductions from reduce.hpp", "[executor][shfl]") {
  Module m;
  Kernel& k = m.kernel("reduce");
  auto out = k.param_ptr<U32>("out");
  Reg<U32> t = k.tid_x();
  Reg<F32> v = k.cvt<F32>(t);
  SharedPtr<F32> scratch = k.shared_array<F32>("scratch", group_reduce_scratch_floats(256, 2));
  Reg<F32> warp = warp_reduce_sum(k, v);
  Reg<F32> block = block_reduce_sum(k, v, 256, t, scratch);
  k.bar_sync();
  const Reg<F32> values[] = {v, k.mul(v, 2.0f)};
  auto group = group_reduce(k, values, ReduceOp::Sum, 64, 256, t, scratch);
  auto mx = group_reduce(k, values, ReduceOp::Max, 16, 256, t, scratch);
  Reg<U32> base = k.mul(t, 5u);
  k.st(k.index(out, base), k.cvt<U32>(warp));
  k.st(k.index(out, base) + 1, k.cvt<U32>(block));
  k.st(k.index(out, base) + 2, k.cvt<U32>(group[0]));
  k.st(k.index(out, base) + 3, k.cvt<U32>(group[1]));
  k.st(k.index(out, base) + 4, k.cvt<U32>(mx[1]));
  k.finalize();
  std::vector<std::uint32_t> got(256 * 5);
  CpuDevice dev;
  dev.launch(k, {1, 256}, {dev.map<std::uint32_t>(got, "out")});
  for (std::uint32_t t2 = 0; t2 < 256; ++t2) {
    const std::uint32_t w = t2 / 32 * 32, g = t2 / 64 * 64, s = t2 / 16 * 16;
    CHECK(got[t2 * 5] == 32 * w + 496);
    CHECK(got[t2 * 5 + 1] == 255 * 256 / 2);
    CHECK(got[t2 * 5 + 2] == 64 * g + 2016);
    CHECK(got[t2 * 5 + 3] == 2 * (64 * g + 2016));
    CHECK(got[t2 * 5 + 4] == 2 * (s + 15));
  }
}

TEST_CASE("group_reduce with a custom combine: an argmax every lane agrees on",
          "[executor][shfl]") {
  Module m;
  Kernel& k = m.kernel("argmax");
  auto out = k.param_ptr<U32>("out");
  Reg<U32> t = k.tid_x();
  // Values with ties: (t * 37) % 101; the lowest index wins a tie, so the combine is symmetric.
  const Reg<F32> value = k.cvt<F32>(k.rem(k.mul(t, 37u), 101u));
  const Reg<F32> tuple[] = {value, k.cvt<F32>(t)};
  const Combine argmax = [&](std::span<const Reg<F32>> a, std::span<const Reg<F32>> b) {
    const Pred b_wins = k.or_(k.setp(Cmp::Gt, b[0], a[0]),
                              k.and_(k.setp(Cmp::Eq, b[0], a[0]), k.setp(Cmp::Lt, b[1], a[1])));
    return std::vector<Reg<F32>>{k.selp(b[0], a[0], b_wins), k.selp(b[1], a[1], b_wins)};
  };
  const float identity[] = {-1.0f, 1e9f};
  SharedPtr<F32> scratch = k.shared_array<F32>("scratch", group_reduce_scratch_floats(256, 2));
  const auto best = group_reduce(k, tuple, argmax, identity, 64, 256, t, scratch);
  k.st(k.index(out, k.mul(t, 2u)), k.cvt<U32>(best[0]));
  k.st(k.index(out, k.mul(t, 2u)) + 1, k.cvt<U32>(best[1]));
  k.finalize();
  std::vector<std::uint32_t> got(256 * 2);
  CpuDevice dev;
  dev.launch(k, {1, 256}, {dev.map<std::uint32_t>(got, "out")});
  for (std::uint32_t t2 = 0; t2 < 256; ++t2) {
    std::uint32_t value_max = 0, index = 0;
    for (std::uint32_t i = t2 / 64 * 64; i < t2 / 64 * 64 + 64; ++i) {
      if ((i * 37) % 101 > value_max) value_max = (i * 37) % 101, index = i;
    }
    CHECK(got[t2 * 2] == value_max);
    CHECK(got[t2 * 2 + 1] == index);
  }
}

TEST_CASE("group_reduce refuses a combine or identity of the wrong size", "[executor][shfl]") {
  Module m;
  Kernel& k = m.kernel("bad_combine");
  Reg<U32> t = k.tid_x();
  const Reg<F32> tuple[] = {k.cvt<F32>(t), k.cvt<F32>(t)};
  SharedPtr<F32> scratch = k.shared_array<F32>("scratch", group_reduce_scratch_floats(64, 2));
  const Combine first_only = [&](std::span<const Reg<F32>> a, std::span<const Reg<F32>> b) {
    return std::vector<Reg<F32>>{k.add(a[0], b[0])};
  };
  const float two[] = {0.0f, 0.0f}, one[] = {0.0f};
  CHECK_THROWS_WITH(group_reduce(k, tuple, first_only, two, 64, 64, t, scratch),
                    Contains("combine returned 1 values for tuples of 2"));
  const Combine both = [&](std::span<const Reg<F32>> a, std::span<const Reg<F32>> b) {
    return std::vector<Reg<F32>>{k.add(a[0], b[0]), k.add(a[1], b[1])};
  };
  CHECK_THROWS_WITH(group_reduce(k, tuple, both, one, 64, 64, t, scratch),
                    Contains("1 identity values for tuples of 2"));
}

TEST_CASE("barriers in a loop, barriers reached on both sides of a branch", "[executor][control]") {
  Module m;
  Kernel& k = m.kernel("barriers");
  auto out = k.param_ptr<U32>("out");
  Reg<U32> t = k.tid_x();
  SharedPtr<U32> s = k.shared_array<U32>("s", 128);
  Reg<U32> acc = k.mov<U32>(0u);
  k.for_range(0u, 4u, 1u, [&](Reg<U32> i) {
    k.st(k.index(s, t), k.add(t, i));
    k.if_else(
        k.setp(Cmp::Lt, t, 50u), [&] { k.bar_sync(); }, [&] { k.bar_sync(); });
    k.add(acc, acc, k.ld(k.index(s, k.sub(k.mov<U32>(127u), t))));
    k.bar_sync();
  });
  k.st(k.index(out, t), acc);
  const auto got = run_out(k, 1, 128);
  for (std::uint32_t i = 0; i < 128; ++i) CHECK(got[i] == 4 * (127 - i) + 6);
}

TEST_CASE("3-D grids and blocks, partial warps, special registers", "[executor][control]") {
  Module m;
  Kernel& k = m.kernel("shape");
  auto out = k.param_ptr<U32>("out");
  Reg<U32> cta =
      k.mad(k.special(Special::CtaidZ), k.special(Special::NctaidY), k.special(Special::CtaidY));
  cta = k.mad(cta, k.nctaid_x(), k.ctaid_x());
  Reg<U32> tid =
      k.mad(k.special(Special::TidZ), k.special(Special::NtidY), k.special(Special::TidY));
  tid = k.mad(tid, k.ntid_x(), k.tid_x());
  Reg<U32> threads = k.mul(k.mul(k.ntid_x(), k.special(Special::NtidY)), k.special(Special::NtidZ));
  Reg<U32> value = k.add(k.mul(k.warpid(), 1000u), k.laneid());
  k.st(k.index(out, k.mad(cta, threads, tid)), value);
  const Dim3 grid{2, 3, 2}, block{5, 3, 3};
  const auto got = run_out(k, grid, block);
  for (std::uint32_t c = 0; c < 12; ++c) {
    for (std::uint32_t t = 0; t < 45; ++t) CHECK(got[c * 45 + t] == (t / 32) * 1000 + t % 32);
  }
}

TEST_CASE("a kernel that never ends is stopped", "[executor][control]") {
  Module m;
  Kernel& k = m.kernel("forever");
  (void)k.param_ptr<U32>("out");
  Label top = k.label("top");
  k.bind(top);
  k.bra(top);
  ExecOptions opt;
  opt.max_warp_instructions = 10000;
  CHECK_THROWS_WITH(run_out(k, 1, 32, opt), Contains("loop forever"));
}

TEST_CASE("tracing one thread's registers", "[executor][trace]") {
  Module m;
  Kernel& k = m.kernel("traced");
  auto out = k.param_ptr<U32>("out");
  Reg<U32> t = k.tid_x();
  Reg<F32> x = k.cvt<F32>(t);
  Reg<F32> y = k.fma(x, 2.0f, 1.0f);
  k.if_(k.setp(Cmp::Lt, t, 3u), [&] { k.mov(y, 0.5f); });
  k.st(k.index(out, global_thread(k)), k.cvt<U32>(y));
  ExecOptions opt;
  opt.trace = true;
  opt.trace_target.cta = Dim3{1, 0, 0};
  opt.trace_target.thread = Dim3{5, 0, 0};
  LaunchStats stats;
  run_out(k, 2, 64, opt, &stats);
  const std::string text = format_trace(stats.trace);
  INFO(text);
  REQUIRE(stats.trace.size() >= 6);
  CHECK_THAT(text, Contains("mov.u32 %r"));
  CHECK_THAT(text, Contains("fma.rn.f32"));
  CHECK_THAT(text, Contains("= 11 (0x41300000)"));  // 5 * 2 + 1
  CHECK_THAT(text, Contains("%ctaid.x;"));
  CHECK_THAT(text, Contains("= 69 (0x00000045)"));  // 1 * 64 + 5
  CHECK(stats.ctas == 2);
  CHECK(stats.lane_instructions > stats.warp_instructions);
}

TEST_CASE("two host threads give the same results as one", "[executor][control]") {
  Module m;
  Kernel& k = m.kernel("many_ctas");
  auto out = k.param_ptr<U32>("out");
  Reg<U32> g = global_thread(k);
  k.st(k.index(out, g), k.mul(g, 7u));
  k.finalize();
  ExecOptions two;
  two.threads = 2;
  std::vector<std::uint32_t> a(64 * 50), b(64 * 50);
  CpuDevice dev;
  dev.launch(k, {50, 64}, {dev.map<std::uint32_t>(a, "a")});
  dev.launch(k, {50, 64}, {dev.map<std::uint32_t>(b, "b")}, two);
  CHECK(a == b);
  CHECK(a[64 * 49 + 3] == (64 * 49 + 3) * 7);
}

TEST_CASE("grid dependency control: launches run one after another, so both are no-ops",
          "[executor][control]") {
  Module m;
  Kernel& k = m.kernel("dependent");
  auto out = k.param_ptr<U32>("out");
  k.griddep_wait();
  const Reg<U32> g = global_thread(k);
  k.griddep_launch_dependents();
  k.st(k.index(out, g), k.mul(g, 3u));
  const std::vector<std::uint32_t> got = run_out(k, Dim3{2}, Dim3{64});
  for (std::uint32_t i = 0; i < got.size(); ++i) CHECK(got[i] == 3 * i);
  CHECK(k.contract().waits_for_prior_grid);
}
