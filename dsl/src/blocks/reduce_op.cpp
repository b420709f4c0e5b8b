#include "ptxdsl/dsl/blocks/reduce_op.hpp"

#include <fmt/format.h>

#include <limits>
#include <utility>

#include "ptxdsl/dsl/reduce.hpp"

namespace ptxdsl {

Reduction::Reduction(std::string name, Fn combine, float identity)
    : name_(std::move(name)), combine_(std::move(combine)), identity_(identity) {}

Reduction Reduction::sum() {
  return {"sum", [](Kernel& k, Reg<F32> a, Reg<F32> b) { return k.add(a, b); }, 0.0f};
}

Reduction Reduction::max() {
  return {"max", [](Kernel& k, Reg<F32> a, Reg<F32> b) { return k.max(a, b); },
          -std::numeric_limits<float>::infinity()};
}

Reduction Reduction::min() {
  return {"min", [](Kernel& k, Reg<F32> a, Reg<F32> b) { return k.min(a, b); },
          std::numeric_limits<float>::infinity()};
}

Reduction Reduction::absmax() {
  return {"absmax", [](Kernel& k, Reg<F32> a, Reg<F32> b) { return k.max(k.abs(a), k.abs(b)); },
          0.0f};
}

Reduction Reduction::of(std::string name, Fn combine, float identity) {
  if (!combine) throw Error(fmt::format("reduction '{}' has no combine function", name));
  return {std::move(name), std::move(combine), identity};
}

Reg<F32> tree_reduce(Kernel& k, std::span<const Reg<F32>> values, const Reduction& op) {
  if (values.empty()) {
    throw Error(fmt::format("kernel '{}', tree_reduce ({}): no values", k.name(), op.name()));
  }
  std::vector<Reg<F32>> v(values.begin(), values.end());
  while (v.size() > 1) {
    std::vector<Reg<F32>> next;
    for (std::size_t i = 0; i + 1 < v.size(); i += 2) next.push_back(op(k, v[i], v[i + 1]));
    if (v.size() % 2) next.push_back(v.back());
    v = std::move(next);
  }
  return v[0];
}

namespace {

// Each value by its own operation, as a tuple combine, with the operations' identities.
struct PerValue {
  Combine combine;
  std::vector<float> identity;
};
PerValue per_value(Kernel& k, std::string_view what, std::size_t values,
                   std::span<const Reduction> ops) {
  if (ops.size() != values) {
    throw Error(fmt::format("kernel '{}', {}: {} operations for {} values", k.name(), what,
                            ops.size(), values));
  }
  PerValue p;
  for (const Reduction& op : ops) p.identity.push_back(op.identity());
  p.combine = [&k, ops](std::span<const Reg<F32>> a, std::span<const Reg<F32>> b) {
    std::vector<Reg<F32>> out;
    for (std::size_t i = 0; i < a.size(); ++i) out.push_back(ops[i](k, a[i], b[i]));
    return out;
  };
  return p;
}

}  // namespace

std::vector<Reg<F32>> group_reduce(Kernel& k, std::span<const Reg<F32>> values,
                                   std::span<const Reduction> ops, std::uint32_t group_threads,
                                   std::uint32_t block_threads, Reg<U32> tid,
                                   SharedPtr<F32> scratch) {
  const PerValue p = per_value(k, "group_reduce", values.size(), ops);
  return group_reduce(k, values, p.combine, p.identity, group_threads, block_threads, tid, scratch);
}

std::vector<Reg<F32>> cluster_reduce(Kernel& k, std::span<const Reg<F32>> values,
                                     const Reduction& op, std::uint32_t block_threads, Reg<U32> tid,
                                     SharedPtr<F32> scratch, std::uint32_t cluster_ctas,
                                     SharedPtr<F32> slots) {
  const std::vector<Reduction> ops(values.size(), op);
  const PerValue p = per_value(k, "cluster_reduce", values.size(), ops);
  return cluster_reduce(k, values, p.combine, p.identity, block_threads, tid, scratch, cluster_ctas,
                        slots);
}

std::vector<Reg<F32>> cluster_reduce(Kernel& k, std::span<const Reg<F32>> values,
                                     const Reduction& op, std::uint32_t block_threads, Reg<U32> tid,
                                     SharedPtr<F32> scratch, ClusterSlots& slots) {
  const std::vector<Reduction> ops(values.size(), op);
  const PerValue p = per_value(k, "cluster_reduce", values.size(), ops);
  return slots.reduce(k, values, p.combine, p.identity, block_threads, tid, scratch);
}

std::vector<Reg<F32>> group_reduce(Kernel& k, std::span<const Reg<F32>> values, const Reduction& op,
                                   std::uint32_t group_threads, std::uint32_t block_threads,
                                   Reg<U32> tid, SharedPtr<F32> scratch) {
  const std::vector<Reduction> ops(values.size(), op);
  return group_reduce(k, values, ops, group_threads, block_threads, tid, scratch);
}

Reducer::Reducer(Kernel& k, std::uint32_t group_threads, std::uint32_t block_threads, Reg<U32> tid,
                 std::uint32_t max_values, std::string_view scratch_name)
    : group_threads_(group_threads),
      block_threads_(block_threads),
      tid_(tid),
      max_values_(max_values) {
  if (max_values == 0) {
    throw Error(
        fmt::format("kernel '{}', Reducer: max_values must be at least 1, got 0", k.name()));
  }
  // group_reduce checks the group's shape, and emits nothing for no values.
  group_reduce(k, std::span<const Reg<F32>>{}, Combine{}, std::span<const float>{}, group_threads,
               block_threads, tid, SharedPtr<F32>{});
  if (group_threads > 32) {
    buffer_floats_ = group_reduce_scratch_floats(block_threads, max_values);
    scratch_ = k.shared_array<F32>(scratch_name, 2 * buffer_floats_);
  }
}

Reducer Reducer::warp(Kernel& k, std::uint32_t width) {
  return Reducer(k, width, width, Reg<U32>{}, 4);
}

Reducer Reducer::block(Kernel& k, std::uint32_t block_threads, Reg<U32> tid,
                       std::uint32_t max_values, std::string_view scratch_name) {
  return Reducer(k, block_threads, block_threads, tid, max_values, scratch_name);
}

Reg<F32> Reducer::reduce(Kernel& k, Reg<F32> value, const Reduction& op) {
  return reduce(k, {value}, op)[0];
}

std::vector<Reg<F32>> Reducer::reduce(Kernel& k, std::initializer_list<Reg<F32>> values,
                                      const Reduction& op) {
  const std::vector<Reduction> ops(values.size(), op);
  return reduce(k, std::span<const Reg<F32>>(values.begin(), values.size()), ops);
}

std::vector<Reg<F32>> Reducer::reduce(Kernel& k, std::initializer_list<Reg<F32>> values,
                                      std::initializer_list<Reduction> ops) {
  return reduce(k, std::span<const Reg<F32>>(values.begin(), values.size()),
                std::span<const Reduction>(ops.begin(), ops.size()));
}

std::vector<Reg<F32>> Reducer::reduce(Kernel& k, std::span<const Reg<F32>> values,
                                      std::span<const Reduction> ops) {
  if (values.size() > max_values_) {
    throw Error(
        fmt::format("kernel '{}', Reducer::reduce: {} values, but the reducer was made "
                    "for at most {}",
                    k.name(), values.size(), max_values_));
  }
  const SharedPtr<F32> buffer =
      scratch_ + static_cast<std::int64_t>((calls_++ % 2) * buffer_floats_);
  return group_reduce(k, values, ops, group_threads_, block_threads_, tid_, buffer);
}

}  // namespace ptxdsl
