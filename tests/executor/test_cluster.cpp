// Thread-block clusters on the CPU executor: the CTAs of a cluster run together, their shared
// memory is addressable across them (mapa), the cluster barrier and transaction mbarriers behave
// as PTX says, and memcheck names the DSMEM bugs: a peer's bytes read before the barrier that
// orders them, a peer that may not have started, races across CTAs, ranks and offsets out of
// range, a peer that has exited, async bytes read before their mbarrier phase. Each bug kernel also
// runs fixed, and then passes.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "../dsl/support.hpp"
#include "cluster_row_sum.hpp"
#include "support.hpp"

using namespace ptxdsl;
using Catch::Matchers::Contains;

namespace {

constexpr std::uint32_t kBlock = 64;

// Launches `build`'s kernel (one u32 output array `out` of `out_words`) over `clusters` clusters
// of `ctas` CTAs; returns the error text, or "(no error)" with the output in `out`.
std::string run(const std::function<void(Kernel&, GlobalPtr<U32>)>& build, std::uint32_t ctas,
                std::vector<std::uint32_t>* out = nullptr, std::uint32_t clusters = 1,
                std::uint32_t out_words = 1024) {
  Module m(Arch::Sm90, {8, 1});
  Kernel& k = m.kernel("cl");
  k.require_threads(kBlock);
  k.require_cluster({ctas, 1, 1});
  build(k, k.param_ptr<U32>("out"));
  k.finalize();
  CpuDevice dev;
  std::vector<std::uint32_t> host(out_words, 0xFFFFFFFFu);
  try {
    dev.launch(k, {clusters * ctas, kBlock}, {dev.map<std::uint32_t>(host, "out")});
  } catch (const Error& e) {
    return e.what();
  }
  if (out) *out = host;
  return "(no error)";
}

// Thread 0 of each CTA writes (rank + 1) * 10 into its own `slot`; then, after `between`, thread
// 0 of each CTA reads the slot of CTA `peer(rank)` and stores it at out[rank].
void exchange(Kernel& k, GlobalPtr<U32> out, const std::function<Reg<U32>(Reg<U32>)>& peer,
              const std::function<void()>& between) {
  const SharedPtr<U32> slot = k.shared_array<U32>("slot", 1);
  const Reg<U32> tid = k.tid_x(), rank = k.cluster_ctarank();
  const Pred first = tid == 0u;
  k.if_(first, [&] { k.st(slot, k.mul(k.add(rank, 1u), 10u)); });
  between();
  k.if_(first, [&] { k.st(k.index(out, rank), k.ld(k.mapa(slot, peer(rank)))); });
}

}  // namespace

TEST_CASE("cluster special registers follow the launch's cluster shape", "[executor][cluster]") {
  Module m(Arch::Sm90);
  Kernel& k = m.kernel("ids");
  const GlobalPtr<U32> out = k.param_ptr<U32>("out");
  const Special regs[] = {Special::ClusterCtarank, Special::ClusterNctarank,
                          Special::ClusteridX,     Special::ClusteridY,
                          Special::NclusteridX,    Special::NclusteridY,
                          Special::ClusterCtaidX,  Special::ClusterCtaidY,
                          Special::ClusterNctaidX, Special::ClusterNctaidY};
  constexpr std::uint32_t kRegs = 10;
  const Reg<U32> cta = k.mad(k.special(Special::CtaidY), k.special(Special::NctaidX), k.ctaid_x());
  const GlobalPtr<U32> row = k.index(out, k.mul(cta, kRegs));
  k.if_(k.tid_x() == 0u, [&] {
    for (std::uint32_t i = 0; i < kRegs; ++i) k.st(row + i, k.special(regs[i]));
  });
  k.finalize();
  const Dim3 grid{4, 6, 1}, cluster{2, 3, 1};
  std::vector<std::uint32_t> host(grid.count() * kRegs, 0xFFFFFFFFu);
  CpuDevice dev;
  dev.launch(k, {.grid = grid, .block = 32, .cluster = cluster}, {dev.map<std::uint32_t>(host)});
  for (std::uint32_t y = 0; y < grid.y; ++y) {
    for (std::uint32_t x = 0; x < grid.x; ++x) {
      const std::uint32_t* r = host.data() + (y * grid.x + x) * kRegs;
      INFO("CTA (" << x << ", " << y << ")");
      CHECK(r[0] == x % 2 + (y % 3) * 2);
      CHECK(r[1] == 6u);
      CHECK(r[2] == x / 2);
      CHECK(r[3] == y / 3);
      CHECK(r[4] == 2u);
      CHECK(r[5] == 2u);
      CHECK(r[6] == x % 2);
      CHECK(r[7] == y % 3);
      CHECK(r[8] == 2u);
      CHECK(r[9] == 3u);
    }
  }
}

