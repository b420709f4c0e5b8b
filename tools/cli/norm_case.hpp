#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptxdsl/kernels/check_outputs.hpp"
#include "ptxdsl/kernels/inputs.hpp"
#include "ptxdsl/kernels/norm.hpp"
#include "ptxdsl/kernels/reference.hpp"
#include "ptxdsl/runtime/context.hpp"
#include "ptxdsl/runtime/memory.hpp"
#include "ptxdsl/runtime/norms.hpp"

// One norm problem as `run` and `bench` use it: the seeded inputs, the float64 answers, the kernel
// run through the host API on the GPU or on the CPU executor, and the comparison.
namespace ptxdsl::cli {

inline constexpr double kEps = 1e-5;

using kernels::is_backward;
using kernels::is_layer_norm;

// Inputs of one (norm, variant, dtype, batch, width) and the references every kernel of that
// norm is checked against. The backward's mean and rstd inputs are the statistics of its x, in
// f32. With row groups (spec.row_groups > 1), `in` holds the rows densely (`width` apart) and the
// kernels' buffers hold them at row_start(): the same numbers, at other addresses.
struct NormData {
  kernels::NormSpec spec;  // kind: the norm and direction asked for
  std::uint32_t batch = 0;
  // Elements from one row to the next (≥ the width); with row groups, from one group to the next.
  std::uint32_t stride = 0;
  kernels::NormInputs in;
  kernels::HostTensor mean_in, rstd_in;  // f32, one per row
  kernels::NormReference forward;        // y, mean, rstd (and h)
  kernels::NormReference backward;       // dx, dw, db (when asked for)
  // A static quant scale's value (quant_scale_in): 0.8 of the per-tensor dynamic scale of the
  // reference's y, so that its largest values saturate; 1 otherwise.
  float static_scale = 1.0f;
  // The rows checked, ascending (sampled_check.hpp), the references holding theirs alone (dw and
  // db of every row); empty: every row.
  std::vector<std::uint32_t> sampled_rows;
};
// `spec` as the kernel of direction `kind` has it (a forward has every output; the backward of an
// f32 residual add is refused: its h would be f32).
kernels::NormSpec direction_spec(kernels::NormSpec spec, kernels::NormKind kind);
// `with_backward`: also the backward reference (always when spec.kind is a backward). Rows are
// `stride` elements apart (0: the width, or with row groups their span), the padding between them
// NaN. `sampled_rows` (ascending): the references of those rows alone (sampled_reference).
NormData make_norm_data(const kernels::NormSpec& spec, std::uint32_t batch, std::uint64_t seed,
                        bool with_backward = false, std::uint32_t stride = 0,
                        std::vector<std::uint32_t> sampled_rows = {});

// Where row r of the row tensors starts, in elements: r·stride, or with row groups
// (r / row_groups)·stride + (r % row_groups)·group_stride.
std::size_t row_start(const kernels::NormSpec& spec, std::uint32_t stride, std::uint32_t r);

// What one kernel wrote, as floats, named as its parameter is (rows packed densely); a quantized
// y as its codes.
struct Output {
  std::string name;
  kernels::DType dtype;
  std::vector<float> values;
  std::vector<std::uint8_t> codes;  // a quantized y (values empty)
};

// The accuracy rule's verdict on one case (kernels::check_outputs): each output's worst element
// against its own bound.
struct CaseCheck {
  kernels::Verdict verdict;
  bool pass() const { return verdict.pass(); }
  const kernels::OutputVerdict& worst() const;  // the output whose error is the most of its bound
  double max_abs() const;
  double worst_ratio() const;  // the largest error / bound of any element: ≤ 1 passes
  // "max abs err 1.2e-03, worst dx[17]: 4.1e-01 of its bound 2.0e-03"
  std::string summary() const;
};
// `kind`'s outputs against the references in `data` (compare_sampled where it holds sampled rows).
CaseCheck compare(kernels::NormKind kind, const NormData& data, const std::vector<Output>& got);

// The kernels of one norm on the GPU through the host API (runtime::Norm), with device buffers for
// everything the forward and the backward read and write.
class GpuNorm {
 public:
  GpuNorm(const runtime::Context& ctx, const NormData& data, const runtime::NormOptions& options);
  GpuNorm(const GpuNorm&) = delete;
  GpuNorm& operator=(const GpuNorm&) = delete;
  ~GpuNorm();
  // Fills `kind`'s outputs with NaN patterns, so an element never written shows.
  void poison(kernels::NormKind kind);
  // The call a user makes: forward or backward of the host API object (one runtime::NormCall),
  // ordered on `stream`.
  void call(kernels::NormKind kind, runtime::StreamRef stream);
  std::vector<Output> download(kernels::NormKind kind) const;

 private:
  struct Buffers;
  const runtime::Context& ctx_;
  kernels::NormSpec spec_;
  std::uint32_t batch_, stride_;
  std::unique_ptr<Buffers> b_;
  std::optional<runtime::Norm> norm_;
};

// `spec.kind`'s kernels on the CPU executor (every step of the launch plan).
std::vector<Output> run_on_cpu(const NormData& data);

// The bytes a kernel must move, by BENCHMARKS.md's formulas (GB/s counts these and nothing else),
// with the variant's own traffic: residual and h (forward) or dh (backward), the weights it reads
// and the weight gradients it writes, each in its own dtype; a quantized y's codes and scales.
std::uint64_t floor_bytes(const kernels::NormSpec& spec, std::uint32_t batch);

}  // namespace ptxdsl::cli
