// Deterministic inputs, stored in their dtypes, and the dtype <-> float helpers.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "ptxdsl/dsl/half.hpp"
#include "ptxdsl/kernels/inputs.hpp"

using namespace ptxdsl;
using namespace ptxdsl::kernels;

TEST_CASE("inputs are the same for the same seed and differ across seeds", "[inputs]") {
  const NormInputs a = make_inputs(NormKind::LayerNormBwd, DType::BF16, DType::F32, 3, 100, 104, 5);
  const NormInputs b = make_inputs(NormKind::LayerNormBwd, DType::BF16, DType::F32, 3, 100, 104, 5);
  const NormInputs c = make_inputs(NormKind::LayerNormBwd, DType::BF16, DType::F32, 3, 100, 104, 6);
  REQUIRE(a.x.bytes == b.x.bytes);
  REQUIRE(a.dy.bytes == b.dy.bytes);
  REQUIRE(a.w.bytes == b.w.bytes);
  REQUIRE(a.b.bytes == b.b.bytes);
  REQUIRE(a.x.bytes != c.x.bytes);
  REQUIRE(a.x.bytes.size() == 3 * 104 * 2);
  REQUIRE(a.w.bytes.size() == 100 * 4);
  REQUIRE(a.x.values.size() == 3 * 104);
}

TEST_CASE("inputs follow the seeds' distributions, padding is NaN", "[inputs]") {
  const NormInputs ln = make_inputs(NormKind::LayerNormFwd, DType::F32, DType::F32, 64, 500, 512);
  double sum = 0, sq = 0;
  std::size_t n = 0;
  for (std::uint32_t r = 0; r < 64; ++r) {
    for (std::uint32_t i = 0; i < 512; ++i) {
      const float v = ln.x.values[r * 512 + i];
      if (i >= 500) {
        REQUIRE(std::isnan(v));
        continue;
      }
      sum += v;
      sq += static_cast<double>(v) * v;
      ++n;
    }
  }
  const double mean = sum / n;
  REQUIRE(mean == Approx(-2.3).margin(0.02));
  REQUIRE(std::sqrt(sq / n - mean * mean) == Approx(0.5).margin(0.02));
  for (float v : ln.w.values) REQUIRE((v >= 0 && v < 1));
  for (float v : ln.b.values) REQUIRE((v >= 0 && v < 1));

  const NormInputs rms = make_inputs(NormKind::RmsNormBwd, DType::F16, DType::F16, 32, 1000, 1000);
  REQUIRE(rms.b.values.empty());
  double wsum = 0;
  for (float v : rms.w.values) wsum += v;
  REQUIRE(wsum / 1000 == Approx(1.0).margin(0.02));
}

TEST_CASE("16-bit tensors hold the rounded values and their bit patterns", "[inputs]") {
  const std::vector<float> v{1.0f, 0.1f, -2.3f, 65504.0f, 1e-8f};
  const HostTensor h = make_tensor(v, DType::F16);
  REQUIRE(h.bytes.size() == 10);
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::uint16_t bits;
    std::memcpy(&bits, h.bytes.data() + 2 * i, 2);
    REQUIRE(bits == f32_to_f16_bits(v[i]));
    REQUIRE(h.values[i] == f16_bits_to_f32(bits));
  }
  const HostTensor bf = make_tensor(v, DType::BF16);
  REQUIRE(bf.values[0] == 1.0f);
  REQUIRE(bf.values[1] == bf16_bits_to_f32(f32_to_bf16_bits(0.1f)));
  REQUIRE(to_floats(from_floats(bf.values, DType::BF16), DType::BF16) == bf.values);
  const HostTensor f = make_tensor(v, DType::F32);
  REQUIRE(f.values == v);
  REQUIRE(dense_rows(std::vector<float>{1, 2, 9, 3, 4, 9}, 2, 2, 3) ==
          std::vector<float>{1, 2, 3, 4});
}