TEST_CASE("a launch's cluster shape is checked against the grid and the kernel",
          "[executor][cluster]") {
  Module m(Arch::Sm90);
  Kernel& fixed = m.kernel("fixed");
  fixed.require_cluster({2, 1, 1});
  Kernel& explicit_only = m.kernel("explicit_only");
  explicit_only.explicit_cluster();
  m.emit();
  CpuDevice dev;
  CHECK_THAT(test::error_of([&] {
               dev.launch(fixed, {3, 32}, {});
             }),
             Contains("grid (3, 1, 1) must be a whole number of clusters (2, 1, 1)"));
  CHECK_THAT(test::error_of([&] { dev.launch(fixed, {.grid = 4, .block = 32, .cluster = 4}, {}); }),
             Contains("cluster must be (2, 1, 1) as the kernel's .reqnctapercluster says"));
  CHECK_THAT(test::error_of([&] {
               dev.launch(explicit_only, {4, 32}, {});
             }),
             Contains("needs cluster dimensions (LaunchConfig::cluster)"));
  CHECK_THAT(test::error_of(
                 [&] { dev.launch(explicit_only, {.grid = 32, .block = 32, .cluster = 32}, {}); }),
             Contains("cluster must have 1 to 16 CTAs"));
  CHECK(dev.launch(fixed, {4, 32}, {}).ctas == 4u);
  CHECK(dev.launch(explicit_only, {.grid = 8, .block = 32, .cluster = 4}, {}).ctas == 8u);
}

// The kernel the norms will split rows with: each CTA of a cluster sums its slice of a row, and
// cluster_reduce gives every thread of every CTA the row's total.
TEST_CASE("cluster reduce: every thread of every CTA gets its row's sum, at odd sizes",
          "[executor][cluster][reduce]") {
  constexpr std::uint32_t kRows = 3, kThreads = 96;
  for (const std::uint32_t ctas : {1u, 2u, 4u, 8u}) {
    for (const std::uint32_t width : {1u, 7u, 1000u, 4097u}) {
      Module m(Arch::Sm90);
      Kernel& k = m.kernel("row_sum");
      k.require_cluster({ctas, 1, 1});
      test::build_cluster_row_sum(k, ctas, width, kThreads);
      m.emit();
      const std::vector<float> xs = test::cluster_row_sum_inputs(kRows, width);
      std::vector<float> ys(kRows * ctas * kThreads, -1.0f);
      CpuDevice dev;
      dev.launch(k, {kRows * ctas, kThreads}, {dev.upload<float>(xs, "x"), dev.map<float>(ys)});
      test::check_cluster_row_sums(xs, ys, kRows, width, ctas, kThreads);
    }
  }
}

