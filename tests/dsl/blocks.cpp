// The building blocks (<ptxdsl/dsl/blocks/...>): vector widths and row tiles as values, their
// errors, the math helpers' instructions, and a row's element I/O and reductions run on the CPU
// executor for each element type at widths with masked tails.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <ptxdsl/dsl/executor.hpp>

#include "support.hpp"

using namespace ptxdsl;
using Catch::Matchers::Contains;

TEST_CASE("vector widths are values: 16 bytes at most, aligned on every row", "[dsl][blocks]") {
  CHECK(max_vector_elems(ScalarType::F32) == 4);
  CHECK(max_vector_elems(ScalarType::BF16) == 8);
  CHECK(vector_elems_for(ScalarType::F16, 1000) == 8);
  CHECK(vector_elems_for(ScalarType::F16, 1002) == 2);
  CHECK(vector_elems_for(ScalarType::F32, 33) == 1);
  CHECK(vector_elems_for(ScalarType::BF16, 4096, 0x1008) == 4);  // rows 8 bytes off 16
  CHECK(vector_aligned(ScalarType::F32, 4, 0x10));
  CHECK_FALSE(vector_aligned(ScalarType::F32, 4, 0x08));
  check_vector_elems(ScalarType::F16, 8);
  CHECK_THAT(
      test::error_of([] { check_vector_elems(ScalarType::F32, 8); }),
      Contains("vector of f32 must have 1, 2, 4 or 8 elements, at most 4 (16 bytes), got 8"));
  CHECK_THAT(test::error_of([] { check_vector_elems(ScalarType::F16, 3); }), Contains("got 3"));
}

TEST_CASE("RowMap: width to vector, threads and chunks", "[dsl][blocks]") {
  const RowMap odd = RowMap::fit(4097, ScalarType::F32);
  CHECK((odd.vec == 1 && odd.threads == 256 && odd.chunks == 17));
  CHECK(odd.tail() == 0);
  const RowMap halves = RowMap::fit(1000, ScalarType::F16);
  CHECK((halves.vec == 8 && halves.threads == 128 && halves.chunks == 1));
  CHECK_FALSE(halves.complete(0));
  CHECK(halves.full_lanes(0) == 125);
  const RowMap one = RowMap::fit(1, ScalarType::BF16, 64);
  CHECK((one.vec == 1 && one.threads == 32 && one.chunks == 1));
  const RowMap tailed = RowMap::make(1001, 4, 64);
  CHECK((tailed.chunks == 4 && tailed.tail() == 1 && tailed.full_lanes(3) == 58));
  const RowMap split = RowMap::make(1024, 8, 32, 1001);  // a 1001-wide end: 125 vectors and 1
  CHECK((split.chunks == 4 && split.common_width() == 1001 && split.tail() == 1));
  CHECK((split.complete(2) && !split.complete(3) && split.tail_chunk() == 3));
  CHECK((split.full_lanes(3) == 32 && split.full_lanes(3, 1001) == 29));
  CHECK_THAT(test::error_of([] { RowMap::make(1024, 8, 32, 1024); }),
             Contains("a row's short end must be in [1, 1023] and the other slices whole vectors "
                      "of 8: got short_width 1024 of width 1024"));
  CHECK_THAT(test::error_of([] { RowMap::make(1001, 8, 32, 900); }),
             Contains("got short_width 900 of width 1001"));
  CHECK_THAT(test::error_of([] { RowMap::make(0, 1, 32); }),
             Contains("row width must be at least 1"));
  CHECK_THAT(test::error_of([] { RowMap::make(10, 3, 32); }),
             Contains("row vector width must be 1, 2, 4 or 8 elements, got 3"));
  CHECK_THAT(test::error_of([] { RowMap::fit(10, ScalarType::F32, 48); }),
             Contains("max_threads must be a power of two in [32, 1024], got 48"));
  CHECK_THAT(
      test::error_of([] { RowMap::fit(10, ScalarType::F64); }),
      Contains("a row's element type must be f32, f16, bf16, u8, s8, e4m3 or e5m2, got f64"));
}

