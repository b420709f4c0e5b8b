// The float64 references against cases worked out by hand.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "ptxdsl/dsl/error.hpp"
#include "ptxdsl/kernels/reference.hpp"

using namespace ptxdsl;
using namespace ptxdsl::kernels;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();

void require_close(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    REQUIRE(got[i] == Approx(want[i]).margin(1e-12).epsilon(1e-9));
  }
}

}  // namespace

TEST_CASE("layer norm forward reference", "[reference]") {
  // x = 1 2 3 4: mean 2.5, var 1.25, rstd 1/sqrt(1.25); second row strided past a NaN pad.
  const std::vector<float> x{1, 2, 3, 4, kNaN, 1, 2, 3, 4, kNaN};
  const std::vector<float> w{2, 2, 2, 2}, b{1, 1, 1, 1};
  const LayerNormFwdRef r = layer_norm_fwd_ref(x, w, b, 2, 4, 5, 0.0);
  const double s = 1 / std::sqrt(1.25);
  require_close(r.mean, {2.5, 2.5});
  require_close(r.rstd, {s, s});
  require_close(r.y, {1 - 3 * s, 1 - s, 1 + s, 1 + 3 * s, 1 - 3 * s, 1 - s, 1 + s, 1 + 3 * s});
  // eps enters under the square root.
  REQUIRE(layer_norm_fwd_ref(x, w, b, 1, 4, 5, 2.75).rstd[0] == Approx(0.5));
}

TEST_CASE("layer norm backward reference", "[reference]") {
  // x = 0 1 2: mean 1, var 2/3, rstd sqrt(1.5), x̂ = (−r, 0, r); w = 1 2 3, dy = 1 0 0 → g = 1 0 0,
  // mean(x̂·g) = −r/3, mean(g) = 1/3, dx = r·(1/6, −1/3, 1/6); dw = dy·x̂, db = dy, twice.
  const std::vector<float> x{0, 1, 2, 0, 1, 2}, w{1, 2, 3}, dy{1, 0, 0, 1, 0, 0};
  const LayerNormBwdRef r = layer_norm_bwd_ref(x, w, dy, 2, 3, 3, 0.0);
  const double rs = std::sqrt(1.5);
  require_close(r.dx, {rs / 6, -rs / 3, rs / 6, rs / 6, -rs / 3, rs / 6});
  require_close(r.dw, {-2 * rs, 0, 0});
  require_close(r.db, {2, 0, 0});
}

TEST_CASE("RMS norm forward reference", "[reference]") {
  // x = 3 4: mean(x²) = 12.5.
  const std::vector<float> x{3, 4}, w{1, 0.5f};
  const RmsNormFwdRef r = rms_norm_fwd_ref(x, w, 1, 2, 2, 0.0);
  const double s = 1 / std::sqrt(12.5);
  require_close(r.rstd, {s});
  require_close(r.y, {3 * s, 2 * s});
}

TEST_CASE("RMS norm backward reference", "[reference]") {
  // x̂ = (3s, 4s) with s = 1/sqrt(12.5) → x̂ = (0.6·√2, 0.8·√2); dy = 1 0, w = 1 1: g = 1 0,
  // mean(x̂·g) = 0.3·√2, dx = s·(1 − 0.36, −0.48), dw = (0.6·√2, 0).
  const std::vector<float> x{3, 4}, w{1, 1}, dy{1, 0};
  const RmsNormBwdRef r = rms_norm_bwd_ref(x, w, dy, 1, 2, 2, 0.0);
  const double s = 1 / std::sqrt(12.5);
  require_close(r.dx, {s * 0.64, -s * 0.48});
  require_close(r.dw, {0.6 * std::sqrt(2.0), 0});
}

TEST_CASE("references check their sizes", "[reference]") {
  const std::vector<float> x(10), w(4);
  REQUIRE_THROWS_AS(rms_norm_fwd_ref(x, w, 3, 4, 4, 1e-5), Error);
  REQUIRE_THROWS_WITH(rms_norm_fwd_ref(x, w, 1, 4, 3, 1e-5),
                      "stride must be ≥ the width (4), got 3");
  REQUIRE_THROWS_WITH(rms_norm_fwd_ref(x, w, 0, 4, 4, 1e-5),
                      "batch must be in [1, 2147483647], got 0");
}

TEST_CASE("deviation measures against the reference's scale", "[reference]") {
  const std::vector<float> got{1.0f, 2.1f, -4.0f};
  const std::vector<double> want{1.0, 2.0, -4.0};
  const Deviation d = deviation(got, want);
  REQUIRE(d.worst == 1);
  REQUIRE(d.max_abs == Approx(0.1).epsilon(1e-6));
  REQUIRE(d.max_rel == Approx(0.025).epsilon(1e-6));
  REQUIRE(deviation(std::vector<float>{kNaN}, std::vector<double>{1.0}).nonfinite == 1);
}