TEST_CASE("st.async and red.async land in peers on their mbarrier phase",
          "[executor][cluster][mbarrier]") {
  constexpr std::uint32_t kCtas = 4;
  std::vector<std::uint32_t> out;
  const std::string error = run(
      [](Kernel& k, GlobalPtr<U32> out) {
        const SharedPtr<U32> slots = k.shared_array<U32>("slots", kCtas);
        const SharedPtr<U32> counter = k.shared_array<U32>("counter", 1);
        const SharedPtr<B64> bar = k.shared_array<B64>("bar", 1, 8);
        const Reg<U32> tid = k.tid_x(), rank = k.cluster_ctarank();
        k.if_(tid == 0u, [&] {
          k.mbarrier_init(bar, 1u);
          k.st(counter, 0u);
          k.fence_mbarrier_init();
        });
        k.cluster_sync();  // every barrier is initialized before a peer completes bytes on it
        // Every CTA's own mbarrier expects a u32 from each CTA, and rank 0's a u32 add from each.
        k.if_(tid == 0u, [&] {
          k.mbarrier_arrive_expect_tx(bar, k.selp<U32>(8 * kCtas, 4 * kCtas, rank == 0u));
        });
        k.if_(tid < kCtas, [&] {
          const ClusterPtr<U32> there = k.mapa(k.index(slots, rank), tid);
          k.st_async(there, k.add(k.mul(rank, 100u), tid), k.mapa(bar, tid));
        });
        k.if_(tid == 0u,
              [&] { k.red_async_add(k.mapa(counter, 0u), k.add(rank, 1u), k.mapa(bar, 0u)); });
        k.mbarrier_wait(bar, 0u, Scope::Cluster);
        k.if_(tid < kCtas,
              [&] { k.st(k.index(out, k.mad(rank, kCtas + 1, tid)), k.ld(k.index(slots, tid))); });
        k.if_(k.and_(tid == 0u, rank == 0u), [&] { k.st(out + kCtas, k.ld(counter)); });
      },
      kCtas, &out);
  REQUIRE(error == "(no error)");
  for (std::uint32_t r = 0; r < kCtas; ++r) {
    for (std::uint32_t p = 0; p < kCtas; ++p) {
      INFO("CTA " << r << ", slot " << p);
      CHECK(out[r * (kCtas + 1) + p] == p * 100 + r);
    }
  }
  CHECK(out[kCtas] == kCtas * (kCtas + 1) / 2);
}

TEST_CASE("transaction bytes: a phase waits for every announced byte", "[executor][cluster]") {
  // Each CTA announces one byte more than its peer sends: the phase never completes.
  const std::string error = run(
      [](Kernel& k, GlobalPtr<U32>) {
        const SharedPtr<U32> slot = k.shared_array<U32>("slot", 1);
        const SharedPtr<B64> bar = k.shared_array<B64>("bar", 1, 8);
        const Reg<U32> tid = k.tid_x(), rank = k.cluster_ctarank();
        k.if_(tid == 0u, [&] { k.mbarrier_init(bar, 1u); });
        k.cluster_sync();
        k.if_(tid == 0u, [&] {
          k.mbarrier_expect_tx(bar, 8u);
          k.mbarrier_arrive(bar);
          const Reg<U32> peer = k.xor_(rank, 1u);
          k.st_async(k.mapa(slot, peer), rank, k.mapa(bar, peer));
        });
        k.mbarrier_wait(bar, 0u);
      },
      2);
  CHECK_THAT(error, Contains("waits for phase parity 0 of the mbarrier") &&
                        Contains("0 of its 1 arrivals and 4 transaction bytes") &&
                        Contains("the cluster deadlocks"));
}

TEST_CASE("memcheck: a peer's shared memory read before the cluster barrier that orders it",
          "[executor][cluster][memcheck]") {
  const auto next = [](Kernel& k) {
    return [&k](Reg<U32> rank) { return k.rem(k.add(rank, 1u), k.cluster_nctarank()); };
  };
  // Rank 1 reads rank 0's slot, which CTA 0 (run first) already wrote: an unordered write.
  const std::string late = run(
      [&](Kernel& k, GlobalPtr<U32> out) {
        const SharedPtr<U32> slot = k.shared_array<U32>("slot", 1);
        const Reg<U32> tid = k.tid_x(), rank = k.cluster_ctarank();
        k.cluster_sync();  // every peer has started
        k.if_(k.and_(tid == 0u, rank == 0u), [&] { k.st(slot, 10u); });
        k.if_(k.and_(tid == 0u, rank == 1u), [&] { k.st(out, k.ld(k.mapa(slot, 0u))); });
        k.cluster_sync();
      },
      2);
  CHECK_THAT(late, Contains("CTA (1, 0, 0)") && Contains("shared memory race") &&
                       Contains("of CTA rank 0 (CTA (0, 0, 0))") &&
                       Contains("this read follows a write by thread (0, 0, 0) of warp 0 of CTA "
                                "rank 0") &&
                       Contains("with no barrier.cluster in between"));
  // Rank 0 reads rank 1's slot before any cluster barrier: CTA 1 may not have started.
  const std::string unstarted =
      run([&](Kernel& k, GlobalPtr<U32> out) { exchange(k, out, next(k), [] {}); }, 4);
  CHECK_THAT(unstarted, Contains("CTA (0, 0, 0)") && Contains("ld.shared::cluster.u32") &&
                            Contains("accesses the shared memory of CTA rank 1 (CTA (1, 0, 0)) "
                                     "before its first barrier.cluster.wait") &&
                            Contains("may not have started"));
  // Started (ClusterStart at the top), rank 0 reads rank 1's slot before CTA 1 wrote it.
  const auto exchange_started = [&](Kernel& k, GlobalPtr<U32> out, bool ordered) {
    ClusterStart started(k);
    started.await(k);
    exchange(k, out, next(k), [&] {
      if (ordered) k.cluster_sync();
    });
  };
  const std::string early =
      run([&](Kernel& k, GlobalPtr<U32> out) { exchange_started(k, out, false); }, 4);
  CHECK_THAT(early, Contains("CTA (0, 0, 0)") && Contains("ld.shared::cluster.u32") &&
                        Contains("of CTA rank 1 (CTA (1, 0, 0)) that no thread wrote yet") &&
                        Contains("a barrier.cluster is missing"));
  // Fixed: a cluster barrier between the writes and the reads, and one before any CTA exits.
  std::vector<std::uint32_t> out;
  REQUIRE(run(
              [&](Kernel& k, GlobalPtr<U32> o) {
                exchange_started(k, o, true);
                k.cluster_sync();
              },
              4, &out) == "(no error)");
  for (std::uint32_t r = 0; r < 4; ++r) CHECK(out[r] == ((r + 1) % 4 + 1) * 10);
}

