// The structure of the pyptx RMS-norm example (examples/hopper/rms_norm.py), written in the DSL
// with no PTX strings: one CTA per row, strided 16-byte loads, an fma sum of squares, a warp
// butterfly, shared partials summed by thread 0, rsqrt.approx, and 16-byte stores of x * rstd * w.
// docs/dsl.md walks through this builder; its PTX listing is checked against it here.
#include <fmt/format.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "support.hpp"

using namespace ptxdsl;

namespace {

// pyptx's _pick_block: the smallest CTA of at least 128 threads that gives every thread a
// multiple of 4 (and at least 4) elements, else any CTA size dividing the row.
std::uint32_t pick_block(std::uint32_t n) {
  constexpr std::uint32_t kCandidates[] = {512, 256, 128, 64, 32};
  std::optional<std::uint32_t> best;
  for (std::uint32_t block : kCandidates) {
    const std::uint32_t per_thread = n / block;
    if (n % block == 0 && per_thread >= 4 && per_thread % 4 == 0 && block >= 128) best = block;
  }
  if (best) return *best;
  for (std::uint32_t block : kCandidates) {
    if (n % block == 0) return block;
  }
  throw Error(fmt::format("width must be a multiple of 32, got {}", n));
}

// --- the walkthrough in docs/dsl.md starts here ---
Kernel& build_rms_norm(Module& m, std::uint32_t n, float eps = 1e-6f) {
  const std::uint32_t block = pick_block(n);
  const std::uint32_t warps = block / 32;
  const std::uint32_t per_thread = n / block;
  const bool use_v4 = per_thread >= 4 && per_thread % 4 == 0;

  Kernel& k = m.kernel(fmt::format("rms_norm_{}", n));
  const GlobalPtr<F32> x = k.param_ptr<F32>("x");
  const GlobalPtr<F32> w = k.param_ptr<F32>("w");
  const GlobalPtr<F32> y = k.param_ptr<F32>("y");
  k.require_threads(block);  // grid: one CTA per row
  const SharedPtr<F32> partials = k.shared_array<F32>("partials", warps);
  const SharedPtr<F32> stats = k.shared_array<F32>("stats", 1);

  const Reg<U32> tid = k.tid_x();
  const Reg<U32> row = k.ctaid_x();
  const GlobalPtr<F32> xrow = k.row(x, row, n);  // x + row * n, in 64 bits
  const GlobalPtr<F32> yrow = k.row(y, row, n);
  const Reg<U32> lane = tid & 31u;
  const Reg<U32> warp = tid >> 5u;

  // Pass 1: each thread loads a strided slice of the row and sums its squares.
  const Reg<F32> sum_sq = k.mov<F32>(0.0f);
  std::vector<Reg<F32>> xs;                               // registers, unrolled at build time
  const Reg<U32> first = use_v4 ? tid << 2u : tid;        // this thread's first column
  const GlobalPtr<F32> x_mine = xrow + first;             // one mad.wide; offsets fold below
  const std::uint32_t step = use_v4 ? block * 4 : block;  // columns between a thread's loads
  for (std::uint32_t j = 0; j < (use_v4 ? per_thread / 4 : per_thread); ++j) {
    if (use_v4) {
      for (const Reg<F32> e : k.ld_v<4>(x_mine + j * step)) xs.push_back(e);
    } else {
      xs.push_back(k.ld(x_mine + j * step));
    }
  }
  for (const Reg<F32> e : xs) k.fma(sum_sq, e, e, sum_sq);

  // Warp butterfly, one partial per warp in shared memory, thread 0 sums the partials.
  const Reg<F32> warp_sum = warp_reduce_sum(k, sum_sq);
  k.if_(lane == 0u, [&] { k.st(partials + warp, warp_sum); });
  k.bar_sync();
  k.if_(tid == 0u, [&] {
    const Reg<F32> block_sum = k.mov<F32>(0.0f);
    for (std::uint32_t i = 0; i < warps; ++i) k.add(block_sum, block_sum, k.ld(partials + i));
    k.st(stats, block_sum);
  });
  k.bar_sync();
  const Reg<F32> mean_sq = k.ld(stats) * (1.0f / static_cast<float>(n));
  const Reg<F32> rstd = k.rsqrt(mean_sq + eps);  // rsqrt.approx.f32

  // Pass 2: reuse the registers; y = x * rstd * w.
  const GlobalPtr<F32> w_mine = w + first;
  const GlobalPtr<F32> y_mine = yrow + first;
  for (std::uint32_t j = 0; j < (use_v4 ? per_thread / 4 : per_thread); ++j) {
    if (use_v4) {
      const Vec<F32, 4> wv = k.ld_v<4>(w_mine + j * step);
      Vec<F32, 4> out;
      for (int s = 0; s < 4; ++s) out[s] = (xs[j * 4 + s] * rstd) * wv[s];
      k.st_v<4>(y_mine + j * step, out);
    } else {
      const Reg<F32> wi = k.ld(w_mine + j * step);
      k.st(y_mine + j * step, (xs[j] * rstd) * wi);
    }
  }
  return k;
}
// --- the walkthrough in docs/dsl.md ends here ---

// The PTX of the walkthrough's kernel as docs/dsl.md shows it: the block after the marker line.
std::string documented_ptx() {
  std::ifstream f(std::string(PTXDSL_SOURCE_DIR) + "/docs/dsl.md");
  REQUIRE(f);
  std::stringstream text;
  text << f.rdbuf();
  const std::string doc = text.str();
  const std::string marker = "<!-- rms_norm_1024.ptx: checked by tests/dsl/rms_norm.cpp -->";
  const std::size_t at = doc.find(marker);
  REQUIRE(at != std::string::npos);
  const std::size_t open = doc.find("```ptx\n", at);
  REQUIRE(open != std::string::npos);
  const std::size_t begin = open + 7;
  const std::size_t close = doc.find("```", begin);
  REQUIRE(close != std::string::npos);
  return doc.substr(begin, close - begin);
}

}  // namespace

