// One small complete kernel that uses every feature at once — 16-byte vector loads, masked tails,
// static and dynamic shared memory, all four shuffles, block reductions, run-time loops, if/else,
// predication, atomics — and must assemble for sm_80 and sm_90 without local memory.
#include <string>

#include "support.hpp"

using namespace ptxdsl;
using Catch::Matchers::Contains;

namespace {

constexpr std::uint32_t kBlock = 128;
constexpr std::uint32_t kChunks = 2;                   // 16-byte vectors per thread
constexpr std::uint32_t kSpan = kBlock * 4;            // columns one chunk covers
constexpr std::uint32_t kResident = kSpan * kChunks;   // columns kept in registers
constexpr std::uint32_t kStagedBytes = kResident * 4;  // the dynamic shared copy

// Row statistics and an RMS-style scaling for one row per CTA, `n` (a multiple of 4) columns:
//   y = x * w * rsqrt(mean(x^2) + eps); stats[row] = {rstd, max |x|, nonzeros of warp 0 (two
//   ways)}; sum_all += sum(x^2).
// Columns below kResident live in registers (and a shared copy); the rest stream in a loop.
Kernel& build_everything(Module& m) {
  Kernel& k = m.kernel("everything");
  const GlobalPtr<F32> x = k.param_ptr<F32>("x");
  const GlobalPtr<F32> w = k.param_ptr<F32>("w");
  const GlobalPtr<F32> y = k.param_ptr<F32>("y");
  const GlobalPtr<F32> stats = k.param_ptr<F32>("stats");
  const GlobalPtr<F32> sum_all = k.param_ptr<F32>("sum_all");
  const Reg<U32> n = k.param<U32>("n");
  const Reg<F32> eps = k.param<F32>("eps");
  k.require_threads(kBlock);
  const SharedPtr<F32> sum_scratch =
      k.shared_array<F32>("sum_scratch", group_reduce_scratch_floats(kBlock, 1));
  const SharedPtr<F32> max_scratch =
      k.shared_array<F32>("max_scratch", group_reduce_scratch_floats(kBlock, 1));
  const SharedPtr<F32> staged = k.shared_dynamic<F32>("staged", kStagedBytes);

  const Reg<U32> row = k.ctaid_x();
  const Reg<U32> tid = k.tid_x();
  const Reg<U32> lane = k.laneid();
  const GlobalPtr<F32> xrow = k.row(x, row, n);
  const GlobalPtr<F32> yrow = k.row(y, row, n);
  const Reg<U32> col0 = tid << 2u;  // this thread's first column
  const GlobalPtr<F32> x_mine = xrow + col0;
  const SharedPtr<F32> staged_mine = staged + col0;

  // Pass 1, resident columns: masked 16-byte loads, kept in registers and staged in shared memory.
  Reg<F32> ss = k.mov<F32>(0.0f);
  Reg<F32> mx = k.mov<F32>(0.0f);
  Reg<U32> nonzero = k.mov<U32>(0u);
  for (std::uint32_t j = 0; j < kChunks; ++j) {
    const Reg<U32> end = k.add(col0, j * kSpan + 4);
    const Pred full = end <= n;
    const Vec<F32, 4> v = k.ld_v_if<4>(full, x_mine + j * kSpan, 0.0f, kNcNoAllocate);
    k.st_v<4>(staged_mine + j * kSpan, v);
    for (const Reg<F32> e : v) {
      k.fma(ss, e, e, ss);
      k.mov(mx, k.max(mx, k.abs(e)));
      const Pred is_nonzero = k.setp(Cmp::Ne, e, 0.0f);
      k.predicated(is_nonzero, [&] { k.add(nonzero, nonzero, 1u); });
    }
  }
  // Pass 1, streamed columns: a loop with run-time bounds.
  const Reg<U32> first_streamed = k.add(tid, kResident);
  k.for_range(first_streamed, n, kBlock, [&](Reg<U32> i) {
    const Reg<F32> e = k.ld(xrow + i, kNc);
    k.fma(ss, e, e, ss);
    k.mov(mx, k.max(mx, k.abs(e)));
  });

  // Block reductions (warp butterflies, shared partials, a second warp pass, broadcast).
  const Reg<F32> total = block_reduce_sum(k, ss, kBlock, tid, sum_scratch);
  const Reg<F32> maxes[] = {mx};
  const Reg<F32> row_max =
      group_reduce(k, maxes, ReduceOp::Max, kBlock, kBlock, tid, max_scratch)[0];
  const Reg<F32> inv_n = k.rcp(k.cvt<F32>(n), kApprox);
  const Reg<F32> rstd = k.rsqrt(k.fma(total, inv_n, eps));

  // Warp 0's nonzero count two ways: an inclusive scan (shfl.up), its last lane broadcast
  // (shfl.idx), and a tree (shfl.down) ending in lane 0.
  const Reg<U32> scan = k.mov(nonzero);
  for (std::uint32_t d = 1; d < 32; d *= 2) {
    const Reg<U32> below = k.shfl_up(scan, d);
    const Pred has_below = lane >= d;
    k.predicated(has_below, [&] { k.add(scan, scan, below); });
  }
  const Reg<U32> warp_count = k.shfl_idx(scan, 31u);
  const Reg<U32> tree = k.mov(nonzero);
  for (std::uint32_t d = 16; d >= 1; d /= 2) {
    const Reg<U32> above = k.shfl_down(tree, d);
    k.add(tree, tree, above);
  }
  const GlobalPtr<F32> stats_row = k.row(stats, row, 4u);
  k.if_(tid == 0u, [&] {
    k.st(stats_row, rstd);
    k.st(stats_row + 1, row_max);
    k.st(stats_row.as<U32>() + 2, warp_count);
    k.st(stats_row.as<U32>() + 3, tree);
    k.red_add(sum_all, total);
  });

  // Pass 2: from the staged copy when the row fits, else streamed from global memory.
  const Pred fits = n <= kResident;
  k.if_else(
      fits,
      [&] {
        const GlobalPtr<F32> w_mine = w + col0;
        const GlobalPtr<F32> y_mine = yrow + col0;
        for (std::uint32_t j = 0; j < kChunks; ++j) {
          const Reg<U32> end = k.add(col0, j * kSpan + 4);
          const Pred full = end <= n;
          const Vec<F32, 4> v = k.ld_v<4>(staged_mine + j * kSpan);
          const Vec<F32, 4> wv = k.ld_v_if<4>(full, w_mine + j * kSpan, 0.0f, kNc);
          Vec<F32, 4> out;
          for (int e = 0; e < 4; ++e) out[e] = k.mul(k.mul(v[e], rstd), wv[e]);
          k.st_v_if<4>(full, y_mine + j * kSpan, out, kStreaming);
        }
      },
      [&] {
        k.for_range(tid, n, kBlock, [&](Reg<U32> i) {
          const Reg<F32> e = k.ld(xrow + i, kNc);
          const Reg<F32> wi = k.ld(w + i, kNc);
          const Reg<F32> out = k.mul(k.mul(e, rstd), wi);
          k.st(yrow + i, out, kStreaming);
        });
      });
  return k;
}

}  // namespace

