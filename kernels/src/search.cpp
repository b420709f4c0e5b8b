// The space `ptxdsl tune` searches: each knob's move from the knob table (its `move` column), for
// the kernels the table says, and the few moves that set knobs together.
#include <algorithm>
#include <bit>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ptxdsl/kernels/tuning.hpp"

namespace ptxdsl::kernels {
namespace {

// Rows wider than this are also tried split over a cluster: backwards from 4 KiB, where a cluster
// also halves the partial rows and shares the SMs' spread between its CTAs.
constexpr std::uint64_t kForwardClusterCandidateBytes = 16 * 1024;
constexpr std::uint64_t kBackwardClusterCandidateBytes = 4 * 1024;

bool wide_row(const NormSpec& spec) {
  const std::uint64_t from =
      is_backward(spec.kind) ? kBackwardClusterCandidateBytes : kForwardClusterCandidateBytes;
  return std::uint64_t{spec.width} * dtype_bytes(spec.dtype) > from;
}

// Where a knob's move applies beyond the table's `tried for`: clusters for wide rows only, one-pass
// statistics for 16-bit rows only (f32 rows' error grows 5-fold with them).
bool tried(const KnobInfo& info, const NormSpec& spec) {
  if (info.move == KnobMove::None || !knob_applies(info.tried_for, spec.kind)) return false;
  if (info.name == "cluster_ctas") return wide_row(spec);
  if (info.name == "one_pass_stats") return spec.dtype != DType::F32;
  return true;
}

// The values a rule allows from lo up, at most `most` of them.
std::vector<std::uint32_t> allowed(const KnobInfo& info, std::size_t most) {
  std::vector<std::uint32_t> values;
  for (std::uint32_t v = info.lo; v <= info.hi && values.size() < most;) {
    values.push_back(v);
    v = info.rule == KnobRule::PowerOfTwo ? 2 * v : v + 1;
  }
  return values;
}

std::vector<std::uint32_t> moved(const KnobInfo& info, std::optional<std::uint32_t> planned) {
  const std::uint32_t v = planned ? *planned : info.lo;
  std::vector<std::uint32_t> out;
  switch (info.move) {
    case KnobMove::HalveDouble:  // whole warps
      if (v >= 64) out.push_back(v / 2);
      if (v >= 32 && 2 * v <= info.hi) out.push_back(2 * v);
      return out;
    case KnobMove::Ends:
      return {info.hi, info.lo};
    case KnobMove::Few:
    case KnobMove::Each:
      for (std::uint32_t a : allowed(info, info.move == KnobMove::Few ? 3 : info.hi)) {
        if (a != v) out.push_back(a);
      }
      return out;
    default:
      return out;
  }
}
std::vector<bool> moved(const KnobInfo& info, std::optional<bool> planned) {
  if (info.move == KnobMove::Off) return {false};
  if (info.move == KnobMove::Flip) return {!(planned && *planned)};
  return {};
}
std::vector<RowOrder> moved(const KnobInfo&, std::optional<RowOrder>) {
  return {};
}
std::vector<Determinism> moved(const KnobInfo&, std::optional<Determinism>) {
  return {};
}

// Knobs with the one named set to `value`.
template <class T>
NormKnobs with_knob(std::string_view name, T value) {
  NormKnobs k;
  for_each_knob(k, [&](const KnobInfo& info, auto& field) {
    if constexpr (std::is_same_v<std::decay_t<decltype(*field)>, T>) {
      if (info.name == name) field = value;
    }
  });
  return k;
}

// Moves that set knobs together: the row read again each pass (nothing held or staged); for the
// backward the next row ahead with one CTA an SM fewer, which leaves each the registers for it,
// where the plan left it out; the L2 and L1 policies of rows read again, flipped together; and for
// wide forwards a persistent walk that reads w and b from shared memory, at the plan's cluster and
// twice it (where the plan walks so already, at half and twice its size).
void add_joint_moves(const NormSpec& spec, const NormKnobs& chosen, std::vector<NormKnobs>& out) {
  NormKnobs reread;
  reread.register_chunks = 0;
  reread.staged_chunks = 0;
  out.push_back(reread);
  const std::uint32_t ctas = chosen.ctas_per_sm ? *chosen.ctas_per_sm : 1;
  if (is_backward(spec.kind) && !(chosen.prefetch_rows > 0u) && ctas >= 2) {
    NormKnobs ahead;
    ahead.prefetch_rows = 1;
    ahead.ctas_per_sm = ctas - 1;
    out.push_back(ahead);
  }
  NormKnobs policies;
  policies.l2_stream = !(chosen.l2_stream == true);
  policies.l1_rereads = policies.l2_stream;
  out.push_back(policies);
  if (is_backward(spec.kind) || !wide_row(spec)) return;
  const std::uint32_t cluster = chosen.cluster_ctas ? *chosen.cluster_ctas : 1;
  for (std::uint32_t c : {chosen.shared_weights == true ? cluster / 2 : cluster, 2 * cluster}) {
    NormKnobs walk;
    walk.cluster_ctas = c;
    walk.prefetch_rows = 1;
    walk.shared_weights = true;
    out.push_back(walk);
  }
}

}  // namespace

std::vector<NormKnobs> tune_candidates(const NormSpec& spec, const NormKnobs& chosen) {
  std::vector<NormKnobs> out;
  for_each_knob(chosen, [&](const KnobInfo& info, const auto& planned) {
    if (!tried(info, spec)) return;
    using T = typename std::decay_t<decltype(planned)>::value_type;
    for (const T value : moved(info, planned)) out.push_back(with_knob<T>(info.name, value));
  });
  add_joint_moves(spec, chosen, out);
  return out;
}

}  // namespace ptxdsl::kernels