TEST_CASE("math helpers: their instructions, approx and ftz spelled out", "[dsl][blocks]") {
  Module m;
  Kernel& k = m.kernel("math");
  const Reg<F32> x = k.param<F32>("x");
  exp_approx(k, x);
  exp_approx(k, x, /*ftz=*/true);
  log_approx(k, x);
  rsqrt_rn(k, x);
  const std::string body = test::body_text(k);
  INFO(body);
  CHECK_THAT(body, Contains("mul.f32 %f2, %f1, 0f3FB8AA3B;\nex2.approx.f32 %f3, %f2;"));
  CHECK_THAT(body, Contains("mul.ftz.f32 %f4, %f1, 0f3FB8AA3B;\nex2.approx.ftz.f32 %f5, %f4;"));
  CHECK_THAT(body, Contains("lg2.approx.f32 %f6, %f1;\nmul.f32 %f7, %f6, 0f3F317218;"));
  CHECK_THAT(body, Contains("sqrt.rn.f32 %f8, %f1;\nrcp.rn.f32 %f9, %f8;"));
}

TEST_CASE("element I/O and reducer misuse is refused by name", "[dsl][blocks]") {
  Module m;
  Kernel& k = m.kernel("misuse");
  CHECK_THAT(
      test::error_of([&] { param_dptr(k, "x", ScalarType::F64); }),
      Contains(
          "kernel 'misuse', parameter 'x' must be f32, f16, bf16, u8, s8, e4m3 or e5m2, got f64"));
  const Reg<U32> tid = k.tid_x();
  CHECK_THAT(test::error_of([&] { Reducer(k, 48, 96, tid); }), Contains("group size"));
  Reducer warp = Reducer::warp(k);
  const Reg<F32> v = k.mov<F32>(1.0f);
  CHECK_THAT(test::error_of([&] {
               warp.reduce(k, {v, v, v, v, v}, Reduction::sum());
             }),
             Contains("5 values, but the reducer was made for at most 4"));
  CHECK_THAT(test::error_of([&] {
               warp.reduce(k, {v, v}, {Reduction::max()});
             }),
             Contains("1 operations for 2 values"));
  CHECK_THAT(test::error_of([&] { tree_reduce(k, std::span<const Reg<F32>>{}, Reduction::min()); }),
             Contains("tree_reduce (min): no values"));
  CHECK_THAT(test::error_of([] { Reduction::of("none", {}, 0.0f); }),
             Contains("reduction 'none' has no combine function"));
}

namespace {

// One CTA a row: copies the row through RowPerCta's load and store, and reduces it by max, min,
// sum and absolute maximum at once, lane 0 writing the four results and one more.
void build_row_kernel(Module& m, ScalarType t, const RowMap& map) {
  Kernel& k = m.kernel("row");
  const GlobalDPtr x = param_dptr(k, "x", t);
  const GlobalDPtr y = param_dptr(k, "y", t);
  const GlobalPtr<F32> stats = k.param_ptr<F32>("stats");
  RowPerCta row(k, map);
  const Reduction absmax = Reduction::absmax();
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const std::vector<Values> v = row.load(k, x);
  row.store(k, y, v);
  Values hi, lo, sum, mag;
  for (std::uint32_t j = 0; j < map.chunks; ++j) {
    hi.push_back(tree_reduce(k, mask_past_width(k, row.lanes(), j, v[j], -kInf), Reduction::max()));
    lo.push_back(tree_reduce(k, mask_past_width(k, row.lanes(), j, v[j], kInf), Reduction::min()));
    sum.push_back(tree_reduce(k, v[j], Reduction::sum()));
    mag.push_back(tree_reduce(k, v[j], absmax));
  }
  const std::vector<Reg<F32>> r = row.reducer().reduce(
      k,
      {tree_reduce(k, hi, Reduction::max()), tree_reduce(k, lo, Reduction::min()),
       tree_reduce(k, sum, Reduction::sum()), tree_reduce(k, mag, absmax)},
      {Reduction::max(), Reduction::min(), Reduction::sum(), absmax});
  // Straight after: the reducer's other buffer, no barrier between (the executor would see a race).
  const Reg<F32> again = row.reduce(k, v, Reduction::sum());
  k.predicated(k.setp(Cmp::Eq, row.tid(), 0u), [&] {
    const GlobalPtr<F32> out = k.index(stats, k.mul(row.row(), 5u));
    for (int i = 0; i < 4; ++i) k.st(out + i, r[i]);
    k.st(out + 4, again);
  });
  k.finalize();
}

std::uint16_t to_bits(ScalarType t, float v) {
  return t == ScalarType::F16 ? f32_to_f16_bits(v) : f32_to_bf16_bits(v);
}

float from_bits(ScalarType t, std::uint16_t b) {
  return t == ScalarType::F16 ? f16_bits_to_f32(b) : bf16_bits_to_f32(b);
}

}  // namespace

