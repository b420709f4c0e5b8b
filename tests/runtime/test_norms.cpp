#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <deque>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <sstream>
#include <thread>
#include <vector>

#include "gpu_support.hpp"
#include "norm_check.hpp"
#include "ptxdsl/runtime.hpp"
#include "ptxdsl/runtime/norms.hpp"
#include "small_kernels.hpp"

using namespace ptxdsl;
using namespace ptxdsl::runtime;
using test::NormCase;

namespace {

struct Combo {
  DType dtype, weight_dtype;
};
constexpr Combo kCombos[] = {{DType::F32, DType::F32},
                             {DType::F16, DType::F16},
                             {DType::F16, DType::F32},
                             {DType::BF16, DType::BF16},
                             {DType::BF16, DType::F32}};
constexpr std::uint32_t kWidths[] = {
    1,    2,    3,    7,    31,   32,    100,   127,   128,   255,    256,    1000,   1024,  1151,
    2048, 4096, 4097, 5120, 8192, 12288, 16384, 32768, 65536, 100001, 131072, 262143, 262144};
constexpr std::uint32_t kBatches[] = {1, 3, 1151, 4096};
// Larger batches run while batch × width stays within this (the float64 reference runs on the CPU).
constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 24;

// Runs `work(i)` for i in [0, n) on all hardware threads.
template <class F>
void parallel_for(std::size_t n, F work) {
  const std::size_t threads = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(threads);
  for (std::size_t t = 0; t < std::min(threads, n); ++t) {
    pool.emplace_back([&, t] {
      try {
        for (std::size_t i = next++; i < n; i = next++) work(i);
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  }
  for (auto& th : pool) th.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// What a sweep found: failing cases, the worst errors per norm and dtypes, the modules compiled.
struct SweepResult {
  std::size_t failed = 0;
  std::map<std::string, test::Worst> worst;
  std::uint64_t jits = 0;
};

// Builds every object's variants (JIT included) on all threads, then runs each (object, case) on
// the GPU against its float64 reference, the references made on worker threads ahead of the GPU.
SweepResult run_sweep(Context& ctx, std::vector<std::unique_ptr<Norm>>& objects,
                      const std::vector<std::pair<std::size_t, NormCase>>& cases) {
  SweepResult out;
  const std::uint64_t jits_before = ModuleCache::global().jit_count();
  parallel_for(objects.size(), [&](std::size_t i) { objects[i]->prepare(); });
  const std::size_t ahead = std::max(2u, std::thread::hardware_concurrency());
  std::deque<std::future<test::HostCase>> pending;
  std::size_t queued = 0;
  const auto refill = [&] {
    while (queued < cases.size() && pending.size() < ahead) {
      const NormCase c = cases[queued++].second;
      pending.push_back(std::async(std::launch::async, [c] { return test::make_host_case(c); }));
    }
  };
  Stream stream(ctx);
  refill();
  for (const auto& [object, c] : cases) {
    const test::HostCase host = pending.front().get();
    pending.pop_front();
    refill();
    const test::CaseResult r = test::run_case(ctx, *objects[object], c, host, stream);
    test::check_case(c, r);
    const std::string key = std::string(c.layer ? "layer norm " : "RMS norm   ") +
                            std::string(kernels::dtype_name(c.dtype)) + "/" +
                            std::string(kernels::dtype_name(c.weight_dtype));
    out.worst[key].add(r);
    if (!test::passed(r, c.same_sums)) ++out.failed;
  }
  out.jits = ModuleCache::global().jit_count() - jits_before;
  return out;
}

// Every norm and dtype combination at each width.
std::vector<NormCase> shapes_at(std::span<const std::uint32_t> widths) {
  std::vector<NormCase> shapes;
  for (std::uint32_t width : widths) {
    for (const Combo& combo : kCombos) {
      for (bool layer : {true, false}) {
        NormCase c;
        c.layer = layer;
        c.dtype = combo.dtype;
        c.weight_dtype = combo.weight_dtype;
        c.width = width;
        shapes.push_back(c);
      }
    }
  }
  return shapes;
}

// One object of `c`'s norm, dtypes and width.
std::unique_ptr<Norm> make_object(Context& ctx, const NormCase& c,
                                  const NormOptions& options = {}) {
  return std::make_unique<Norm>(ctx, c.type(), options);
}

}  // namespace

TEST_CASE("the norms match the float64 reference over every width, dtype and batch",
          "[runtime][gpu][norms]") {
  PTXDSL_REQUIRE_GPU(ctx);
  // One object per (norm, dtypes, width), all built and JIT-compiled up front on every thread.
  const std::vector<NormCase> shapes = shapes_at(kWidths);
  std::vector<std::unique_ptr<Norm>> objects;
  for (const NormCase& c : shapes) objects.push_back(make_object(ctx, c));
  std::vector<std::pair<std::size_t, NormCase>> cases;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    for (std::uint32_t batch : kBatches) {
      if (batch > 3 && std::uint64_t{batch} * shapes[i].width > kMaxElements) continue;
      NormCase c = shapes[i];
      c.batch = batch;
      c.seed = 1000 + cases.size();
      cases.emplace_back(i, c);
    }
  }
  const SweepResult r = run_sweep(ctx, objects, cases);
  std::ostringstream summary;
  summary << cases.size() << " cases (" << shapes.size() << " objects, " << r.jits
          << " modules JIT-compiled)\nworst per norm and dtype/weights (rel = error / max "
             "|reference|):\n";
  for (const auto& [key, w] : r.worst) {
    summary << "  " << key << ": y abs " << w.y_abs << " rel " << w.y_rel << " | dx abs "
            << w.dx_abs << " rel " << w.dx_rel << " | dw rel " << w.dw_rel << " | db rel "
            << w.db_rel << " | mean/rstd rel " << w.stats_rel << "  (" << w.cases << " cases";
    summary << ")\n";
  }
  WARN(summary.str());
  CHECK(r.failed == 0);
}

TEST_CASE("knob variants match the reference too: one launch at long batches, L2 policies",
          "[runtime][gpu][norms]") {
  PTXDSL_REQUIRE_GPU(ctx);
  // The one-launch backward beyond the batches the runtime gives it (and forwards that load
  // their weights with the row); L2 policies on the rows and
  // weights (forward and backward), with the reduce launched early; and with chunks read again
  // from L2 instead of staged (with L1 priorities and groups of two chunks a loop iteration),
  // layer norm's statistics in one pass, the rows by plain loads instead of .nc, and the
  // backward's rows from a counter; forwards walking rows with their weights in shared memory;
  // backwards adding their partial rows up over a cluster.
  std::vector<kernels::NormKnobs> variants(3);
  variants[0].single_launch = true;
  variants[0].early_weights = true;  // forwards: w and b loaded with the row
  variants[1].l2_stream = true;
  variants[1].overlap_reduce = true;  // the reduce launched early (cuLaunchKernelEx)
  variants[2].l2_stream = true;
  variants[2].staged_chunks = 0;
  variants[2].one_pass_stats = true;
  variants[2].l1_rereads = true;
  variants[2].loop_group = 2;
  variants[2].row_nc = false;
  variants[2].row_order = kernels::RowOrder::Tickets;  // backward: rows from a counter
  variants.emplace_back().deterministic = false;       // the heuristic's tickets (RMS, 16384)
  // Forwards persistent with w and b in shared memory; backwards with the next row ahead.
  kernels::NormKnobs& walked = variants.emplace_back();
  walked.prefetch_rows = 1;
  walked.shared_weights = true;
  std::vector<std::unique_ptr<Norm>> objects;
  std::vector<std::pair<std::size_t, NormCase>> cases;
  constexpr std::uint32_t kKnobWidths[] = {100, 1003, 4096, 8192, 16384};
  const auto add = [&](const NormOptions& options, bool same_sums) {
    for (NormCase c : shapes_at(kKnobWidths)) {
      c.same_sums = same_sums;
      objects.push_back(make_object(ctx, c, options));
      for (std::uint32_t batch : {3u, 1151u}) {
        c.batch = batch;
        c.seed = 7000 + cases.size();
        cases.emplace_back(objects.size() - 1, c);
      }
    }
  };
  for (const kernels::NormKnobs& knobs : variants) {
    NormOptions options;
    options.knobs = knobs;
    add(options,
        knobs.row_order != kernels::RowOrder::Tickets && knobs.deterministic.value_or(true));
  }
  // Backwards whose clusters add their partial rows up on chip, where the device has clusters.
  if (ctx.info().model.has_clusters()) {
    NormOptions options;
    options.backward_knobs.emplace().partial_cluster = 2;
    add(options, true);
  }
  const SweepResult r = run_sweep(ctx, objects, cases);
  WARN(cases.size() << " knob-variant cases on the GPU (" << objects.size() << " objects, "
                    << r.jits << " modules JIT-compiled)");
  CHECK(r.failed == 0);
}

namespace {

// The widest vector the rows and weights of a case allow: what the runtime must choose. The forward
// reads x, w, b and writes y; the backward reads dy, x, w and writes dx, dw, db.
std::uint32_t expected_vec(const NormCase& c, bool backward) {
  const std::uint32_t s = static_cast<std::uint32_t>(kernels::dtype_bytes(c.dtype));
  const std::uint32_t ws = static_cast<std::uint32_t>(kernels::dtype_bytes(c.weight_dtype));
  const std::uint32_t row_offsets =
      backward ? (c.x_offset | c.dy_offset | c.dx_offset) : (c.x_offset | c.y_offset);
  const std::uint32_t weight_offsets = backward ? (c.w_offset | c.dw_offset) : c.w_offset;
  for (std::uint32_t v = 16 / s; v > 1; v /= 2) {
    const bool rows = c.row_stride() % v == 0 && row_offsets % (v * s) == 0;
    const bool weights = weight_offsets % std::min(16u, v * ws) == 0;
    if (rows && weights) return v;
  }
  return 1;
}

}  // namespace

TEST_CASE("strided rows and misaligned pointers take narrower vectors, never a fault",
          "[runtime][gpu][norms]") {
  PTXDSL_REQUIRE_GPU(ctx);
  std::vector<NormCase> cases;
  for (const Combo& combo : {kCombos[0], kCombos[1], kCombos[4]}) {
    // 65529: a row split over a cluster whose last slice ends in lone elements.
    for (std::uint32_t width : {1000u, 4097u, 8192u, 65529u}) {
      for (bool layer : {true, false}) {
        const std::uint32_t e = static_cast<std::uint32_t>(kernels::dtype_bytes(combo.dtype));
        const std::uint32_t we =
            static_cast<std::uint32_t>(kernels::dtype_bytes(combo.weight_dtype));
        NormCase base;
        base.layer = layer;
        base.dtype = combo.dtype;
        base.weight_dtype = combo.weight_dtype;
        base.width = width;
        base.batch = 129;
        std::vector<NormCase> variants(8, base);
        variants[0].stride = (width + 15) / 8 * 8;  // aligned padding: 16 bytes and more
        variants[1].stride = width + 1;             // rows one element off
        variants[2].stride = width + 3;
        variants[2].x_offset = e;  // x one element off
        variants[3].x_offset = variants[3].dy_offset = 2 * e;
        variants[4].y_offset = 4 * e;  // y (and dx) four elements off
        variants[4].dx_offset = 4 * e;
        variants[5].w_offset = we;       // weights one element off
        variants[6].dw_offset = 2 * we;  // dw/db two elements off
        variants[7].stride = width + 2;
        variants[7].w_offset = 4;
        for (NormCase& v : variants) {
          v.seed = 77 + cases.size();
          cases.push_back(v);
        }
      }
    }
  }
  std::map<std::string, std::unique_ptr<Norm>> objects;
  std::map<std::uint32_t, std::size_t> vec_seen;
  for (const NormCase& c : cases) {
    const std::string key = c.describe().substr(0, c.describe().find(", batch"));
    std::unique_ptr<Norm>& norm = objects[key];
    if (!norm) norm = make_object(ctx, c);
    const test::CaseResult r = test::run_case(ctx, *norm, c, test::make_host_case(c), nullptr);
    INFO(c.describe());
    test::check_case(c, r);
    CHECK(r.forward_vec == expected_vec(c, false));
    CHECK(r.backward_vec == expected_vec(c, true));
    ++vec_seen[r.forward_vec];
    ++vec_seen[r.backward_vec];
  }
  std::ostringstream s;
  s << cases.size() << " strided/misaligned cases; launches by vector width:";
  for (const auto& [v, n] : vec_seen) s << " " << v << " elements × " << n;
  WARN(s.str());
}

TEST_CASE("bad input is refused before launch and leaves the context usable",
          "[runtime][gpu][norms]") {
  PTXDSL_REQUIRE_GPU(ctx);
  NormCase good;
  good.layer = true;
  good.dtype = DType::F16;
  good.weight_dtype = DType::F16;
  good.width = 4096;
  good.batch = 64;
  const test::HostCase host = test::make_host_case(good);
  LayerNorm ln(ctx, DType::F16, DType::F16, 4096);
  RmsNorm rms(ctx, DType::BF16, DType::F32, 4096);
  test::DeviceArray x(ctx, 64 * 4096, DType::F16), y(ctx, 64 * 4096, DType::F16);
  test::DeviceArray w(ctx, 4096, DType::F16), b(ctx, 4096, DType::F16);
  test::DeviceArray mean(ctx, 64, DType::F32), rstd(ctx, 64, DType::F32);
  x.upload(ctx, host.in.x.bytes);
  w.upload(ctx, host.in.w.bytes);
  b.upload(ctx, host.in.b.bytes);
  LayerNormForwardArgs args{.x = x.view(),
                            .w = w.view(),
                            .b = b.view(),
                            .y = y.view(),
                            .mean = mean.view(),
                            .rstd = rstd.view(),
                            .batch = 64};

  SECTION("batch 0 is a no-op, even with null pointers") {
    y.poison(ctx, nullptr);
    LayerNormForwardArgs none;
    CHECK_NOTHROW(ln.forward(none));
    auto zero = args;
    zero.batch = 0;
    CHECK_NOTHROW(ln.forward(zero));
    CHECK_NOTHROW(rms.backward(RmsNormBackwardArgs{}));
    ctx.synchronize();
    const auto out = y.download(ctx);
    CHECK(std::all_of(out.begin(), out.end(), [](float v) { return std::isnan(v); }));
  }
  SECTION("null, mistyped, misaligned, short and mismatched arguments") {
    auto a = args;
    a.y = DeviceView{};  // an output; b alone may be empty (the weight-only variant)
    CHECK_THROWS_WITH(ln.forward(a),
                      "LayerNorm(f16, weights f16, width 4096).forward: y is a "
                      "null pointer");
    a = args;
    a.width = 8192;
    CHECK_THROWS_WITH(ln.forward(a), Catch::Contains("called with width 8192; this object was "
                                                     "built for width 4096"));
    a = args;
    a.stride = 4000;
    CHECK_THROWS_WITH(ln.forward(a), Catch::Contains("stride must be at least the width 4096, "
                                                     "got 4000"));
    DeviceBuffer<float> f32(ctx, 64 * 4096);
    a = args;
    a.x = f32;
    CHECK_THROWS_WITH(ln.forward(a), Catch::Contains("x has 4-byte elements; it must hold f16 "
                                                     "(2 bytes)"));
    a = args;
    a.y = DeviceView(y.address + 1);  // not even element-aligned: no variant can take it
    CHECK_THROWS_WITH(
        ln.forward(a),
        Catch::Contains("y at 0x") && Catch::Contains("is not aligned to its 2-byte f16 elements"));
    a = args;
    a.batch = 65;
    CHECK_THROWS_WITH(ln.forward(a),
                      Catch::Contains("x holds 524288 bytes; batch 65 × stride "
                                      "4096 (width 4096) needs 532480 bytes of f16"));
    a = args;
    a.mean = DeviceView(mean.address);  // a raw address: its size is unchecked, but not null
    CHECK_NOTHROW(ln.forward(a));
    // Memory the driver does not know (a host vector), a batch past 32-bit row indices, and an
    // eps that is not a finite number ≥ 0 are refused before anything launches.
    std::vector<std::uint16_t> host(std::size_t{64} * 4096);
    a = args;
    a.x = DeviceView(reinterpret_cast<std::uint64_t>(host.data()));
    CHECK_THROWS_WITH(ln.forward(a), Catch::Contains("x at 0x") &&
                                         Catch::Contains("is not memory the GPU can address"));
    a = args;
    a.batch = 0x80000000u;
    CHECK_THROWS_WITH(ln.forward(a),
                      Catch::Contains("batch must be at most 2147483647 rows, got 2147483648"));
    a = args;
    a.eps = std::numeric_limits<float>::quiet_NaN();
    CHECK_THROWS_WITH(ln.forward(a), Catch::Contains("eps must be a finite number ≥ 0, got nan"));
    a.eps = -1e-5f;
    CHECK_THROWS_WITH(ln.forward(a),
                      Catch::Contains("eps must be a finite number ≥ 0, got -1e-05"));
    test::DeviceArray dw(ctx, 4096, DType::F16);
    LayerNormBackwardArgs bw{.dy = x.view(),
                             .x = x.view(),
                             .w = w.view(),
                             .mean = mean.view(),
                             .rstd = rstd.view(),
                             .dx = y.view(),
                             .dw = dw.view(),
                             .db = b.view(),
                             .batch = 64};
    bw.workspace = {y.address, 16};
    {
      // In place, or an output over an input: refused (the kernels read their inputs again).
      LayerNormForwardArgs in_place = args;
      in_place.y = x.view();
      CHECK_THROWS_WITH(ln.forward(in_place),
                        Catch::Contains("y overlaps x: in-place calls are not supported"));
      LayerNormBackwardArgs over_w = bw;
      over_w.dw = w.view();
      CHECK_THROWS_WITH(ln.backward(over_w), Catch::Contains("dw overlaps w"));
    }
    // A batch of 64 runs in one launch, without a workspace; with partial rows it needs one.
    NormOptions partial_rows;
    partial_rows.knobs.single_launch = 0;
    LayerNorm two_launches(ctx, DType::F16, DType::F16, 4096, partial_rows);
    CHECK_THROWS_WITH(two_launches.backward(bw),
                      Catch::Contains("the workspace at 0x") &&
                          Catch::Contains("holds 16 bytes; a batch of 64 needs"));
    CHECK_THROWS_WITH(LayerNorm(ctx, DType::F16, DType::BF16, 4096),
                      Catch::Contains("weight dtype must be f16 (the input's) or f32, got bf16"));
    CHECK_THROWS_WITH(RmsNorm(ctx, DType::F16, DType::F16, 0),
                      Catch::Contains("width must be in [1, 262144], got 0"));
    // Knobs a forward takes but the backward cannot: the error says which direction refuses.
    NormOptions two_rows;
    two_rows.knobs.threads_per_row = 512;
    two_rows.knobs.rows_per_cta = 2;
    CHECK_THROWS_WITH(LayerNorm(ctx, DType::F32, DType::F32, 8192, two_rows),
                      Catch::StartsWith("LayerNorm(f32, weights f32, width 8192).backward: the "
                                        "kernel needs 262144 bytes of shared memory"));
  }
  {
    // Rows an odd number of elements apart take 1-element vectors, which a ring cannot copy.
    NormOptions ring;
    ring.knobs.prefetch_rows = 2;
    LayerNorm ringed(ctx, DType::F16, DType::F16, 4096, ring);
    LayerNormForwardArgs odd = args;
    odd.batch = 32;
    odd.stride = 4097;
    CHECK_THROWS_WITH(ringed.forward(odd),
                      Catch::StartsWith("LayerNorm(f16, weights f16, width 4096).forward: with "
                                        "vectors of 1 element (what this call's pointers and "
                                        "stride allow): prefetch_rows 2 copies vectors"));
  }
  CHECK_THROWS_WITH(ln.prepare(3), Catch::StartsWith("LayerNorm(f16, weights f16, width 4096)."
                                                     "forward: prepare: vector_elems must be a "
                                                     "power of two in [1, 8], got 3"));
  // Whatever was refused above, the context still runs a correct forward.
  y.poison(ctx, nullptr);
  ln.forward(args);
  ctx.synchronize();
  const auto m = test::measure_rows(good, host, "y", y.download(ctx), host.y);
  CHECK(m.verdict.pass);

  // Knobs the backward refuses (8 row slots' dw/db partials outgrow the shared memory) serve the
  // forward alone once the backward has its own.
  NormOptions forward_only;
  forward_only.knobs.vector_elems = 2;
  forward_only.knobs.threads_per_row = 128;
  forward_only.knobs.rows_per_cta = 8;
  CHECK_THROWS_WITH(LayerNorm(ctx, DType::F16, DType::F16, 4096, forward_only),
                    Catch::StartsWith("LayerNorm(f16, weights f16, width 4096).backward: the "
                                      "kernel needs 393216 bytes of shared memory"));
  forward_only.backward_knobs = kernels::NormKnobs{};
  LayerNorm tuned(ctx, DType::F16, DType::F16, 4096, forward_only);
  CHECK(tuned.workspace_bytes(64) > 0);
  y.poison(ctx, nullptr);
  tuned.forward(args);
  ctx.synchronize();
  CHECK(tuned.last_vector_elems() == 2u);
  const auto tuned_m = test::measure_rows(good, host, "y", y.download(ctx), host.y);
  CHECK(tuned_m.verdict.pass);
}

TEST_CASE("rows from a counter (row_order tickets) in a caller's workspace that holds garbage",
          "[runtime][gpu][norms]") {
  PTXDSL_REQUIRE_GPU(ctx);
  // The runtime zeroes the counter of a caller's workspace before each call: dx (which does not
  // depend on the order rows are taken in) comes out as with the object's own workspace.
  constexpr std::uint32_t kWidth = 4096, kBatch = 1500;
  NormOptions options;
  options.knobs.row_order = kernels::RowOrder::Tickets;
  options.knobs.single_launch = false;
  RmsNorm rms(ctx, DType::BF16, DType::BF16, kWidth, options);
  const std::size_t n = std::size_t{kBatch} * kWidth;
  test::DeviceArray x(ctx, n, DType::BF16), dy(ctx, n, DType::BF16), dx(ctx, n, DType::BF16);
  test::DeviceArray w(ctx, kWidth, DType::BF16), dw(ctx, kWidth, DType::BF16);
  test::DeviceArray rstd(ctx, kBatch, DType::F32);
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<float>((i * 7919) % 1013) / 1013.0f;
  x.upload_floats(ctx, values);
  std::reverse(values.begin(), values.end());
  dy.upload_floats(ctx, values);
  w.upload_floats(ctx, std::vector<float>(kWidth, 1.5f));
  rstd.upload_floats(ctx, std::vector<float>(kBatch, 0.75f));
  const std::uint64_t need = rms.workspace_bytes(kBatch);
  test::DeviceArray workspace(ctx, need / 4, DType::F32);
  RmsNormBackwardArgs args{.dy = dy.view(),
                           .x = x.view(),
                           .w = w.view(),
                           .rstd = rstd.view(),
                           .dx = dx.view(),
                           .dw = dw.view(),
                           .batch = kBatch};
  dx.poison(ctx, nullptr);
  rms.backward(args);
  ctx.synchronize();
  const std::vector<std::byte> own = dx.download_bytes(ctx);
  args.workspace = {workspace.address, need};
  for (int call = 0; call < 3; ++call) {
    INFO("call " << call);
    fill_u32(ctx, workspace.address, 0xDEADBEEFu, need / 4);  // what another user left there
    dx.poison(ctx, nullptr);
    rms.backward(args);
    ctx.synchronize();
    CHECK(dx.download_bytes(ctx) == own);
  }
}

TEST_CASE("dw and db come out bit-identical run to run, rows split over a cluster too",
          "[runtime][gpu][norms]") {
  PTXDSL_REQUIRE_GPU(ctx);
  // The default (fixed row walk, fixed column-reduce order): the same bits every call, at a width
  // one CTA takes and at widths clusters of CTAs split where the device has clusters (8 and, past
  // the portable size, 16 on the H200; 262143 with a shorter last slice).
  constexpr std::uint32_t kBatch = 300;
  for (const std::uint32_t width : {4096u, 131072u, 262143u, 262144u}) {
    INFO("width " << width);
    LayerNorm ln(ctx, DType::BF16, DType::F32, width);
    const std::size_t n = std::size_t{kBatch} * width;
    test::DeviceArray x(ctx, n, DType::BF16), dy(ctx, n, DType::BF16), dx(ctx, n, DType::BF16);
    test::DeviceArray w(ctx, width, DType::F32), dw(ctx, width, DType::F32);
    test::DeviceArray db(ctx, width, DType::F32);
    test::DeviceArray mean(ctx, kBatch, DType::F32), rstd(ctx, kBatch, DType::F32);
    std::vector<float> values(n);
    for (std::size_t i = 0; i < n; ++i) {
      values[i] = static_cast<float>((i * 7919) % 1013) / 1013.0f - 0.5f;
    }
    x.upload_floats(ctx, values);
    std::reverse(values.begin(), values.end());
    dy.upload_floats(ctx, values);
    w.upload_floats(ctx, std::vector<float>(width, 1.25f));
    mean.upload_floats(ctx, std::vector<float>(kBatch, 0.01f));
    rstd.upload_floats(ctx, std::vector<float>(kBatch, 3.0f));
    const LayerNormBackwardArgs args{.dy = dy.view(),
                                     .x = x.view(),
                                     .w = w.view(),
                                     .mean = mean.view(),
                                     .rstd = rstd.view(),
                                     .dx = dx.view(),
                                     .dw = dw.view(),
                                     .db = db.view(),
                                     .batch = kBatch};
    std::vector<std::byte> first_dw, first_db;
    for (int call = 0; call < 3; ++call) {
      INFO("call " << call);
      dw.poison(ctx, nullptr);
      db.poison(ctx, nullptr);
      ln.backward(args);
      ctx.synchronize();
      if (call == 0) {
        first_dw = dw.download_bytes(ctx);
        first_db = db.download_bytes(ctx);
        continue;
      }
      CHECK(dw.download_bytes(ctx) == first_dw);
      CHECK(db.download_bytes(ctx) == first_db);
    }
  }
}

TEST_CASE("a norm object plans each batch class of each direction once", "[runtime][gpu][norms]") {
  PTXDSL_REQUIRE_GPU(ctx);
  NormOptions options;
  options.tuning_table = false;  // no heuristic plan beside a tuned one
  const std::uint64_t before = kernels::plans_resolved();
  RmsNorm norm(ctx, DType::F16, DType::F16, 4096, options);
  CHECK(kernels::plans_resolved() - before == 2u);  // forward and backward, checked up front
  // Both directions' small-batch variants (persistent prefetching forward, one-launch backward).
  norm.prepare();
  CHECK(kernels::plans_resolved() - before == 4u);
  norm.prepare();
  CHECK(kernels::plans_resolved() - before == 4u);
  // A cold object and its forwards: the small batch's class once (3 with both directions' large
  // classes, planned up front), then nothing for the same class or the large one.
  const std::uint64_t cold = kernels::plans_resolved();
  RmsNorm fresh(ctx, DType::F16, DType::F16, 4096, options);
  test::DeviceArray x(ctx, 8192 * 4096, DType::F16), y(ctx, 8192 * 4096, DType::F16);
  test::DeviceArray w(ctx, 4096, DType::F16), rstd(ctx, 8192, DType::F32);
  RmsNormForwardArgs args{.x = x.view(), .w = w.view(), .y = y.view(), .rstd = rstd.view()};
  args.batch = 1;
  fresh.forward(args);
  CHECK(kernels::plans_resolved() - cold == 3u);
  fresh.forward(args);
  args.batch = 8192;
  fresh.forward(args);
  ctx.synchronize();
  CHECK(kernels::plans_resolved() - cold == 3u);
}
