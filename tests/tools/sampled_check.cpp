// bench's sampled check of huge cases (tools/cli/sampled_check.hpp) on the CPU: the float64
// references of every row stand in for a kernel's outputs, and a fault put into one element shows
// wherever the plan's CTAs would have written it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "norm_case.hpp"
#include "ptxdsl/kernels/plan.hpp"
#include "sampled_check.hpp"

namespace {

using ptxdsl::cli::NormData;
using ptxdsl::cli::Output;
using ptxdsl::kernels::DType;
using ptxdsl::kernels::NormKind;

constexpr std::uint64_t kSeed = 7;

// On a GPU of 8 SMs: its waves and persistent grids few enough that a small batch is sampled.
ptxdsl::kernels::NormSpec spec_of(NormKind kind, std::uint32_t width) {
  ptxdsl::kernels::NormSpec s;
  s.kind = kind;
  s.dtype = DType::F32;
  s.weight_dtype = DType::F32;
  s.width = width;
  s.device.sm_count = 8;
  return s;
}

std::vector<float> floats(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}

// What a correct kernel writes: the reference of every row, in f32.
std::vector<Output> right_outputs(NormKind kind, const NormData& every_row) {
  const ptxdsl::kernels::NormReference& r =
      ptxdsl::kernels::is_backward(kind) ? every_row.backward : every_row.forward;
  std::vector<Output> out;
  const auto add = [&](const char* name, const std::vector<double>& v) {
    if (!v.empty()) out.push_back({name, DType::F32, floats(v), {}});
  };
  if (ptxdsl::kernels::is_backward(kind)) {
    add("dx", r.dx);
    add("dw", r.dw);
    add("db", r.db);
  } else {
    add("y", r.y);
    add("mean", r.mean);
    add("rstd", r.rstd);
  }
  return out;
}

std::vector<float>& values_of(std::vector<Output>& outs, const std::string& name) {
  for (Output& o : outs) {
    if (o.name == name) return o.values;
  }
  FAIL("no output " << name);
  throw;
}

// One check of `got`, with one element of output `name` at `at` moved to `value` (a copy).
bool passes_with(NormKind kind, const NormData& sampled, std::vector<Output> got,
                 const std::string& name, std::size_t at, float value) {
  values_of(got, name).at(at) = value;
  return ptxdsl::cli::compare(kind, sampled, got).pass();
}

}  // namespace

TEST_CASE("a sampled check catches a wrong row of any CTA of a persistent backward",
          "[cli][sampled]") {
  const NormKind kind = GENERATE(NormKind::LayerNormBwd, NormKind::RmsNormBwd);
  const std::uint32_t batch = 600, width = 4096;
  const ptxdsl::kernels::NormSpec spec = spec_of(kind, width);
  const std::vector<std::uint32_t> rows = ptxdsl::cli::sample_rows(spec, batch, width, kSeed);
  REQUIRE(rows.size() < batch / 2);  // a sample, not every row
  const NormData sampled = ptxdsl::cli::make_norm_data(spec, batch, kSeed, true, 0, rows);
  const NormData every_row = ptxdsl::cli::make_norm_data(spec, batch, kSeed, true);
  const std::vector<Output> right = right_outputs(kind, every_row);
  // dw, db and the kernels' mean and rstd inputs of every row: the same numbers as the full
  // reference's, without its dx.
  CHECK(sampled.backward.dw == every_row.backward.dw);
  CHECK(sampled.backward.db == every_row.backward.db);
  CHECK(sampled.rstd_in.values == every_row.rstd_in.values);
  CHECK(sampled.mean_in.values == every_row.mean_in.values);
  REQUIRE(ptxdsl::cli::compare(kind, sampled, right).pass());
  CHECK(ptxdsl::cli::checked_rows_text(sampled) ==
        "sampled " + std::to_string(rows.size()) + " of " + std::to_string(batch) + " rows");

  // Each walker's last row group (its rows w, w + walkers, ...), the last row slot of it, the last
  // column: wrong by far more than any bound.
  const ptxdsl::kernels::BuiltNorm built =
      ptxdsl::kernels::build_norm(ptxdsl::kernels::spec_for_batch(spec, batch));
  const ptxdsl::kernels::GridRule& g = built.steps.at(0).grid;
  REQUIRE(g.kind == ptxdsl::kernels::GridRule::Kind::Persistent);
  const std::uint32_t per_group = g.rows_per_cta;
  const std::uint32_t groups = (batch + per_group - 1) / per_group;
  const std::uint32_t walkers = g.grid(batch, width) / g.cluster_ctas;
  REQUIRE(walkers > 1);
  REQUIRE(groups > 2 * walkers);  // rows a walker takes between its first and its last
  const std::vector<float> dx = floats(every_row.backward.dx);
  for (std::uint32_t w = 0; w < walkers; ++w) {
    const std::uint32_t last_group = w + (groups - 1 - w) / walkers * walkers;
    const std::uint32_t row = std::min(batch - 1, last_group * per_group + per_group - 1);
    const std::size_t at = std::size_t{row} * width + width - 1;
    INFO("walker " << w << " of " << walkers << ", row " << row);
    REQUIRE_FALSE(passes_with(kind, sampled, right, "dx", at, dx[at] + 1.0f));
  }
  // A row outside the sample left unwritten (the poison's NaN) shows too.
  std::uint32_t unsampled = 0;
  while (std::binary_search(rows.begin(), rows.end(), unsampled)) ++unsampled;
  CHECK_FALSE(passes_with(kind, sampled, right, "dx", std::size_t{unsampled} * width + 3,
                          std::numeric_limits<float>::quiet_NaN()));
  // dw and db sum every row: one column off by a thousandth of its size fails.
  const std::vector<float> dw = floats(every_row.backward.dw);
  CHECK_FALSE(passes_with(kind, sampled, right, "dw", 17, dw[17] * 1.001f + 1e-3f));
}