namespace {

// A row split over `ctas` CTAs: CTA c copies columns [c·S, c·S + S) of it (S = map.width), the
// last CTA its shorter end (map.short_width), and each thread writes the largest of its elements
// (mask_past_width: -inf where it holds none).
void build_slice_kernel(Module& m, ScalarType t, const RowMap& map, std::uint32_t ctas) {
  Kernel& k = m.kernel("slices");
  const GlobalDPtr x = param_dptr(k, "x", t);
  const GlobalDPtr y = param_dptr(k, "y", t);
  const GlobalPtr<F32> most = k.param_ptr<F32>("most");
  const Reg<U32> cta = k.ctaid_x();
  const Reg<U32> lane = k.tid_x();
  const RowLanes lanes(k, map, lane, k.setp(Cmp::Eq, cta, ctas - 1));
  const RowMasks masks(k, lanes, std::nullopt);
  const Reg<U32> first = k.mad(cta, map.width, lanes.first_element());
  const GlobalDPtr from = at(k, x, first), to = at(k, y, first);
  Reg<F32> hi = k.mov<F32>(-std::numeric_limits<float>::infinity());
  for (std::uint32_t j = 0; j < map.chunks; ++j) {
    const Values v = load_chunk(k, masks, from, j);
    store_chunk(k, masks, to, j, v);
    const float kLowest = -std::numeric_limits<float>::infinity();
    for (const Reg<F32>& e : mask_past_width(k, lanes, j, v, kLowest)) hi = k.max(hi, e);
  }
  k.st(k.index(most, k.mad(cta, map.threads, lane)), hi);
  k.finalize();
}

}  // namespace