TEST_CASE("a kernel using every feature assembles without local memory", "[dsl][kernel]") {
  for (Arch arch : test::kArches) {
    Module m(arch);
    Kernel& k = build_everything(m);
    const PtxasResult r = test::require_assembles(m, /*no_spills=*/true);
    const std::string ptx = m.emit();
    INFO(ptx);
    // The two 16-byte scratch arrays take a 128-byte line each, so that the staging array after
    // them starts on one.
    CHECK_THAT(ptx, Contains(".shared .align 16 .b8 everything_sum_scratch[128];") &&
                        Contains(".shared .align 16 .b8 everything_max_scratch[128];") &&
                        Contains(".extern .shared .align 128 .b8 everything_staged[];") &&
                        Contains(".reqntid 128, 1, 1"));
    const std::pair<const char*, int> families[] = {
        {"ld.global.nc.L1::no_allocate.v4.f32", 2},  // masked resident loads
        {"ld.global.nc.v4.f32", 2},                  // masked weight loads
        {"st.global.cs.v4.f32", 2},                  // masked stores
        {"st.shared.v4.f32", 2},                     // staging (dynamic shared)
        {"ld.shared.v4.f32", 2},
        {"shfl.sync.bfly.b32", 2 * (5 + 2)},  // two block reductions of 4 warps
        {"shfl.sync.idx.b32", 3},             // two broadcasts and the scan's last lane
        {"shfl.sync.up.b32", 5},
        {"shfl.sync.down.b32", 5},
        {"bar.sync 0;", 2},
        {"red.global.add.f32", 1},
        {"rsqrt.approx.f32", 1},
        {"rcp.approx.f32", 1},
        {"cvt.rn.f32.u32", 1},
        {"$L__loop_0:", 1},
        {"$L__loop_5:", 1},  // the else branch's loop
        {"$L__else_", 2},
        {"$L__endif_", 4},
    };
    for (const auto& [needle, times] : families) {
      INFO(needle);
      CHECK(test::count(ptx, needle) == times);
    }
    // Predication: masked loads and stores, lane-0 stores, nonzero counts, scan steps.
    CHECK(test::count(ptx, "@%p") >= 2 + 2 + 8 + 5);
    const KernelContract c = k.contract();
    CHECK(c.static_shared_bytes == 256);
    CHECK(c.dynamic_shared_bytes == kStagedBytes);
    CHECK(c.params.size() == 7);
    REQUIRE(r.entries.size() == 1);
    CHECK(r.entries[0].shared_bytes == 256);  // ptxas's static size: the contract's
  }
}
