#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptxdsl/dsl/contract.hpp"
#include "ptxdsl/dsl/module.hpp"

// The norm kernel family: what to build (NormSpec), what comes out (BuiltNorm: PTX text plus the
// launch plan a host program follows).
namespace ptxdsl::kernels {

enum class NormKind { LayerNormFwd, LayerNormBwd, RmsNormFwd, RmsNormBwd };
enum class DType { F32, F16, BF16 };

std::string_view kind_name(NormKind k);  // "ln_fwd", "ln_bwd", "rms_fwd", "rms_bwd"
NormKind parse_kind(std::string_view name);  // throws Error listing the allowed names
std::string_view dtype_name(DType d);     // "f32", "f16", "bf16"
DType parse_dtype(std::string_view name);  // throws Error listing the allowed names
int dtype_bytes(DType d);

inline constexpr std::uint32_t kMaxWidth = 65536;

// Tuning knobs; unset means the heuristic (kernels/src/heuristics.cpp) decides.
struct NormKnobs {
  std::optional<std::uint32_t> threads_per_row;  // power of two ≤ 32, or a multiple of 32
  std::optional<std::uint32_t> rows_per_cta;
  std::optional<std::uint32_t> vector_elems;     // elements per vector access: 1, 2, 4 or 8
  std::optional<std::uint32_t> ctas_per_sm;      // backward: persistent grid size = SMs × this
  std::optional<std::uint32_t> sm_count;         // backward: SMs assumed when sizing the grid
};

struct NormSpec {
  NormKind kind = NormKind::RmsNormFwd;
  DType dtype = DType::F16;         // x, y, dy, dx
  DType weight_dtype = DType::F16;  // w (and b, dw, db): dtype or F32
  std::uint32_t width = 0;          // elements per row, [1, kMaxWidth]
  Arch arch = Arch::Sm90;
  PtxVersion ptx_version{7, 8};
  NormKnobs knobs;
};
// Throws ptxdsl::Error naming the bad value and the allowed range.
void validate(const NormSpec& spec);

// How many CTAs a step launches for a batch.
struct GridRule {
  enum class Kind { RowsPerCta, Persistent, Columns };
  Kind kind = Kind::RowsPerCta;
  std::uint32_t rows_per_cta = 1;     // RowsPerCta, Persistent
  std::uint32_t max_ctas = 0;         // Persistent: at most this many CTAs
  std::uint32_t columns_per_cta = 0;  // Columns: ceil(width / columns_per_cta) CTAs
  std::uint32_t grid(std::uint32_t batch, std::uint32_t width) const;
  std::string describe() const;  // "ceil(batch / 4)", ...
};

// One kernel launch of a norm, in the order the host runs them.
struct LaunchStep {
  KernelContract contract;
  GridRule grid;
};

// What `build_norm` produces. Parameter names are fixed across the family (x, w, b, y, mean, rstd,
// dy, dx, dw, db, partial_dw, partial_db, partials, batch, stride, eps), so a host binds by name.
struct BuiltNorm {
  NormSpec spec;
  std::string ptx;
  std::vector<LaunchStep> steps;
  // f32 scratch the backward needs for `batch` rows (partial dw/db rows); 0 for the forward.
  std::uint64_t workspace_bytes(std::uint32_t batch) const;
  std::uint32_t partial_rows(std::uint32_t batch) const;  // backward: rows of partials used
};

BuiltNorm build_norm(const NormSpec& spec);

}  // namespace ptxdsl::kernels