TEST_CASE("a row split over CTAs whose last slice is shorter: masks, tails, nothing past the end",
          "[dsl][blocks][executor]") {
  // Slices of whole vectors; the last CTA's end falls inside a chunk, before the last chunk, on a
  // chunk's edge, and with lone elements, so every kind of mask it takes is run.
  struct Case {
    std::uint32_t width, vec, threads, ctas, last;
  };
  const Case cases[] = {{256, 8, 32, 3, 251}, {256, 8, 32, 2, 100}, {512, 4, 64, 4, 256},
                        {64, 2, 32, 5, 1},    {96, 1, 32, 2, 95},   {40, 8, 32, 3, 17}};
  for (const Case& c : cases) {
    for (ScalarType t : {ScalarType::F32, ScalarType::BF16}) {
      if (c.vec > max_vector_elems(t)) continue;
      const RowMap map = RowMap::make(c.width, c.vec, c.threads, c.last);
      const std::uint32_t n = (c.ctas - 1) * c.width + c.last;
      INFO(ptx_name(t) << " slices of " << c.width << " over " << c.ctas << " CTAs, the last "
                       << c.last << ": vec " << c.vec << ", threads " << c.threads);
      Module m;
      build_slice_kernel(m, t, map, c.ctas);
      std::vector<float> x(n);
      for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>((i * 37) % 101) - 50.0f;
      // y's allocation runs a whole slice past the row: nothing may land there.
      const std::size_t padded = std::size_t{c.ctas} * c.width;
      std::vector<float> y(padded, 1e9f), most(std::size_t{c.ctas} * c.threads);
      CpuDevice dev;
      if (t == ScalarType::F32) {
        dev.launch(*m.kernels()[0], {.grid = c.ctas, .block = c.threads},
                   {dev.upload<float>(x, "x"), dev.map<float>(y, "y"), dev.map<float>(most, "m")});
      } else {
        std::vector<std::uint16_t> xb(n), yb(padded, to_bits(t, 1e9f));
        for (std::size_t i = 0; i < n; ++i) xb[i] = to_bits(t, x[i]);
        dev.launch(*m.kernels()[0], {.grid = c.ctas, .block = c.threads},
                   {dev.upload<std::uint16_t>(xb, "x"), dev.map<std::uint16_t>(yb, "y"),
                    dev.map<float>(most, "m")});
        for (std::size_t i = 0; i < padded; ++i) y[i] = from_bits(t, yb[i]);
      }
      CHECK(std::equal(x.begin(), x.end(), y.begin()));
      CHECK(std::all_of(y.begin() + n, y.end(), [&](float v) { return v == y.back(); }));
      CHECK(y.back() != x.back());
      for (std::uint32_t cta = 0; cta < c.ctas; ++cta) {
        for (std::uint32_t lane = 0; lane < c.threads; ++lane) {
          float want = -std::numeric_limits<float>::infinity();
          for (std::uint32_t j = 0; j < map.chunks; ++j) {
            for (std::uint32_t e = 0; e < c.vec; ++e) {
              const std::uint64_t column = std::uint64_t{(j * c.threads + lane) * c.vec + e};
              if (column < (cta + 1 == c.ctas ? c.last : c.width)) {
                want = std::max(want, x[cta * c.width + column]);
              }
            }
          }
          INFO("CTA " << cta << " lane " << lane);
          CHECK(most[cta * c.threads + lane] == want);
        }
      }
    }
  }
}

TEST_CASE("a row's element I/O and reductions, every element type, masked tails",
          "[dsl][blocks][executor]") {
  const ScalarType types[] = {ScalarType::F32, ScalarType::F16, ScalarType::BF16};
  for (ScalarType t : types) {
    for (std::uint32_t width : {1u, 37u, 1000u, 1001u}) {
      const RowMap map = RowMap::fit(width, t, 128);
      INFO(ptx_name(t) << " width " << width << ": vec " << map.vec << ", threads " << map.threads
                       << ", chunks " << map.chunks);
      Module m;
      build_row_kernel(m, t, map);
      const std::uint32_t rows = 2;
      std::vector<float> x(width * rows);
      for (std::size_t i = 0; i < x.size(); ++i) {
        x[i] = static_cast<float>((i * 37) % 101) / 8.0f - 6.0f;  // exact in bf16
      }
      CpuDevice dev;
      std::vector<float> stats(rows * 5, -1.0f);
      std::vector<float> y(x.size());
      if (t == ScalarType::F32) {
        dev.launch(*m.kernels()[0], {.grid = rows, .block = map.threads},
                   {dev.upload<float>(x, "x"), dev.map<float>(y, "y"), dev.map<float>(stats, "s")});
      } else {
        std::vector<std::uint16_t> xb(x.size()), yb(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) xb[i] = to_bits(t, x[i]);
        dev.launch(*m.kernels()[0], {.grid = rows, .block = map.threads},
                   {dev.upload<std::uint16_t>(xb, "x"), dev.map<std::uint16_t>(yb, "y"),
                    dev.map<float>(stats, "s")});
        for (std::size_t i = 0; i < x.size(); ++i) y[i] = from_bits(t, yb[i]);
      }
      CHECK(y == x);
      for (std::uint32_t r = 0; r < rows; ++r) {
        const auto first = x.begin() + r * width, last = first + width;
        double sum = 0, mag = 0;
        for (auto i = first; i != last; ++i) {
          sum += *i;
          mag = std::max(mag, std::fabs(static_cast<double>(*i)));
        }
        CHECK(stats[r * 5 + 0] == *std::max_element(first, last));
        CHECK(stats[r * 5 + 1] == *std::min_element(first, last));
        CHECK(stats[r * 5 + 2] == Approx(sum).margin(1e-3));
        CHECK(stats[r * 5 + 3] == static_cast<float>(mag));
        CHECK(stats[r * 5 + 4] == stats[r * 5 + 2]);  // exact sums: any order agrees
      }
    }
  }
}

