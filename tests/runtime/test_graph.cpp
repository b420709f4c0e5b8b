#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "gpu_support.hpp"
#include "norm_check.hpp"
#include "ptxdsl/runtime.hpp"
#include "ptxdsl/runtime/norms.hpp"

// The norms under stream capture and on several streams: nothing in a call synchronizes, and a
// backward's workspace belongs to that call, so graphs replay them and streams do not share them.
using namespace ptxdsl;
using namespace ptxdsl::runtime;
using test::NormCase;

namespace {

// Every output of a layer norm's forward and backward against the float64 reference.
void check_layer(const Context& ctx, const NormCase& c, const test::HostCase& h,
                 const test::CaseBuffers& d) {
  CHECK(test::measure_rows(c, h, "y", d.y.download(ctx), h.y).verdict.pass);
  CHECK(test::measure(c, h, "mean", DType::F32, d.mean.download(ctx), h.mean).verdict.pass);
  CHECK(test::measure(c, h, "rstd", DType::F32, d.rstd.download(ctx), h.rstd).verdict.pass);
  CHECK(test::measure_rows(c, h, "dx", d.dx.download(ctx), h.dx).verdict.pass);
  CHECK(test::measure(c, h, "dw", c.weight_dtype, d.dw.download(ctx), h.dw).verdict.pass);
  CHECK(test::measure(c, h, "db", c.weight_dtype, d.db.download(ctx), h.db).verdict.pass);
}

void poison_all(const Context& ctx, test::CaseBuffers& d, StreamRef s) {
  d.poison_forward(ctx, s);
  d.poison_backward(ctx, s);
}

bool all_nan(const std::vector<float>& v) {
  return std::all_of(v.begin(), v.end(), [](float f) { return std::isnan(f); });
}

}  // namespace

TEST_CASE("a graph captures a norm's forward and backward and replays them",
          "[runtime][gpu][graph]") {
  PTXDSL_REQUIRE_GPU(ctx);
  // Partial rows and a reduce launch: the backward takes a workspace from the pool (a graph
  // memory node when captured).
  NormOptions two_launches;
  two_launches.backward_knobs = kernels::NormKnobs{};
  two_launches.backward_knobs->single_launch = 0;
  const NormCase c{
      .layer = true, .dtype = DType::F16, .weight_dtype = DType::F16, .width = 2048, .batch = 513};
  const test::HostCase h = test::make_host_case(c);
  LayerNorm ln(ctx, c.dtype, c.weight_dtype, c.width, two_launches);
  ln.prepare();  // no JIT under capture
  test::CaseBuffers d(ctx, c, h);
  Stream stream(ctx);
  poison_all(ctx, d, stream);
  stream.synchronize();

  Graph graph(ctx);
  CHECK_FALSE(is_capturing(stream));
  graph.begin_capture(stream);
  CHECK(is_capturing(stream));
  CHECK(graph.capturing());
  ln.call(d.forward_call(c, stream));
  ln.call(d.backward_call(c, stream));
  graph.end_capture();
  CHECK_FALSE(is_capturing(stream));
  stream.synchronize();
  // Captured, not run.
  CHECK(all_nan(d.y.download(ctx)));
  CHECK(all_nan(d.dx.download(ctx)));

  graph.instantiate();
  std::vector<std::byte> first_dw;
  for (int replay = 0; replay < 3; ++replay) {
    INFO("replay " << replay);
    poison_all(ctx, d, stream);
    graph.launch(stream);
    stream.synchronize();
    check_layer(ctx, c, h, d);
    const std::vector<std::byte> dw = d.dw.download_bytes(ctx);
    if (replay == 0) first_dw = dw;
    CHECK(dw == first_dw);  // the fixed-order sums, replay after replay
  }

  // The capture invalidated by a call that may not run under it is reported at end_capture.
  Graph broken(ctx);
  broken.begin_capture(stream);
  CHECK_THROWS_WITH(ctx.synchronize(), Catch::Contains("cuCtxSynchronize"));
  CHECK_THROWS_WITH(broken.end_capture(), Catch::Contains("ending the capture of a stream"));
  CHECK_FALSE(is_capturing(stream));
  CHECK_THROWS_WITH(Graph(ctx).begin_capture(nullptr),
                    Catch::Contains("the legacy default stream cannot be captured"));
  CHECK_THROWS_WITH(Graph(ctx).launch(stream), Catch::Contains("not instantiated"));
}

TEST_CASE("a captured forward updated with new buffers runs on them in place",
          "[runtime][gpu][graph]") {
  PTXDSL_REQUIRE_GPU(ctx);
  const NormCase c{
      .layer = true, .dtype = DType::BF16, .weight_dtype = DType::F32, .width = 1024, .batch = 200};
  NormCase c2 = c;
  c2.seed = 7;
  const test::HostCase h = test::make_host_case(c), h2 = test::make_host_case(c2);
  LayerNorm ln(ctx, c.dtype, c.weight_dtype, c.width);
  ln.prepare();
  test::CaseBuffers d(ctx, c, h), d2(ctx, c2, h2);
  Stream stream(ctx);
  poison_all(ctx, d, stream);
  poison_all(ctx, d2, stream);
  Graph graph(ctx);
  graph.begin_capture(stream);
  ln.call(d.forward_call(c, stream));
  graph.end_capture();
  graph.instantiate();
  graph.begin_capture(stream);
  ln.call(d2.forward_call(c2, stream));
  graph.end_capture();
  CHECK(graph.update());  // the same launches on other buffers: updated in place
  graph.launch(stream);
  stream.synchronize();
  CHECK(all_nan(d.y.download(ctx)));  // the first capture's buffers are not touched
  CHECK(test::measure_rows(c2, h2, "y", d2.y.download(ctx), h2.y).verdict.pass);
  CHECK(test::measure(c2, h2, "rstd", DType::F32, d2.rstd.download(ctx), h2.rstd).verdict.pass);
}

TEST_CASE("backwards of one object on two streams at once do not share a workspace",
          "[runtime][gpu][graph]") {
  PTXDSL_REQUIRE_GPU(ctx);
  // Each call's partial sums are its own: with one workspace for the object, the two streams'
  // reduce launches would read each other's partial rows.
  NormOptions two_launches;
  two_launches.knobs.single_launch = 0;
  const NormCase a{.layer = true,
                   .dtype = DType::F16,
                   .weight_dtype = DType::F32,
                   .width = 4096,
                   .batch = 2048,
                   .seed = 21};
  NormCase b = a;
  b.seed = 22;
  const test::HostCase ha = test::make_host_case(a), hb = test::make_host_case(b);
  LayerNorm ln(ctx, a.dtype, a.weight_dtype, a.width, two_launches);
  test::CaseBuffers da(ctx, a, ha), db(ctx, b, hb);
  Stream sa(ctx), sb(ctx);
  poison_all(ctx, da, sa);
  poison_all(ctx, db, sb);
  for (int call = 0; call < 4; ++call) {
    ln.call(da.forward_call(a, sa));
    ln.call(db.forward_call(b, sb));
    ln.call(da.backward_call(a, sa));
    ln.call(db.backward_call(b, sb));
  }
  sa.synchronize();
  sb.synchronize();
  {
    INFO("stream a");
    check_layer(ctx, a, ha, da);
  }
  {
    INFO("stream b");
    check_layer(ctx, b, hb, db);
  }
}
