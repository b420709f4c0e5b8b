#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include "ptxdsl/dsl/reg.hpp"

namespace ptxdsl {

// An address in a state space: a base register plus a constant byte offset that folds into
// `[%rd1+16]`. Global addresses are 64-bit; shared ones (of the CTA or of the cluster) 32-bit. `p +
// 4` moves by 4 elements of T at build time and emits nothing.
template <Space S, MemTag T>
struct Ptr {
  using Type = T;
  using Base = Reg<std::conditional_t<S == Space::Shared || S == Space::SharedCluster, U32, U64>>;
  static constexpr Space kSpace = S;

  Base base{};
  std::int64_t offset = 0;  // bytes

  Ptr operator+(std::int64_t elements) const { return {base, offset + elements * T::kBytes}; }
  Ptr operator-(std::int64_t elements) const { return {base, offset - elements * T::kBytes}; }
  // The same address seen as another element type (f16 rows loaded as b32 pairs, say).
  template <MemTag U>
  Ptr<S, U> as() const {
    return {base, offset};
  }
};
template <MemTag T>
using GlobalPtr = Ptr<Space::Global, T>;
template <MemTag T>
using SharedPtr = Ptr<Space::Shared, T>;
// Distributed shared memory: an address in some CTA of the cluster (`Kernel::mapa`), sm_90.
template <MemTag T>
using ClusterPtr = Ptr<Space::SharedCluster, T>;

// Cache hints of ld/st, named as PTX names them.
struct MemHints {
  bool nc = false;                     // ld.global.nc: read-only path
  CacheOp cache = CacheOp::None;       // .ca .cg .cs .lu .cv / .wb .cg .cs .wt
  Eviction eviction = Eviction::None;  // .L1::no_allocate, .L1::evict_last, ...
  // Global accesses: .L2::cache_hint with this policy (Kernel::create_policy), how L2 keeps the
  // lines the access touches.
  std::optional<Reg<B64>> l2_policy{};
  // Global loads: .L2::64B, .L2::128B or .L2::256B, the bytes L2 fetches around the access (0:
  // the default).
  std::uint16_t l2_prefetch = 0;
};
inline constexpr MemHints kNoHints{};

// The memory order of an atom or red: `.sem` (None prints none: relaxed) and `.scope` (none:
// .gpu). `atom.acq_rel.cta.shared.add.u32` is {MemSem::AcqRel, Scope::Cta}.
struct AtomOrder {
  MemSem sem = MemSem::None;
  std::optional<Scope> scope{};
};
inline constexpr MemHints kNc{.nc = true};
inline constexpr MemHints kNcNoAllocate{.nc = true, .eviction = Eviction::L1NoAllocate};
inline constexpr MemHints kStreaming{.cache = CacheOp::Cs};
inline constexpr MemHints kNoAllocate{.eviction = Eviction::L1NoAllocate};
inline constexpr MemHints kEvictLast{.eviction = Eviction::L1EvictLast};

// Rounding and precision of the floating-point forms that need a choice.
struct MathMode {
  Precision precision = Precision::Exact;
  Rounding rounding = Rounding::None;
  bool ftz = false;
  bool sat = false;
};
inline constexpr MathMode kDefault{};
inline constexpr MathMode kRn{Precision::Exact, Rounding::Rn};
inline constexpr MathMode kRz{Precision::Exact, Rounding::Rz};
inline constexpr MathMode kRm{Precision::Exact, Rounding::Rm};
inline constexpr MathMode kRp{Precision::Exact, Rounding::Rp};
inline constexpr MathMode kApprox{Precision::Approx};
inline constexpr MathMode kApproxFtz{Precision::Approx, Rounding::None, true};
inline constexpr MathMode kFull{Precision::Full};

}  // namespace ptxdsl