namespace {

// f(x) for each x in one CTA on the executor.
std::vector<float> run_math(const std::function<Reg<F32>(Kernel&, Reg<F32>)>& f,
                            const std::vector<float>& xs) {
  Module m;
  Kernel& k = m.kernel("math_values");
  const GlobalPtr<F32> in = k.param_ptr<F32>("in");
  const GlobalPtr<F32> out = k.param_ptr<F32>("out");
  const Reg<U32> t = k.tid_x();
  k.st(k.index(out, t), f(k, k.ld(k.index(in, t))));
  k.finalize();
  std::vector<float> got(xs.size(), -1.0f);
  CpuDevice dev;
  dev.launch(k, {1, static_cast<std::uint32_t>(xs.size())},
             {dev.upload<float>(xs, "in"), dev.map<float>(got, "out")});
  return got;
}

}  // namespace

TEST_CASE("sigmoid, silu and gelu: instructions, and values within their stated error",
          "[dsl][blocks][executor]") {
  Module m;
  Kernel& k = m.kernel("act");
  const Reg<F32> x = k.param<F32>("x");
  sigmoid(k, x);
  const std::string body = test::body_text(k);
  INFO(body);
  CHECK_THAT(body, Contains("neg.f32 %f2, %f1;\nmul.f32 %f3, %f2, 0f3FB8AA3B;\n"
                            "ex2.approx.f32 %f4, %f3;\nadd.f32 %f5, %f4, 0f3F800000;\n"
                            "rcp.approx.f32 %f6, %f5;"));

  std::vector<float> xs;
  for (int i = -40; i <= 40; ++i) xs.push_back(static_cast<float>(i) * 0.37f);
  const auto sig = run_math([](Kernel& kk, Reg<F32> v) { return sigmoid(kk, v); }, xs);
  const auto swish = run_math([](Kernel& kk, Reg<F32> v) { return silu(kk, v); }, xs);
  const auto g = run_math([](Kernel& kk, Reg<F32> v) { return gelu(kk, v); }, xs);
  const auto ulp = [](double v) {
    const auto f = static_cast<float>(std::fabs(v));
    return static_cast<double>(std::nextafter(f, INFINITY) - f);
  };
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double x = xs[i];
    const double s = 1.0 / (1.0 + std::exp(-x));
    // exp_approx's bound at -x (2 + |1.173·x| ulp), plus the add, the rcp and the product.
    const double exp_ulps = 2 + std::floor(std::fabs(1.173 * x));
    INFO("x = " << x);
    CHECK(std::fabs(sig[i] - s) <= (exp_ulps + 2) * ulp(s));
    // A subnormal sigmoid's rounding (half of 2^-149) grows by |x| in the product.
    const double tiny = (std::fabs(x) + 2) * std::numeric_limits<float>::denorm_min();
    CHECK(std::fabs(swish[i] - x * s) <= (exp_ulps + 3) * ulp(x * s) + tiny);
    const double u = std::sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x);
    // 0.5·x·(1 + tanh(u)) without the cancellation of 1 + tanh(u) for large negative u.
    const double want = x / (1 + std::exp(-2 * u));
    // sigmoid's bound at 2u, plus 2u's own rounding (about 1.5 ulp of it) carried through e^-2u.
    const double gelu_ulps = 2 + std::floor(std::fabs(1.173 * 2 * u)) + 1.5 * std::fabs(2 * u) + 4;
    // Past v = -88 (x below about -10.2) e^-v overflows: 0 for what is subnormal.
    const double floor = std::fabs(want) < std::numeric_limits<float>::min()
                             ? std::numeric_limits<float>::min()
                             : tiny;
    INFO("gelu " << g[i] << ", want " << want);
    CHECK(std::fabs(g[i] - want) <= gelu_ulps * ulp(want) + floor);
  }
}