TEST_CASE("memcheck: CTAs of a cluster writing the same peer bytes race",
          "[executor][cluster][memcheck]") {
  // Every CTA reports into rank 0's table, but at index 0 instead of at its rank.
  const auto report = [](bool fixed) {
    return [fixed](Kernel& k, GlobalPtr<U32> out) {
      const SharedPtr<U32> table = k.shared_array<U32>("table", 8);
      const Reg<U32> tid = k.tid_x(), rank = k.cluster_ctarank();
      k.cluster_sync();  // every peer has started
      k.if_(tid == 0u, [&] {
        const SharedPtr<U32> mine = fixed ? k.index(table, rank) : table;
        k.st(k.mapa(mine, 0u), k.add(rank, 7u));
      });
      k.cluster_sync();
      k.if_(k.and_(tid < k.cluster_nctarank(), rank == 0u),
            [&] { k.st(k.index(out, tid), k.ld(k.index(table, tid))); });
    };
  };
  CHECK_THAT(
      run(report(false), 2),
      Contains("CTA (1, 0, 0)") && Contains("st.shared::cluster.u32") &&
          Contains("shared memory race at 0x0 ('cl_table' + 0) of CTA rank 0") &&
          Contains("this write follows a write by thread (0, 0, 0) of warp 0 of CTA rank 0") &&
          Contains("no barrier.cluster in between"));
  std::vector<std::uint32_t> out;
  REQUIRE(run(report(true), 2, &out) == "(no error)");
  CHECK(out[0] == 7u);
  CHECK(out[1] == 8u);
}

TEST_CASE("memcheck: mapa to a rank outside the cluster, offsets outside the peer's arrays",
          "[executor][cluster][memcheck]") {
  const auto neighbour = [](bool wrap) {
    return [wrap](Kernel& k, GlobalPtr<U32> out) {
      exchange(
          k, out,
          [&](Reg<U32> r) {
            const Reg<U32> n = k.add(r, 1u);
            return wrap ? k.rem(n, k.cluster_nctarank()) : n;
          },
          [&] { k.cluster_sync(); });
      k.cluster_sync();
    };
  };
  CHECK_THAT(run(neighbour(false), 2),
             Contains("CTA (1, 0, 0)") && Contains("mapa.shared::cluster.u32") &&
                 Contains("maps to CTA rank 2, outside the cluster of 2 CTAs"));
  REQUIRE(run(neighbour(true), 2) == "(no error)");

  // One element past the peer's array.
  const std::string past = run(
      [](Kernel& k, GlobalPtr<U32>) {
        const SharedPtr<U32> a = k.shared_array<U32>("a", 4);
        k.if_(k.tid_x() < 4u, [&] { k.st(k.index(a, k.tid_x()), 1u); });
        k.cluster_sync();
        k.if_(k.tid_x() == 0u, [&] { k.ld(k.mapa(a + 4, 1u)); });
        k.cluster_sync();
      },
      2);
  CHECK_THAT(past, Contains("ld.shared::cluster.u32") &&
                       Contains("out-of-bounds shared::cluster read of 4 bytes at offset 0x10 of "
                                "CTA rank 1 (CTA (1, 0, 0))") &&
                       Contains("'cl_a' [0x0, 0x10)"));
}

