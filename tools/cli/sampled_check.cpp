#include "sampled_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "ptxdsl/kernels/check_outputs.hpp"
#include "ptxdsl/kernels/row_blocks.hpp"

namespace ptxdsl::cli {

using kernels::DType;
using kernels::NormKind;

namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void sort_unique(std::vector<std::uint32_t>& rows) {
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
}

// The rows of groups [first, last) of `rows_a_group` rows each, clipped to the batch.
void add_groups(std::vector<std::uint32_t>& rows, std::uint64_t first, std::uint64_t last,
                std::uint32_t rows_a_group, std::uint32_t batch) {
  const std::uint64_t end = std::min<std::uint64_t>(last * rows_a_group, batch);
  for (std::uint64_t r = first * rows_a_group; r < end; ++r)
    rows.push_back(static_cast<std::uint32_t>(r));
}

// `v`'s rows (`per_row` values each) at `rows`, dense.
std::vector<float> gather(std::span<const float> v, std::span<const std::uint32_t> rows,
                          std::size_t per_row, std::size_t stride) {
  std::vector<float> out;
  if (v.empty()) return out;
  out.reserve(rows.size() * per_row);
  for (std::uint32_t r : rows) {
    const auto at = v.begin() + static_cast<std::ptrdiff_t>(std::size_t{r} * stride);
    out.insert(out.end(), at, at + static_cast<std::ptrdiff_t>(per_row));
  }
  return out;
}

// Non-finite elements of a row output (`per_row` values a row) over every row, on every core, and
// the first of them.
struct NonFinite {
  std::size_t count = 0;
  std::size_t first = 0;
};
NonFinite count_nonfinite(std::span<const float> v, std::uint32_t batch, std::size_t per_row) {
  const std::vector<kernels::RowBlock> blocks = kernels::row_blocks(batch, per_row);
  std::vector<NonFinite> parts(blocks.size());
  kernels::for_row_blocks(blocks, [&](std::size_t b, std::uint32_t first, std::uint32_t rows) {
    NonFinite& p = parts[b];
    for (std::size_t i = std::size_t{first} * per_row; i < std::size_t{first + rows} * per_row;
         ++i) {
      if (std::isfinite(v[i])) continue;
      if (p.count++ == 0) p.first = i;
    }
  });
  NonFinite all;
  for (const NonFinite& p : parts) {
    if (p.count > 0 && all.count == 0) all.first = p.first;
    all.count += p.count;
  }
  return all;
}

bool is_row_output(std::string_view name) {
  return name == "y" || name == "h" || name == "dx" || name == "mean" || name == "rstd";
}

}  // namespace

std::vector<std::uint32_t> plan_rows(const kernels::BuiltNorm& built, std::uint32_t batch) {
  const kernels::GridRule& g = built.steps.at(0).grid;
  const kernels::Plan& p = built.plan;
  const std::uint32_t per_group = g.rows_per_cta;
  const std::uint64_t groups = (std::uint64_t{batch} + per_group - 1) / per_group;
  std::uint64_t walkers;
  if (g.kind == kernels::GridRule::Kind::Persistent) {
    // Walker w takes groups w, w + walkers, ... (its last among the last `walkers`); portable
    // partials take rows q, q + Q, ... (Q = walkers × rows a group); tickets hand the first
    // `walkers` groups out one a walker.
    walkers = g.grid(batch, built.spec.width) / g.cluster_ctas;
  } else {
    // A CTA (a cluster) a group, each running the same code on its own rows: the first and the
    // last wave of resident clusters.
    const DeviceModel& d = built.spec.device;
    const std::uint32_t resident = std::max(1u, d.max_threads_per_sm / std::max(1u, p.block()));
    walkers = std::max<std::uint64_t>(1, std::uint64_t{d.sm_count} * resident / g.cluster_ctas);
  }
  walkers = std::min(walkers, groups);
  std::vector<std::uint32_t> rows;
  add_groups(rows, 0, walkers, per_group, batch);
  add_groups(rows, groups - walkers, groups, per_group, batch);
  sort_unique(rows);
  return rows;
}

std::vector<std::uint32_t> rows_to_check(const kernels::NormSpec& spec, std::uint32_t batch,
                                         std::uint32_t stride, std::uint64_t seed) {
  if (std::uint64_t{batch} * spec.width <= kFullCheckElements) return {};
  if (spec.quant != kernels::Quant::None) return {};
  return sample_rows(spec, batch, stride, seed);
}