TEST_CASE("warp_compact: kept lanes packed in lane order, per warp", "[dsl][blocks][executor]") {
  Module m;
  Kernel& k = m.kernel("compact");
  const GlobalPtr<U32> in = k.param_ptr<U32>("in");
  const GlobalPtr<U32> out = k.param_ptr<U32>("out");
  const GlobalPtr<U32> counts = k.param_ptr<U32>("counts");
  const Reg<U32> t = k.tid_x();
  const Reg<U32> v = k.ld(k.index(in, t));
  const Pred keep = k.setp(Cmp::Ne, k.and_(v, 1u), 0u) && k.setp(Cmp::Lt, v, 200u);
  const WarpCompaction c = warp_compact(k, keep);
  const Reg<U32> base = k.mul(k.shr(t, 5u), 32u);
  k.st_if(keep, k.index(out, k.add(base, c.slot)), v);
  k.st_if(k.setp(Cmp::Eq, k.laneid(), 0u), k.index(counts, k.shr(t, 5u)), c.count);
  k.finalize();
  std::vector<std::uint32_t> x(64), got(64, 0), n(2, 0);
  for (std::uint32_t i = 0; i < 64; ++i) x[i] = (i * 37 + 11) % 251;
  CpuDevice dev;
  dev.launch(k, {1, 64},
             {dev.upload<std::uint32_t>(x, "in"), dev.map<std::uint32_t>(got, "out"),
              dev.map<std::uint32_t>(n, "counts")});
  for (std::uint32_t w = 0; w < 2; ++w) {
    std::vector<std::uint32_t> want;
    for (std::uint32_t i = 32 * w; i < 32 * w + 32; ++i) {
      if (x[i] % 2 == 1 && x[i] < 200) want.push_back(x[i]);
    }
    INFO("warp " << w);
    CHECK(n[w] == want.size());
    CHECK(std::vector<std::uint32_t>(got.begin() + 32 * w, got.begin() + 32 * w + want.size()) ==
          want);
  }
}