TEST_CASE("memcheck: a peer's shared memory after the peer has exited",
          "[executor][cluster][memcheck]") {
  // Rank 1 reads rank 0's slot after the barrier, but rank 0 exits without waiting for it.
  const auto late_read = [](bool fixed) {
    return [fixed](Kernel& k, GlobalPtr<U32> out) {
      exchange(
          k, out, [&](Reg<U32> r) { return k.xor_(r, 1u); }, [&] { k.cluster_sync(); });
      if (fixed) k.cluster_sync();
    };
  };
  CHECK_THAT(run(late_read(false), 2),
             Contains("CTA (1, 0, 0)") &&
                 Contains("accesses the shared memory of CTA rank 0 (CTA (0, 0, 0)), whose "
                          "threads have all exited"));
  std::vector<std::uint32_t> out;
  REQUIRE(run(late_read(true), 2, &out) == "(no error)");
  CHECK(out[0] == 20u);
  CHECK(out[1] == 10u);
}

TEST_CASE("memcheck: st.async bytes read before their mbarrier phase",
          "[executor][cluster][memcheck]") {
  const auto consume = [](bool wait) {
    return [wait](Kernel& k, GlobalPtr<U32> out) {
      const SharedPtr<U32> slot = k.shared_array<U32>("slot", 1);
      const SharedPtr<B64> bar = k.shared_array<B64>("bar", 1, 8);
      const Reg<U32> tid = k.tid_x(), rank = k.cluster_ctarank();
      k.if_(tid == 0u, [&] {
        k.mbarrier_init(bar, 1u);
        k.fence_mbarrier_init();
      });
      k.cluster_sync();
      k.if_(tid == 0u, [&] {
        k.mbarrier_arrive_expect_tx(bar, 4u);
        const Reg<U32> peer = k.xor_(rank, 1u);
        k.st_async(k.mapa(slot, peer), k.add(rank, 5u), k.mapa(bar, peer));
      });
      if (wait) k.mbarrier_wait(bar, 0u, Scope::Cluster);
      // Unfixed, only rank 1 reads: CTA 0 runs first, so its read would find bytes no peer wrote
      // yet, where rank 1's finds the peer's st.async in flight.
      const Pred reader = wait ? tid == 0u : k.and_(tid == 0u, rank == 1u);
      k.if_(reader, [&] { k.st(k.index(out, rank), k.ld(slot)); });
      k.cluster_sync();
    };
  };
  CHECK_THAT(run(consume(false), 2),
             Contains("CTA (1, 0, 0)") && Contains("ld.shared.u32") &&
                 Contains("reads shared memory at 0x0 ('cl_slot' + 0) that a st.async in flight "
                          "writes: wait for its mbarrier phase first"));
  std::vector<std::uint32_t> out;
  REQUIRE(run(consume(true), 2, &out) == "(no error)");
  CHECK(out[0] == 6u);
  CHECK(out[1] == 5u);
}

TEST_CASE("memcheck: barrier.cluster misuse", "[executor][cluster][memcheck]") {
  // .aligned in divergent code.
  CHECK_THAT(run(
                 [](Kernel& k, GlobalPtr<U32>) {
                   k.if_(k.tid_x() < 16u, [&] { k.barrier_cluster_arrive(); });
                   k.barrier_cluster_wait(MemSem::None, false);
                 },
                 2),
             Contains("barrier.cluster.arrive.aligned") &&
                 Contains("does not execute this .aligned instruction with the other threads"));
  // The unaligned form is fine there; a wait without an arrive is not.
  REQUIRE(run(
              [](Kernel& k, GlobalPtr<U32>) {
                k.if_(k.tid_x() < 16u, [&] { k.barrier_cluster_arrive(MemSem::None, false); });
                k.if_(k.tid_x() >= 16u, [&] { k.barrier_cluster_arrive(MemSem::None, false); });
                k.barrier_cluster_wait();
              },
              2) == "(no error)");
  CHECK_THAT(run([](Kernel& k, GlobalPtr<U32>) { k.barrier_cluster_wait(); }, 2),
             Contains("waits at barrier.cluster.wait without a barrier.cluster.arrive"));
  CHECK_THAT(run(
                 [](Kernel& k, GlobalPtr<U32>) {
                   k.barrier_cluster_arrive();
                   k.barrier_cluster_arrive();
                 },
                 2),
             Contains("arrives at barrier.cluster again before its barrier.cluster.wait"));
}