TEST_CASE("the pyptx RMS-norm structure in the DSL", "[dsl][kernel][rms]") {
  struct Case {
    std::uint32_t n, block;
    bool v4;
  };
  // 8192 is the pyptx headline shape; 384 takes the scalar path (3 elements a thread).
  const Case cases[] = {{1024, 128, true}, {4096, 128, true}, {8192, 128, true}, {384, 128, false}};
  for (Arch arch : test::kArches) {
    Module m(arch);
    for (const Case& c : cases) {
      CHECK(pick_block(c.n) == c.block);
      Kernel& k = build_rms_norm(m, c.n);
      const std::string body = test::body_text(k);
      INFO(k.name() << "\n" << body);
      const int per_thread = static_cast<int>(c.n / c.block);
      const int loads = c.v4 ? per_thread / 4 : per_thread;
      const std::string vec = c.v4 ? ".v4" : "";
      // One CTA per row: the row comes from %ctaid.x; x and y's rows are one mad.wide each.
      CHECK(test::count(body, "%ctaid.x") == 1);
      CHECK(test::count(body, fmt::format("mad.wide.u32 %rd7, %r4, {}, %rd2;", c.n * 4)) == 1);
      CHECK(test::count(body, fmt::format("mad.wide.u32 %rd8, %r4, {}, %rd6;", c.n * 4)) == 1);
      CHECK(k.contract().block_threads == c.block);
      CHECK(k.contract().block_required);
      // Strided loads of x and w and stores of y, 16 bytes each when v4, offsets folded.
      CHECK(test::count(body, "ld.global" + vec + ".f32") == 2 * loads);
      CHECK(test::count(body, "st.global" + vec + ".f32") == loads);
      CHECK(test::count(body, "mad.wide.u32") == 2 + 3);
      CHECK(test::count(body, "fma.rn.f32") == per_thread);
      // Warp butterfly, shared partials, two barriers, thread 0's sum, rsqrt.
      CHECK(test::count(body, "shfl.sync.bfly.b32") == 5);
      CHECK(test::count(body, "st.shared.f32") == 2);
      CHECK(test::count(body, "ld.shared.f32") == static_cast<int>(c.block / 32) + 1);
      CHECK(test::count(body, "bar.sync 0;") == 2);
      CHECK(test::count(body, "rsqrt.approx.f32") == 1);
    }
    test::require_assembles(m, /*no_spills=*/true);
  }
}

TEST_CASE("docs/dsl.md shows the PTX its walkthrough prints", "[dsl][docs]") {
  Module m(Arch::Sm90);
  build_rms_norm(m, 1024);
  const std::string ptx = m.emit();
  if (ptx != documented_ptx()) {
    // What the doc should show, to paste in after a deliberate change to the emitter.
    std::ofstream("rms_norm_1024.ptx") << ptx;
    FAIL_CHECK(
        "docs/dsl.md is out of date: the current PTX is in rms_norm_1024.ptx, in the "
        "test's working folder");
  }
}