std::vector<std::uint32_t> sample_rows(const kernels::NormSpec& spec, std::uint32_t batch,
                                       std::uint32_t stride, std::uint64_t seed) {
  std::vector<std::uint32_t> rows;
  const bool ln = is_layer_norm(spec.kind);
  for (NormKind k : ln ? std::vector{NormKind::LayerNormFwd, NormKind::LayerNormBwd}
                       : std::vector{NormKind::RmsNormFwd, NormKind::RmsNormBwd}) {
    if (is_backward(k) && spec.residual == kernels::Residual::AddF32) continue;
    kernels::NormSpec s = direction_spec(spec, k);
    // As the runtime plans it: no wider vectors than rows `stride` apart allow.
    const std::uint32_t steps =
        s.row_groups > 1 ? std::gcd(stride, s.group_stride) : std::max(stride, s.width);
    const std::uint32_t widest = kernels::vector_elems_for(s.dtype, s.weight_dtype, steps, 0, 0);
    if (!s.knobs.vector_elems || *s.knobs.vector_elems > widest) s.knobs.vector_elems = widest;
    const std::vector<std::uint32_t> own =
        plan_rows(kernels::build_norm(kernels::spec_for_batch(s, batch)), batch);
    rows.insert(rows.end(), own.begin(), own.end());
  }
  rows.push_back(0);
  rows.push_back(batch - 1);
  std::uint64_t state = seed;
  for (std::uint32_t i = 0; i < kRandomSampleRows; ++i)
    rows.push_back(static_cast<std::uint32_t>(splitmix64(state) % batch));
  sort_unique(rows);
  return rows;
}

kernels::NormReference sampled_reference(const kernels::NormSpec& spec,
                                         const kernels::NormInputs& in,
                                         std::span<const std::uint32_t> rows) {
  const std::size_t n = in.width, m = rows.size();
  const bool backward = is_backward(spec.kind);
  kernels::NormReference out;
  const kernels::NormReference first = kernels::norm_reference(spec, in, kEps, rows.front(), 1);
  out.w = first.w;
  out.b = first.b;
  // The sampled rows' outputs, dense (a backward's mean and rstd are of every row, below).
  const auto sized = [&](const auto& like, auto& v, std::size_t per_row) {
    if (!like.empty()) v.resize(m * per_row);
  };
  sized(first.rows, out.rows, n);
  sized(first.y, out.y, n);
  sized(first.h, out.h, n);
  sized(first.dx, out.dx, n);
  if (!backward) {
    sized(first.mean, out.mean, 1);
    sized(first.rstd, out.rstd, 1);
  }
  // Each sampled row's reference alone, the sample split over every core.
  kernels::for_row_blocks(
      kernels::row_blocks(static_cast<std::uint32_t>(m), n),
      [&](std::size_t, std::uint32_t first_slot, std::uint32_t k) {
        for (std::uint32_t slot = first_slot; slot < first_slot + k; ++slot) {
          const kernels::NormReference p = kernels::norm_reference(spec, in, kEps, rows[slot], 1);
          const auto take = [&](const auto& src, auto& dst) {
            std::copy(src.begin(), src.end(),
                      dst.begin() + static_cast<std::ptrdiff_t>(slot * src.size()));
          };
          take(p.rows, out.rows);
          take(p.y, out.y);
          take(p.h, out.h);
          take(p.dx, out.dx);
          if (!backward) {
            take(p.mean, out.mean);
            take(p.rstd, out.rstd);
          }
        }
      });
  if (!backward) return out;
  // The statistics (the kernels' mean and rstd inputs), dw and db of every row, in norm_case's
  // blocks of rows, summed in their order.
  const std::vector<kernels::RowBlock> blocks = kernels::row_blocks(in.batch, n);
  std::vector<kernels::ColumnSums> sums(blocks.size());
  kernels::for_row_blocks(blocks, [&](std::size_t b, std::uint32_t first_row, std::uint32_t k) {
    sums[b] = kernels::backward_column_sums(spec, in, kEps, first_row, k);
  });
  out.dw.assign(first.dw.size(), 0);
  out.db.assign(first.db.size(), 0);
  for (const kernels::ColumnSums& s : sums) {
    out.mean.insert(out.mean.end(), s.mean.begin(), s.mean.end());
    out.rstd.insert(out.rstd.end(), s.rstd.begin(), s.rstd.end());
    for (std::size_t c = 0; c < out.dw.size(); ++c) out.dw[c] += s.dw[c];
    for (std::size_t c = 0; c < out.db.size(); ++c) out.db[c] += s.db[c];
  }
  return out;
}