namespace {

// Clusters of `ctas` CTAs of 96 threads walk `rows` rows of `width` f32 (row = %clusterid.x,
// stepping by %nclusterid.x), each row's slice summed and its squares summed, reduced through
// ClusterSlots with `exchange`: on odd rows one call of both values, on even rows one call a
// value, so the buffers and phases alternate at every parity of calls a trip. Every thread stores
// its row's two totals at y[((row · ctas + rank) · 96 + tid) · 2 + {0, 1}].
void build_slots_walk(Kernel& k, std::uint32_t ctas, std::uint32_t width, std::uint32_t rows,
                      ClusterSlots::Exchange exchange) {
  constexpr std::uint32_t kThreads = 96;
  k.require_threads(kThreads);
  k.require_cluster({ctas, 1, 1});
  const GlobalPtr<F32> x = k.param_ptr<F32>("x"), y = k.param_ptr<F32>("y");
  const Reg<U32> tid = k.tid_x(), rank = k.cluster_ctarank();
  ClusterSlots slots(k, ctas, 2, tid, exchange);
  ClusterStart started(k, MemSem::Relaxed);
  const SharedPtr<F32> scratch =
      k.shared_array<F32>("scratch", 2 * group_reduce_scratch_floats(kThreads, 2));
  const Reg<U32> parity = k.mov<U32>(0u);
  const std::uint32_t slice = (width + ctas - 1) / ctas;
  started.await(k);
  k.for_range(
      k.special(Special::ClusteridX), rows, k.special(Special::NclusteridX), [&](Reg<U32> row) {
        const GlobalPtr<F32> at = k.row(x, row, width);
        const Reg<U32> begin = k.mul(rank, slice);
        const Reg<U32> end = k.min(k.add(begin, slice), width);
        const Reg<F32> sum = k.mov<F32>(0.0f), squares = k.mov<F32>(0.0f);
        k.for_range(k.add(begin, tid), end, kThreads, [&](Reg<U32> i) {
          const Reg<F32> v = k.ld(k.index(at, i));
          k.add(sum, sum, v);
          k.fma(squares, v, v, squares);
        });
        // The scratch alternates call by call: a buffer is written again only after the
        // other call's barrier.
        const auto next_scratch = [&] {
          const SharedPtr<F32> at_scratch =
              k.index(scratch, k.mul(parity, group_reduce_scratch_floats(kThreads, 2)));
          k.mov(parity, k.xor_(parity, 1u));
          return at_scratch;
        };
        const Reg<F32> total = k.mov<F32>(0.0f), total_squares = k.mov<F32>(0.0f);
        k.if_else(
            k.setp(Cmp::Ne, k.and_(row, 1u), 0u),
            [&] {
              const Reg<F32> both[] = {sum, squares};
              const auto r =
                  cluster_reduce(k, both, Reduction::sum(), kThreads, tid, next_scratch(), slots);
              k.mov(total, r[0]);
              k.mov(total_squares, r[1]);
            },
            [&] {
              const Reg<F32> one[] = {sum};
              k.mov(total, cluster_reduce(k, one, Reduction::sum(), kThreads, tid, next_scratch(),
                                          slots)[0]);
              const Reg<F32> other[] = {squares};
              k.mov(total_squares, cluster_reduce(k, other, Reduction::sum(), kThreads, tid,
                                                  next_scratch(), slots)[0]);
            });
        const GlobalPtr<F32> out =
            k.index(y, k.shl(k.mad(k.mad(row, ctas, rank), kThreads, tid), 1u));
        k.st(out, total);
        k.st(out + 1, total_squares);
      });
}

}  // namespace

