// The MbarrierPipeline block on the executor: a producer thread fills a ring of stages by bulk
// copies while two consumer warps read them, many passes around the ring, so that every phase
// parity and every wrap is taken; a consumer that skips its release leaves the producer waiting,
// which the executor names as a deadlock.
#include <catch2/catch.hpp>

#include <numeric>
#include <string>
#include <vector>

#include "ptxdsl/dsl.hpp"
#include "ptxdsl/dsl/executor.hpp"

using namespace ptxdsl;
using Catch::Matchers::Contains;

namespace {

constexpr std::uint32_t kStageWords = 16;  // 64 bytes: one bulk copy a step
constexpr std::uint32_t kThreads = 96;     // warp 0 produces, warps 1 and 2 consume

// Steps of 16 words of x through a ring of `stages`; each consumer lane w < 16 sums word w of
// every step into y[16 * consumer + w].
std::vector<std::uint32_t> run_ring(std::uint32_t stages, std::uint32_t steps,
                                    bool release = true) {
  Module m(Arch::Sm90, {8, 0});
  Kernel& k = m.kernel("ring");
  k.require_threads(kThreads);
  const GlobalPtr<U32> x = k.param_ptr<U32>("x");
  const GlobalPtr<U32> y = k.param_ptr<U32>("y");
  const SharedPtr<U32> ring = k.shared_array<U32>("ring", stages * kStageWords, 128);
  const MbarrierPipeline pipe(k, stages);
  const Reg<U32> tid = k.tid_x(), warp = k.shr(tid, 5u), lane = k.and_(tid, 31u);
  k.if_(tid == 0u, [&] { pipe.init(k, 1, 2); });
  k.bar_sync();
  k.if_else(
      warp == 0u,
      [&] {
        k.if_(lane == 0u, [&] {
          const MbarrierPipeline::Position at = pipe.start(k);
          k.for_range(k.mov<U32>(0u), steps, 1u, [&](Reg<U32> step) {
            pipe.producer_acquire(k, at);
            const SharedPtr<B64> full = pipe.producer_expect(k, at, kStageWords * 4);
            k.cp_async_bulk(k.index(ring, k.mul(at.stage, kStageWords)),
                            k.index(x, k.mul(step, kStageWords)), kStageWords * 4, full);
            pipe.advance(k, at);
          });
        });
      },
      [&] {
        const MbarrierPipeline::Position at = pipe.start(k);
        const Reg<U32> sum = k.mov<U32>(0u);
        const Reg<U32> word = k.and_(lane, kStageWords - 1);
        k.for_range(k.mov<U32>(0u), steps, 1u, [&](Reg<U32>) {
          pipe.consumer_wait(k, at);
          const Reg<U32> v = k.ld(k.index(ring, k.mad(at.stage, kStageWords, word)));
          k.add(sum, sum, v);
          k.bar_sync(1, 64);  // both consumer warps have read the stage before either releases
          if (release) k.if_(lane == 0u, [&] { pipe.consumer_release(k, at.stage); });
          pipe.advance(k, at);
        });
        k.if_(lane < kStageWords,
              [&] { k.st(k.index(y, k.mad(k.sub(warp, 1u), kStageWords, lane)), sum); });
      });
  k.finalize();
  std::vector<std::uint32_t> xs(steps * kStageWords), ys(2 * kStageWords, 0);
  std::iota(xs.begin(), xs.end(), 1u);
  CpuDevice dev;
  dev.launch(k, {1, kThreads},
             {dev.upload<std::uint32_t>(xs, "x"), dev.map<std::uint32_t>(ys, "y")});
  return ys;
}

}  // namespace

TEST_CASE("an mbarrier pipeline hands every stage over, pass after pass", "[executor][mbarrier]") {
  for (const std::uint32_t stages : {1u, 2u, 3u}) {
    const std::uint32_t steps = 3 * stages + 1;
    INFO(stages << " stages, " << steps << " steps");
    const std::vector<std::uint32_t> y = run_ring(stages, steps);
    for (std::uint32_t c = 0; c < 2; ++c) {
      for (std::uint32_t w = 0; w < kStageWords; ++w) {
        std::uint32_t want = 0;
        for (std::uint32_t s = 0; s < steps; ++s) want += s * kStageWords + w + 1;
        CHECK(y[c * kStageWords + w] == want);
      }
    }
  }
}

TEST_CASE("an mbarrier pipeline whose consumers never release deadlocks its producer",
          "[executor][mbarrier]") {
  CHECK_THROWS_WITH(run_ring(2, 5, false), Contains("deadlock"));
}
