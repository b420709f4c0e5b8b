// Named barriers with thread counts, register reallocation, sleeps and timers on the executor.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "named_barriers_kernel.hpp"
#include "support.hpp"

using namespace ptxdsl;
using Catch::Matchers::Contains;

namespace {

std::vector<std::uint32_t> run(Kernel& k, std::uint32_t threads, std::size_t outputs) {
  k.finalize();
  std::vector<std::uint32_t> out(outputs, 0xDEADBEEFu);
  CpuDevice dev;
  dev.launch(k, {1, threads}, {dev.map<std::uint32_t>(out, "out")});
  return out;
}

}  // namespace

// Warps 0-1 produce and signal with bar.arrive; warps 2-3 wait with bar.sync on the same barrier
// and read what was produced, then sync among themselves on barrier 2 after the producers exited.
TEST_CASE("named barriers: producers arrive, consumers wait, counts exclude exited threads",
          "[executor][sched]") {
  Module m;
  Kernel& k = m.kernel("produce_consume");
  test::build_named_barriers(k);
  const auto got = run(k, 128, 64);
  for (std::uint32_t i = 0; i < 64; ++i) {
    INFO("thread " << 64 + i);
    CHECK(got[i] == (i ^ 1u) * 3);
  }
}

TEST_CASE("named barriers: counts that disagree, or that never complete, fail naming them",
          "[executor][sched]") {
  {
    Module m;
    Kernel& k = m.kernel("disagree");
    auto out = k.param_ptr<U32>("out");
    const Reg<U32> t = k.tid_x();
    k.if_else(
        k.setp(Cmp::Lt, t, 32u), [&] { k.bar_sync(1, 64); }, [&] { k.bar_sync(1, 128); });
    k.st(k.index(out, t), t);
    CHECK_THROWS_WITH(run(k, 64, 64),
                      Contains("thread (32, 0, 0)") && Contains("'bar.sync 1, 128;'") &&
                          Contains("arrives at barrier 1 with a thread count of 128, but thread "
                                   "(0, 0, 0) arrived at it with 64 in this phase"));
  }
  {
    Module m;
    Kernel& k = m.kernel("short");
    auto out = k.param_ptr<U32>("out");
    const Reg<U32> t = k.tid_x();
    k.if_(k.setp(Cmp::Lt, t, 32u), [&] { k.bar_sync(3, 128); });
    k.st(k.index(out, t), t);
    CHECK_THROWS_WITH(run(k, 64, 64),
                      Contains("waits at barrier 3 for 128 threads, but 32 arrived") &&
                          Contains("the CTA deadlocks"));
  }
}

TEST_CASE("nanosleep runs, clock64 and globaltimer never go back", "[executor][sched]") {
  Module m;
  Kernel& k = m.kernel("timers");
  auto out = k.param_ptr<U32>("out");
  const Reg<U32> t = k.tid_x();
  const Reg<U64> c0 = k.clock64();
  const Reg<U64> g0 = k.globaltimer();
  k.nanosleep(1000u);
  k.nanosleep(t);
  const Reg<U64> c1 = k.clock64();
  const Reg<U64> g1 = k.globaltimer();
  const Reg<U32> later = k.selp<U32>(1u, 0u, k.setp(Cmp::Gt, c1, c0));
  const Reg<U32> not_back = k.selp<U32>(2u, 0u, k.setp(Cmp::Ge, g1, g0));
  k.st(k.index(out, t), k.or_(later, not_back));
  const auto got = run(k, 64, 64);
  for (std::uint32_t i = 0; i < 64; ++i) CHECK(got[i] == 3u);
}

TEST_CASE("setmaxnreg: the whole warp executes it together", "[executor][sched]") {
  {
    Module m(Arch::Sm90a, {8, 0});
    Kernel& k = m.kernel("converged");
    auto out = k.param_ptr<U32>("out");
    const Reg<U32> t = k.tid_x();
    k.if_else(
        k.setp(Cmp::Lt, t, 32u), [&] { k.setmaxnreg_dec(40); }, [&] { k.setmaxnreg_inc(232); });
    k.st(k.index(out, t), t);
    const auto got = run(k, 64, 64);
    for (std::uint32_t i = 0; i < 64; ++i) CHECK(got[i] == i);
  }
  {
    Module m(Arch::Sm90a, {8, 0});
    Kernel& k = m.kernel("diverged");
    auto out = k.param_ptr<U32>("out");
    const Reg<U32> t = k.tid_x();
    k.if_(k.setp(Cmp::Lt, t, 16u), [&] { k.setmaxnreg_dec(40); });
    k.st(k.index(out, t), t);
    CHECK_THROWS_WITH(run(k, 32, 32), Contains("setmaxnreg.dec.sync.aligned.u32") &&
                                          Contains("does not execute this .aligned instruction"));
  }
}