TEST_CASE(
    "ClusterSlots: both exchanges give every thread of the cluster its row's sums, row "
    "after row, the same bits",
    "[executor][cluster][reduce]") {
  constexpr std::uint32_t kRows = 7, kThreads = 96;
  for (const std::uint32_t ctas : {2u, 4u, 8u}) {
    for (const std::uint32_t width : {5u, 1000u}) {
      std::vector<std::vector<float>> results;
      for (const auto exchange :
           {ClusterSlots::Exchange::Barrier, ClusterSlots::Exchange::Transactions}) {
        Module m(Arch::Sm90, {8, 1});
        Kernel& k = m.kernel("slots_walk");
        build_slots_walk(k, ctas, width, kRows, exchange);
        m.emit();
        const std::vector<float> xs = test::cluster_row_sum_inputs(kRows, width);
        std::vector<float> ys(std::size_t{kRows} * ctas * kThreads * 2, -1.0f);
        CpuDevice dev;
        // Three clusters for seven rows: each walks two or three, its calls alternating buffers.
        dev.launch(k, {3 * ctas, kThreads}, {dev.upload<float>(xs, "x"), dev.map<float>(ys)});
        INFO("cluster of " << ctas << ", width " << width << ", exchange "
                           << (exchange == ClusterSlots::Exchange::Barrier ? "barrier"
                                                                           : "transactions"));
        for (std::uint32_t r = 0; r < kRows; ++r) {
          double sum = 0, squares = 0;
          for (std::uint32_t i = 0; i < width; ++i) {
            const double v = xs[r * width + i];
            sum += v;
            squares += v * v;
          }
          const std::size_t first = std::size_t{r} * ctas * kThreads * 2;
          CHECK(std::fabs(ys[first] - sum) <= 1e-5 * width);
          CHECK(std::fabs(ys[first + 1] - squares) <= 1e-5 * width);
          for (std::uint32_t t = 0; t < ctas * kThreads; ++t) {
            if (ys[first + 2 * t] != ys[first] || ys[first + 2 * t + 1] != ys[first + 1]) {
              FAIL("row " << r << ", thread " << t << " differs from thread 0");
            }
          }
        }
        results.push_back(ys);
      }
      INFO("cluster of " << ctas << ", width " << width);
      CHECK(results[0] == results[1]);  // both combine in rank order
    }
  }
}

TEST_CASE(
    "ClusterSlots: Transactions is st.async onto mbarriers, no cluster barrier; refused "
    "below PTX 8.1",
    "[executor][cluster][reduce]") {
  CHECK(ClusterSlots::best_for(Arch::Sm90, {8, 1}) == ClusterSlots::Exchange::Transactions);
  CHECK(ClusterSlots::best_for(Arch::Sm100, {8, 6}) == ClusterSlots::Exchange::Transactions);
  CHECK(ClusterSlots::best_for(Arch::Sm90, {8, 0}) == ClusterSlots::Exchange::Barrier);
  CHECK(ClusterSlots::best_for(Arch::Sm80, {8, 1}) == ClusterSlots::Exchange::Barrier);
  {
    Module m(Arch::Sm90, {8, 1});
    Kernel& k = m.kernel("slots_walk");
    build_slots_walk(k, 4, 1000, 3, ClusterSlots::Exchange::Transactions);
    const std::string ptx = m.emit();
    CHECK(test::count(ptx, "mbarrier.init.shared.b64") == 2);
    CHECK(test::count(ptx, "st.async.shared::cluster.mbarrier::complete_tx::bytes.f32") == 4);
    CHECK(test::count(ptx, "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64") == 3);
    // The start's arrival and wait alone: no reduction waits for the whole cluster.
    CHECK(test::count(ptx, "barrier.cluster.arrive") == 1);
    CHECK(test::count(ptx, "barrier.cluster.wait") == 1);
    test::require_assembles(m, /*no_spills=*/true);
  }
  {
    Module m(Arch::Sm90, {8, 0});
    Kernel& k = m.kernel("slots_walk");
    CHECK_THROWS_WITH(
        [&] {
          build_slots_walk(k, 2, 1000, 3, ClusterSlots::Exchange::Transactions);
          k.finalize();
          m.emit();
        }(),
        Contains("st.async") && Contains("8.1"));
  }
  Module m(Arch::Sm90, {8, 1});
  Kernel& k = m.kernel("one_cta");
  CHECK_THROWS_WITH(ClusterSlots(k, 1, 1, k.tid_x(), ClusterSlots::Exchange::Transactions),
                    Contains("a cluster of 2 to 16 CTAs") && Contains("got 1 CTAs"));
}