TEST_CASE("BlockHistogram: shared-memory bins, one global reduction a CTA, keys past the bins",
          "[dsl][blocks]") {
  // Each CTA counts `per_cta` keys (several a thread, the last CTA's slice shorter); keys at or
  // past the bin count are not counted. Bins above and below the block size take both loops.
  for (const std::uint32_t bins : {7u, 300u}) {
    Module m(Arch::Sm80);
    Kernel& k = m.kernel("histogram");
    const auto keys = k.param_ptr<U32>("keys");
    const auto counts = k.param_ptr<U32>("counts");
    const Reg<U32> n = k.param<U32>("n");
    constexpr std::uint32_t kBlock = 128, kPerCta = 1000;
    k.require_threads(kBlock);
    const Reg<U32> tid = k.tid_x();
    const BlockHistogram histogram(k, bins, kBlock, tid);
    const Reg<U32> first = k.mul(k.ctaid_x(), kPerCta);
    const Reg<U32> end = k.min(k.add(first, kPerCta), n);
    k.for_range(k.add(first, tid), end, kBlock,
                [&](Reg<U32> i) { histogram.count(k, k.ld(k.index(keys, i))); });
    histogram.flush(k, counts);
    k.finalize();
    test::require_assembles(m, /*no_spills=*/true);
    const std::string ptx = test::body_text(k);
    CHECK_THAT(ptx, Contains("red.shared.add.u32"));
    CHECK_THAT(ptx, Contains("red.global.add.u32"));

    const std::uint32_t total = 2 * kPerCta + 333;
    std::vector<std::uint32_t> key(total), want(bins, 0), got(bins, 0);
    for (std::uint32_t i = 0; i < total; ++i) {
      key[i] = (i * 2654435761u >> 7) % (bins + bins / 3 + 1);
      if (key[i] < bins) ++want[key[i]];
    }
    for (const unsigned threads : {1u, 3u}) {
      std::fill(got.begin(), got.end(), 0u);
      CpuDevice dev;
      ExecOptions opt;
      opt.threads = threads;
      dev.launch(
          k, {3, kBlock},
          {dev.map<std::uint32_t>(key, "keys"), dev.map<std::uint32_t>(got, "counts"), total}, opt);
      CHECK(got == want);
    }
  }
  Module m(Arch::Sm80);
  Kernel& k = m.kernel("k");
  CHECK_THAT(test::error_of([&] { BlockHistogram(k, 0, 128, k.tid_x()); }),
             Contains("kernel 'k': BlockHistogram: bins must be in [1, 12288], got 0"));
  CHECK_THAT(test::error_of([&] { BlockHistogram(k, 16, 2048, k.tid_x()); }),
             Contains("block must be in [1, 1024], got 2048"));
}

TEST_CASE("RowPerCta with a row layout: a SwiGLU's halves of [rows, 2·width], an offset output",
          "[dsl][blocks][executor]") {
  // y[r, w + i] = x[r, i] · x[r, width + i]: both inputs are rows 2·width apart, the second
  // `width` in; the output rows are 3·width apart and start `width` in.
  for (const std::uint32_t width : {1u, 33u, 1000u}) {
    const ScalarType t = ScalarType::F32;
    const RowLayout gate{2 * width, 0}, up{2 * width, width}, out{3 * width, width};
    const RowMap map = RowMap::fit(width, t, 128, up);
    INFO("width " << width << ": vec " << map.vec);
    Module m;
    Kernel& k = m.kernel("glu");
    const GlobalDPtr x = param_dptr(k, "x", t);
    const GlobalDPtr y = param_dptr(k, "y", t);
    RowPerCta row(k, map);
    std::vector<Values> a = row.load(k, x, gate);
    const std::vector<Values> b = row.load(k, x, up);
    for (std::size_t j = 0; j < a.size(); ++j) {
      for (std::size_t e = 0; e < a[j].size(); ++e) a[j][e] = k.mul(a[j][e], b[j][e]);
    }
    row.store(k, y, out, a);
    k.finalize();
    const std::uint32_t rows = 3;
    std::vector<float> in(2 * width * rows), got(3 * width * rows, -1.0f), want = got;
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 13) - 6.0f;
    for (std::uint32_t r = 0; r < rows; ++r) {
      for (std::uint32_t i = 0; i < width; ++i) {
        want[r * 3 * width + width + i] = in[r * 2 * width + i] * in[r * 2 * width + width + i];
      }
    }
    CpuDevice dev;
    dev.launch(k, {.grid = rows, .block = map.threads},
               {dev.upload<float>(in, "x"), dev.map<float>(got, "y")});
    CHECK(got == want);
  }
  // A vector wider than the layout allows, a row past its stride.
  CHECK(RowMap::fit(1000, ScalarType::F16, 256, {2000, 1000}).vec == 8);
  CHECK(RowMap::fit(1000, ScalarType::F16, 256, {2002, 0}).vec == 2);
  Module m;
  Kernel& k = m.kernel("k");
  const GlobalDPtr x = param_dptr(k, "x", ScalarType::F16);
  RowPerCta row(k, RowMap::make(1000, 8, 128));
  CHECK_THAT(test::error_of([&] {
               row.load(k, x, RowLayout{2008, 1004});
             }),
             Contains("the row stride (2008) and offset (1004) must be multiples of the vector "
                      "width 8"));
  CHECK_THAT(test::error_of([&] {
               row.load(k, x, RowLayout{1500, 1000});
             }),
             Contains("a row of 1000 elements at offset 1000 does not fit in a stride of 1500"));
}

