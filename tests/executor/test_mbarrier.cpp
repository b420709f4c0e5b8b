// mbarriers and bulk copies on the CPU executor: rows land on the phase they complete, waits
// block instead of spinning (the producer is the last warp to run), and the misuses a GPU would
// hang or read garbage on are named.
#include <catch2/catch.hpp>

#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "support.hpp"

using namespace ptxdsl;
using Catch::Matchers::Contains;

namespace {

constexpr std::uint32_t kThreads = 128;
constexpr std::uint32_t kRowFloats = 128;
constexpr std::uint32_t kRowBytes = kRowFloats * 4;

struct Tma {
  Kernel& k;
  GlobalPtr<F32> x, y;
  SharedPtr<F32> buffers;
  SharedPtr<B64> bar;
  Reg<U32> t;
  Pred producer;
};

// One producer thread (the last warp's first) initializes the mbarrier, then every kernel body
// runs with it.
Tma setup(Kernel& k, std::uint32_t buffers) {
  Tma s{k,
        k.param_ptr<F32>("x"),
        k.param_ptr<F32>("y"),
        k.shared_array<F32>("rows", buffers * kRowFloats),
        k.shared_array<B64>("bar", 1, 8),
        k.tid_x(),
        {}};
  s.producer = s.t == kThreads - 32;
  k.if_(s.producer, [&] {
    k.mbarrier_init(s.bar, 1u);
    k.fence_mbarrier_init();
  });
  k.bar_sync();
  return s;
}

// Runs `body` as a kernel of 128 threads over `floats` floats of x (0, 1, 2, ...) into y.
std::string run(const std::function<void(Tma&)>& body, std::uint32_t buffers,
                std::vector<float>* y_out = nullptr, std::uint32_t floats = 3 * kRowFloats) {
  Module m(Arch::Sm90, {8, 0});
  Kernel& k = m.kernel("tma");
  k.require_threads(kThreads);
  Tma s = setup(k, buffers);
  body(s);
  k.finalize();
  std::vector<float> x(floats), y(floats, -1.0f);
  std::iota(x.begin(), x.end(), 0.0f);
  CpuDevice dev;
  try {
    dev.launch(k, {1, kThreads}, {dev.upload<float>(x, "x"), dev.map<float>(y, "y")});
  } catch (const Error& e) {
    return e.what();
  }
  if (y_out) *y_out = y;
  return "(no error)";
}

// The producer announces and copies row r into buffer r % 2.
void copy_row(Tma& s, std::uint32_t r, std::uint32_t copy_bytes = kRowBytes,
              std::uint32_t announced = kRowBytes) {
  s.k.if_(s.producer, [&] {
    s.k.mbarrier_arrive_expect_tx(s.bar, announced);
    s.k.cp_async_bulk(s.buffers + (r % 2) * kRowFloats, s.x + r * kRowFloats, copy_bytes, s.bar);
  });
}

}  // namespace

TEST_CASE("bulk copies land on their mbarrier phase; the parity alternates row by row",
          "[executor][mbarrier]") {
  std::vector<float> y;
  const std::string error = run(
      [](Tma& s) {
        for (std::uint32_t r = 0; r < 3; ++r) {
          copy_row(s, r);
          s.k.mbarrier_wait(s.bar, r % 2);
          const Reg<F32> v = s.k.ld(s.k.index(s.buffers + (r % 2) * kRowFloats, s.t));
          s.k.st(s.k.index(s.y + r * kRowFloats, s.t), s.k.mul(v, 2.0f));
          s.k.bar_sync();  // every thread has read the buffer before it is copied into again
        }
      },
      2, &y);
  REQUIRE(error == "(no error)");
  for (std::uint32_t i = 0; i < 3 * kRowFloats; ++i) {
    INFO("element " << i);
    CHECK(y[i] == 2.0f * static_cast<float>(i));
  }
}

TEST_CASE("a wait for the phase before the current one returns at once", "[executor][mbarrier]") {
  std::vector<float> y;
  const std::string error = run(
      [](Tma& s) {
        s.k.mbarrier_wait(s.bar, 1u);  // the phase "before" phase 0: complete by definition
        s.k.st(s.k.index(s.y, s.t), 7.0f);
      },
      1, &y);
  REQUIRE(error == "(no error)");
  CHECK(y[0] == 7.0f);
  CHECK(y[kThreads - 1] == 7.0f);
}

TEST_CASE(
    "memcheck: a bulk copy read before its phase, a phase that never completes, an "
    "mbarrier never initialized, arrivals beyond the count",
    "[executor][mbarrier][memcheck]") {
  // The producer's own warp reads right after the copy, without waiting.
  const std::string early = run(
      [](Tma& s) {
        copy_row(s, 0);
        s.k.if_(s.t >= kThreads - 32,
                [&] { s.k.st(s.k.index(s.y, s.t), s.k.ld(s.k.index(s.buffers, s.t))); });
      },
      1);
  CHECK_THAT(early, Contains("ld.shared.f32"));
  CHECK_THAT(early, Contains("thread (96, 0, 0)"));
  CHECK_THAT(early, Contains("reads shared memory at 0x180 ('tma_rows' + 384) that a bulk copy "
                             "in flight writes: wait for its mbarrier phase first"));

  // 1024 bytes announced, 512 copied: the phase waits forever.
  const std::string hang = run(
      [](Tma& s) {
        copy_row(s, 0, kRowBytes, 2 * kRowBytes);
        s.k.mbarrier_wait(s.bar, 0u);
      },
      1);
  CHECK_THAT(hang, Contains("mbarrier.try_wait.parity.shared::cta.b64"));
  CHECK_THAT(hang, Contains("waits for phase parity 0 of the mbarrier at shared 0x200, whose "
                            "phase still waits for 0 of its 1 arrivals and 512 transaction bytes"));
  CHECK_THAT(hang, Contains("the CTA deadlocks"));

  const std::string uninitialized = run(
      [](Tma& s) {
        s.k.if_(s.t == 0u, [&] { s.k.mbarrier_arrive(s.bar + 0); });
        s.k.if_(s.t == 1u, [&] {
          const SharedPtr<B64> other = s.k.shared_array<B64>("other", 1, 8);
          s.k.mbarrier_arrive(other);
        });
      },
      1);
  CHECK_THAT(uninitialized, Contains("mbarrier.arrive.shared::cta.b64"));
  CHECK_THAT(uninitialized, Contains("which no mbarrier.init of this CTA initialized"));
  CHECK_THAT(uninitialized, Contains("thread (1, 0, 0)"));

  // The producer's arrival is the phase's one; a copy is still owed when thread 0 arrives too.
  const std::string extra = run(
      [](Tma& s) {
        s.k.if_(s.producer, [&] { s.k.mbarrier_arrive_expect_tx(s.bar, kRowBytes); });
        s.k.bar_sync();
        s.k.if_(s.t == 0u, [&] { s.k.mbarrier_arrive(s.bar); });
      },
      1);
  CHECK_THAT(extra, Contains("arrives on the mbarrier at shared 0x200 after its phase's 1 "
                             "arrivals have all come"));

  const std::string misaligned = run(
      [](Tma& s) {
        s.k.if_(s.producer, [&] {
          s.k.mbarrier_arrive_expect_tx(s.bar, 16u);
          s.k.cp_async_bulk(s.buffers, s.k.index(s.x, s.k.mov<U32>(1u)), 16u, s.bar);
        });
      },
      1);
  CHECK_THAT(misaligned, Contains("misaligned bulk copy source"));
  CHECK_THAT(misaligned, Contains("(offset 4 of allocation 'x' [0x"));
}