TEST_CASE("a sampled check catches a wrong row of the first and the last wave of a forward",
          "[cli][sampled]") {
  const NormKind kind = NormKind::LayerNormFwd;
  const std::uint32_t batch = 600, width = 4096;
  const ptxdsl::kernels::NormSpec spec = spec_of(kind, width);
  const std::vector<std::uint32_t> rows = ptxdsl::cli::sample_rows(spec, batch, width, kSeed);
  REQUIRE(rows.size() < batch / 2);
  const NormData sampled = ptxdsl::cli::make_norm_data(spec, batch, kSeed, false, 0, rows);
  const NormData every_row = ptxdsl::cli::make_norm_data(spec, batch, kSeed);
  const std::vector<Output> right = right_outputs(kind, every_row);
  REQUIRE(ptxdsl::cli::compare(kind, sampled, right).pass());
  const std::vector<float> y = floats(every_row.forward.y);
  const std::vector<float> rstd = floats(every_row.forward.rstd);
  for (std::uint32_t row : {0u, 1u, batch / 2, batch - 2, batch - 1}) {
    INFO("row " << row);
    if (!std::binary_search(rows.begin(), rows.end(), row)) continue;  // the middle may be out
    const std::size_t at = std::size_t{row} * width + width / 2;
    CHECK_FALSE(passes_with(kind, sampled, right, "y", at, y[at] + 0.5f));
    CHECK_FALSE(passes_with(kind, sampled, right, "rstd", row, rstd[row] * 1.01f));
  }
  // Every row must be written, sampled or not.
  std::uint32_t unsampled = 0;
  while (std::binary_search(rows.begin(), rows.end(), unsampled)) ++unsampled;
  CHECK_FALSE(passes_with(kind, sampled, right, "y", std::size_t{unsampled} * width,
                          std::numeric_limits<float>::quiet_NaN()));
  CHECK_FALSE(
      passes_with(kind, sampled, right, "mean", unsampled, std::numeric_limits<float>::infinity()));
}

TEST_CASE("bench checks every row up to its threshold, and samples past it", "[cli][sampled]") {
  const ptxdsl::kernels::NormSpec spec = spec_of(NormKind::RmsNormBwd, 8192);
  CHECK(ptxdsl::cli::rows_to_check(spec, 16384, 8192, kSeed).empty());
  const std::vector<std::uint32_t> rows = ptxdsl::cli::rows_to_check(spec, 65536, 8192, kSeed);
  REQUIRE(!rows.empty());
  CHECK(rows.front() == 0);
  CHECK(rows.back() == 65535);
  CHECK(std::is_sorted(rows.begin(), rows.end()));
  CHECK(rows.size() < 65536 / 16);
  CHECK(ptxdsl::cli::sample_rows(spec, 65536, 8192, kSeed) == rows);  // seeded: the same again
}