TEST_CASE("PeeledRow: odd widths and strides read by vectors between a head and a tail",
          "[dsl][blocks][executor]") {
  // y = 2x over each row and the row's sum; rows start at every offset mod the vector, so the
  // head and the tail take every length from 0 to vec - 1.
  const ScalarType types[] = {ScalarType::F32, ScalarType::F16, ScalarType::BF16};
  for (const ScalarType t : types) {
    for (const std::uint32_t width : {1u, 3u, 37u, 1001u}) {
      for (const RowLayout layout : {RowLayout{}, RowLayout{width + 3, 1}}) {
        const std::uint32_t stride = layout.stride == 0 ? width : layout.stride;
        INFO(ptx_name(t) << " width " << width << " stride " << stride);
        Module m;
        Kernel& k = m.kernel("peeled");
        const GlobalDPtr x = param_dptr(k, "x", t);
        const GlobalDPtr y = param_dptr(k, "y", t);
        const auto sums = k.param_ptr<F32>("sums");
        PeeledRow row(k, width, t, 32, layout);
        std::vector<Values> v = row.load(k, x);
        for (Values& chunk : v) {
          for (Reg<F32>& e : chunk) e = k.add(e, e);
        }
        row.store(k, y, v);
        const Reg<F32> sum = row.reduce(k, v, Reduction::sum());
        k.if_(k.setp(Cmp::Eq, row.tid(), 0u), [&] { k.st(k.index(sums, row.row()), sum); });
        k.finalize();
        if (width == 1001 && t != ScalarType::F32) {
          CHECK_THAT(test::body_text(k), Contains("ld.global.nc.v4.b32"));
        }
        const std::uint32_t rows = 9;
        const std::size_t n = std::size_t{stride} * rows;
        std::vector<float> in(n), want(n, 5.0f), got(n);
        std::vector<float> sum_got(rows, -1.0f), sum_want(rows, 0.0f);
        for (std::uint32_t r = 0; r < rows; ++r) {
          for (std::uint32_t i = 0; i < width; ++i) {
            const std::size_t at = std::size_t{r} * stride + layout.offset + i;
            in[at] = static_cast<float>((at * 7) % 19) - 9.0f;  // exact in bf16
            want[at] = 2 * in[at];
            sum_want[r] += want[at];
          }
        }
        CpuDevice dev;
        const LaunchConfig config{.grid = rows, .block = 32};
        if (t == ScalarType::F32) {
          std::fill(got.begin(), got.end(), 5.0f);
          dev.launch(k, config,
                     {dev.upload<float>(in, "x"), dev.map<float>(got, "y"),
                      dev.map<float>(sum_got, "sums")});
        } else {
          std::vector<std::uint16_t> xb(n), yb(n, to_bits(t, 5.0f));
          for (std::size_t i = 0; i < n; ++i) xb[i] = to_bits(t, in[i]);
          dev.launch(k, config,
                     {dev.upload<std::uint16_t>(xb, "x"), dev.map<std::uint16_t>(yb, "y"),
                      dev.map<float>(sum_got, "sums")});
          for (std::size_t i = 0; i < n; ++i) got[i] = from_bits(t, yb[i]);
        }
        CHECK(got == want);  // and nothing outside the rows written
        CHECK(sum_got == sum_want);
      }
    }
  }
  Module m;
  Kernel& k = m.kernel("k");
  CHECK_THAT(test::error_of([&] { PeeledRow(k, 100, ScalarType::F16, 48); }),
             Contains("PeeledRow: threads must be a power of two in [32, 1024], got 48"));
}
