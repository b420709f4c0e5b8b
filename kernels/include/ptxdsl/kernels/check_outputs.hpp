#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ptxdsl/kernels/norm.hpp"
#include "ptxdsl/kernels/reference.hpp"

// The one accuracy rule for the norm kernels (docs/kernels.md, "Accuracy"): every consumer (the
// executor and GPU tests, `ptxdsl run`, `ptxdsl bench`) judges outputs with check_outputs.
namespace ptxdsl::kernels {

// The inputs an output was computed from, as stored (already rounded to their dtype), as floats:
// `batch` rows `stride` elements apart, of which the first `width` count. b and dy may be empty
// where the norm does not read them.
struct NormProblem {
  bool layer = true;  // layer norm (else RMS norm)
  std::uint32_t batch = 0, width = 0, stride = 0;
  double eps = 1e-5;
  std::span<const float> x, w, b, dy;
  std::span<const float> dh;  // a backward's residual gradient, added into dx (may be empty)
  // The dtype x̂ is rounded to before dw's sums (Casting Llama), if any.
  std::optional<DType> xhat_dtype = std::nullopt;
};
// The problem of a spec's variant: x as the reference normalized it (h with the residual add),
// its weights (ones where it has none), and dy, dh of the inputs. Views into `in` and `ref`.
NormProblem norm_problem(const NormSpec& spec, const NormInputs& in, const NormReference& ref,
                         double eps);

// One output of a kernel and its float64 reference, dense: y and dx `batch` × `width`, mean and
// rstd one per row, dw and db one per column. The name picks the output's rule.
struct NormOutput {
  std::string_view name;  // y, mean, rstd, h, dx, dw or db
  DType dtype;            // as stored by the kernel
  std::span<const float> got;
  std::span<const double> want;
};

// One output judged: where its error is largest against the element's bound, and by how much.
struct OutputVerdict {
  std::string name;
  DType dtype = DType::F32;
  bool pass = true;
  std::size_t failures = 0;   // elements over their bound (NaN and inf included)
  std::size_t nonfinite = 0;  // NaN or inf in `got`
  std::size_t worst = 0;      // the element with the largest error / bound
  double got = 0, want = 0, error = 0, bound = 0;  // at `worst`
  double max_abs = 0;                              // the largest |got − want|
  double max_rel = 0;                              // max_abs / max |want|
  double ratio() const { return bound > 0 ? error / bound : (error > 0 ? 1e300 : 0); }
};
struct Verdict {
  std::vector<OutputVerdict> outputs;
  bool pass() const;
};

Verdict check_outputs(const NormProblem& problem, std::span<const NormOutput> outputs);

}  // namespace ptxdsl::kernels
