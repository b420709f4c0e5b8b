#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "norm_case.hpp"
#include "ptxdsl/kernels/norm.hpp"

// `bench`'s check of huge cases: the float64 reference of every row of a 4 GB case costs minutes
// of host time, so rows past kFullCheckElements are checked on a sample that covers every CTA of
// the plan (each row in full: every cluster rank's column slice), dw and db still over every row,
// and every element of every row output still checked to be written (finite).
namespace ptxdsl::cli {

// Cases of more elements (batch × width) than this are checked on sampled rows; the standard
// suite's largest (16384 × 8192) stays below it, the wide suite's from 32768 × 16384 on pass it.
inline constexpr std::uint64_t kFullCheckElements = std::uint64_t{1} << 28;
// Rows drawn at random (seeded) beside those the plan names.
inline constexpr std::uint32_t kRandomSampleRows = 256;

// The rows that cover `built`'s CTAs for `batch` rows, ascending: the first and the last row
// group of every CTA that walks row groups (a persistent grid: the first and the last `walkers`
// groups, whatever order the walkers take them in), or, with a CTA (a cluster) a row group, the
// first and the last wave of the device's resident CTAs; every row slot of each group.
std::vector<std::uint32_t> plan_rows(const kernels::BuiltNorm& built, std::uint32_t batch);

// The rows that cover a shape whose forward and backward run `spec`'s kernels (its device, its
// tuning table) with rows `stride` apart: the union of both directions' plan_rows, the first and
// the last row, and kRandomSampleRows rows drawn by `seed`, ascending.
std::vector<std::uint32_t> sample_rows(const kernels::NormSpec& spec, std::uint32_t batch,
                                       std::uint32_t stride, std::uint64_t seed);
// The rows `bench` checks: every row (empty) up to kFullCheckElements and for a quantized y
// (check_quantized's rule counts the codes of every row), else sample_rows.
std::vector<std::uint32_t> rows_to_check(const kernels::NormSpec& spec, std::uint32_t batch,
                                         std::uint32_t stride, std::uint64_t seed);

// The references of `rows` alone (dense, in their order), as make_norm_data's of every row would
// hold them: a forward's y, mean, rstd and h; a backward's dx, with mean and rstd (its inputs) and
// dw, db of every row. A backward's pass over every row keeps no more than a few rows' dx a
// thread.
kernels::NormReference sampled_reference(const kernels::NormSpec& spec,
                                         const kernels::NormInputs& in,
                                         std::span<const std::uint32_t> rows);

// compare() of a case whose data holds data.sampled_rows: the row outputs of those rows against
// their references, every other row's elements checked to be finite (written), and dw and db of
// every row against their references and bounds.
CaseCheck compare_sampled(kernels::NormKind kind, const NormData& data,
                          const std::vector<Output>& got);

// How a case was checked, for the results: "full" or "sampled 272 of 8192 rows".
std::string checked_rows_text(const NormData& data);

}  // namespace ptxdsl::cli
