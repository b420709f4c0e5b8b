// The plan's derived quantities: its chunks by place, and its dynamic shared memory, region by
// region (the planner's budget and the builders' offsets are the same numbers).
#include <algorithm>
#include <bit>

#include "heuristics.hpp"
#include "ptxdsl/kernels/plan.hpp"

namespace ptxdsl::kernels {
namespace {

std::uint32_t round_up(std::uint32_t a, std::uint32_t b) {
  return (a + b - 1) / b * b;
}

// The knob table's `planned` column: knobs that a plan has only with a persistent grid, or only
// with the backward's second launch.
template <class T>
std::optional<T> if_persistent(const Plan& p, T value) {
  if (p.grid != Grid::Persistent) return std::nullopt;
  return value;
}
template <class T>
std::optional<T> if_two_launches(const Plan& p, T value) {
  if (p.weight_grads != WeightGrads::PartialRows) return std::nullopt;
  return value;
}

}  // namespace

namespace detail {

// dw and db, or dw. Layer norm's variants without db (or dw) plan as if they had both: its dx
// keeps more values than RMS norm's, and those plans fit the registers.
std::uint32_t accumulators(const NormSpec& spec) {
  return spec.kind == NormKind::LayerNormBwd ? 2 : 1;
}

}  // namespace detail

std::uint32_t Plan::staged_chunks() const {
  return static_cast<std::uint32_t>(std::count(data.begin(), data.end(), Place::Shared));
}

std::uint32_t Plan::register_chunks() const {
  return static_cast<std::uint32_t>(std::count(data.begin(), data.end(), Place::Registers));
}

std::uint32_t Plan::accumulator_register_chunks() const {
  return static_cast<std::uint32_t>(std::count(accum.begin(), accum.end(), Place::Registers));
}

std::uint32_t PortablePartials::partial_rows(std::uint32_t batch) const {
  const std::uint32_t rows = (batch + rows_a_partial - 1) / rows_a_partial;  // batch < 2^31
  return std::clamp(std::bit_ceil(rows), least, most);
}

NormKnobs Plan::knobs() const {
  const Plan& p = *this;
  NormKnobs k;
#define PTXDSL_KNOB_PLANNED(name, type, scope, rule, lo, hi, arch, ptx, planned, ...) \
  if (knob_applies(KnobScope::scope, spec.kind)) k.name = planned;
  PTXDSL_NORM_KNOBS(PTXDSL_KNOB_PLANNED)
#undef PTXDSL_KNOB_PLANNED
  return k;
}

SharedLayout Plan::shared_layout(const NormSpec& spec) const {
  const auto s = static_cast<std::uint32_t>(dtype_bytes(spec.dtype));
  const bool backward = is_backward(spec.kind);
  const std::uint32_t tensors = backward ? 2 : 1;
  const std::uint32_t nacc = backward ? detail::accumulators(spec) : 0;
  const std::uint32_t slots = threads_per_row * vec * rows_per_cta;  // elements a chunk, all rows
  const auto shared_accumulators =
      static_cast<std::uint32_t>(std::count(accum.begin(), accum.end(), Place::Shared));
  SharedLayout l;
  l.staged_tensor_bytes = staged_chunks() * slots * s;
  l.staging = {0, staging_buffers() * tensors * l.staged_tensor_bytes};
  l.accumulator_bytes = shared_accumulators * threads_per_row * vec * 4;
  l.accumulators = {l.staging.end(), nacc * l.accumulator_bytes};
  l.staging_buffer_bytes = tensors * l.staged_tensor_bytes;
  // Under deterministic portable each row slot writes its own partial row: nothing merges.
  const bool merges = backward && (rows_per_cta > 1 || partial_cluster > 1) &&
                      weight_grads == WeightGrads::PartialRows && !portable.on();
  l.merge = {l.accumulators.end(), merges ? nacc * chunks * slots * 4 : 0};
  // A cluster's merge comes after the rows, when the staged rows and the ring are spent: it takes
  // the staging buffers' bytes where they hold it, else shares the ring's.
  const bool over_staging = partial_cluster > 1 && l.merge.bytes <= l.staging.bytes;
  if (over_staging) l.merge.offset = 0;
  const bool ringed = lookahead == Lookahead::Ring;
  l.ring_tensor_bytes = ringed ? register_chunks() * slots * s : 0;
  l.ring_buffer_bytes = tensors * l.ring_tensor_bytes;
  l.ring = {partial_cluster > 1 ? l.accumulators.end() : l.merge.end(),
            ringed ? ring_rows * l.ring_buffer_bytes : 0};
  const std::uint32_t weight_tensors =
      backward || !shared_weights ? 0 : (has_weight(spec) ? 1 : 0) + (has_bias(spec) ? 1 : 0);
  // Each tensor on a 16-byte boundary (vector accesses; the weight dtype's bytes are 2 or 4).
  const auto weight_bytes = static_cast<std::uint32_t>(dtype_bytes(spec.weight_dtype));
  l.weight_tensor_bytes = weight_tensors > 0 ? round_up(row_span() * weight_bytes, 16) : 0;
  l.weights = {round_up(l.ring.end(), 16), weight_tensors * l.weight_tensor_bytes};
  l.bytes = l.weights.bytes > 0 ? l.weights.end() : std::max(l.ring.end(), l.merge.end());
  return l;
}

}  // namespace ptxdsl::kernels