CaseCheck compare_sampled(NormKind kind, const NormData& data, const std::vector<Output>& got) {
  const kernels::NormSpec spec = direction_spec(data.spec, kind);
  const kernels::NormReference& ref = is_backward(kind) ? data.backward : data.forward;
  const std::span<const std::uint32_t> rows = data.sampled_rows;
  const std::uint32_t width = spec.width, batch = data.batch;
  const std::size_t stride = data.in.stride;
  // The sampled rows as a problem of their own, dense.
  const std::vector<float> dy = gather(data.in.dy.values, rows, width, stride);
  const std::vector<float> dh = gather(data.in.dh.values, rows, width, stride);
  kernels::NormProblem sample{.layer = is_layer_norm(kind),
                              .batch = static_cast<std::uint32_t>(rows.size()),
                              .width = width,
                              .stride = width,
                              .eps = kEps,
                              .x = ref.rows,
                              .w = ref.w,
                              .b = ref.b,
                              .dy = {},
                              .dh = {},
                              .xhat_dtype = kernels::rounded_xhat(spec)};
  if (is_backward(kind)) {
    sample.dy = dy;
    sample.dh = dh;
  }
  // dw and db over every row: their bounds need no float64 array of a row tensor's size.
  kernels::NormProblem every_row = sample;
  every_row.batch = batch;
  every_row.stride = data.in.stride;
  every_row.x = data.in.x.values;
  every_row.dy = data.in.dy.values;
  every_row.dh = data.in.dh.values;

  std::vector<std::vector<float>> sampled_got;  // kept alive for the spans below
  sampled_got.reserve(got.size());
  std::vector<kernels::NormOutput> row_outputs, column_outputs;
  std::vector<const Output*> row_sources;
  for (const Output& o : got) {
    if (!o.codes.empty() || o.name == "y_scale") {
      throw std::runtime_error(
          fmt::format("a sampled check takes no quantized y (output '{}')", o.name));
    }
    const bool per_row = o.name == "mean" || o.name == "rstd";
    if (!is_row_output(o.name)) {
      const std::vector<double>& want = o.name == "dw" ? ref.dw : ref.db;
      column_outputs.push_back({o.name, o.dtype, o.values, want});
      continue;
    }
    const std::size_t per = per_row ? 1 : width;
    sampled_got.push_back(gather(o.values, rows, per, per));
    const std::vector<double>& want = o.name == "y"      ? ref.y
                                      : o.name == "h"    ? ref.h
                                      : o.name == "dx"   ? ref.dx
                                      : o.name == "mean" ? ref.mean
                                                         : ref.rstd;
    row_outputs.push_back({o.name, o.dtype, sampled_got.back(), want});
    row_sources.push_back(&o);
  }
  CaseCheck check{kernels::check_outputs(sample, row_outputs)};
  for (std::size_t i = 0; i < row_outputs.size(); ++i) {
    kernels::OutputVerdict& v = check.verdict.outputs[i];
    const Output& o = *row_sources[i];
    const std::size_t per = o.name == "mean" || o.name == "rstd" ? 1 : width;
    v.worst = std::size_t{rows[v.worst / per]} * per + v.worst % per;  // in the whole output
    // Every row's elements written: a row the sample missed may not hold the poison.
    const NonFinite all = count_nonfinite(o.values, batch, per);
    const std::size_t unsampled = all.count - v.nonfinite;
    if (unsampled == 0) continue;
    v.failures += unsampled;
    v.nonfinite = all.count;
    v.pass = false;
    if (v.nonfinite == unsampled) {  // the worst element is then one of them
      v.worst = all.first;
      v.got = o.values[all.first];
      v.error = std::numeric_limits<double>::infinity();
    }
  }
  if (!column_outputs.empty()) {
    for (kernels::OutputVerdict& v : kernels::check_outputs(every_row, column_outputs).outputs)
      check.verdict.outputs.push_back(std::move(v));
  }
  return check;
}

std::string checked_rows_text(const NormData& data) {
  if (data.sampled_rows.empty()) return "full";
  return fmt::format("sampled {} of {} rows", data.sampled_rows.size(), data.batch);
}

}  // namespace ptxdsl::cli
