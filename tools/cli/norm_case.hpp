#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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

// Inputs of one (norm, dtype, batch, width) and the references every kernel of that norm is
// checked against. The backward's mean and rstd inputs are the forward reference's, in f32.
struct NormData {
  kernels::NormSpec spec;  // kind: the norm and direction asked for
  std::uint32_t batch = 0;
  kernels::NormInputs in;
  kernels::HostTensor mean_in, rstd_in;  // f32, one per row
  std::vector<double> y, mean, rstd;     // forward reference
  std::vector<double> dx, dw, db;        // backward reference (when asked for)
  // The largest of the terms dx is the difference of: dx's errors are measured against it, since
  // dx cancels (RMS rows of one element: dx = rstd·w·dy·(1 − x̂²), with 1 − x̂² ≈ 1e-4).
  double dx_scale = 0;
};
// `with_backward`: also the backward reference (always when spec.kind is a backward).
NormData make_norm_data(const kernels::NormSpec& spec, std::uint32_t batch, std::uint64_t seed,
                        bool with_backward = false);

// What one kernel wrote, as floats, named as its parameter is.
struct Output {
  std::string name;
  kernels::DType dtype;
  std::vector<float> values;
};

struct OutputCheck {
  std::string name;
  kernels::Deviation deviation;
  double tolerance = 0;
  bool pass() const { return deviation.nonfinite == 0 && deviation.max_rel <= tolerance; }
};
struct CaseCheck {
  std::vector<OutputCheck> outputs;
  bool pass() const;
  const OutputCheck& worst() const;  // by max_rel / tolerance
  double max_abs() const;
  double max_rel() const;
  std::string summary()
      const;  // "max abs err 1.2e-03, max rel err 4.1e-04 (dx, tolerance 2.0e-03)"
};
// `kind`'s outputs against the references in `data`.
CaseCheck compare(kernels::NormKind kind, const NormData& data, const std::vector<Output>& got);

// The kernels of one norm on the GPU through the host API (LayerNorm or RmsNorm), with device
// buffers for everything the forward and the backward read and write.
class GpuNorm {
 public:
  GpuNorm(const runtime::Context& ctx, const NormData& data, const runtime::NormOptions& options);
  GpuNorm(const GpuNorm&) = delete;
  GpuNorm& operator=(const GpuNorm&) = delete;
  ~GpuNorm();
  // Fills `kind`'s outputs with NaN patterns, so an element never written shows.
  void poison(kernels::NormKind kind);
  // The call a user makes: forward or backward of the host API object, ordered on `stream`.
  void call(kernels::NormKind kind, runtime::StreamRef stream);
  std::vector<Output> download(kernels::NormKind kind) const;

 private:
  struct Buffers;
  const runtime::Context& ctx_;
  kernels::NormSpec spec_;
  std::uint32_t batch_;
  std::unique_ptr<Buffers> b_;
  std::optional<runtime::LayerNorm> ln_;
  std::optional<runtime::RmsNorm> rms_;
};

// `spec.kind`'s kernels on the CPU executor (every step of the launch plan).
std::vector<Output> run_on_cpu(const NormData& data);

// The bytes a kernel must move, by BENCHMARKS.md (GB/s counts these and nothing else).
std::uint64_t floor_bytes(kernels::NormKind kind, kernels::DType dtype, std::uint32_t batch,
                          std::uint32_t width);

}  // namespace ptxdsl::cli
