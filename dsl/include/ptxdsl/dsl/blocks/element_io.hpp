#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "ptxdsl/dsl/kernel.hpp"

// Element I/O: data of an element type chosen at build time (f32, f16, bf16, and the byte types
// u8, s8, e4m3, e5m2) in memory, moved with vector accesses of at most 16 bytes and converted to
// and from f32 registers. Arithmetic happens in f32 whatever the storage type (docs/dsl.md,
// "Building blocks").
namespace ptxdsl {

// f32, f16, bf16, u8, s8, e4m3 or e5m2, the element types these blocks store; throws
// ptxdsl::Error naming `what` and the type otherwise. (e2m1x2 and ue8m0 hold no one f32 value an
// element: they have their own conversions.)
void check_element_type(ScalarType t, std::string_view what);

// An address of elements of `dtype` in state space S. The register base is viewed as b32 words;
// `+ n` moves by n elements of the dtype at build time and emits nothing.
template <Space S>
struct DPtr {
  Ptr<S, B32> p;
  ScalarType dtype = ScalarType::F32;
  DPtr operator+(std::int64_t elements) const {
    return {Ptr<S, B32>{p.base, p.offset + elements * size_bytes(dtype)}, dtype};
  }
};
using GlobalDPtr = DPtr<Space::Global>;
using SharedDPtr = DPtr<Space::Shared>;

// `.param .u64 name`, recorded in the contract as a pointer to f32, f16 or bf16.
GlobalDPtr param_dptr(Kernel& k, std::string_view name, ScalarType dtype);
// p + row * stride elements (64-bit product).
GlobalDPtr row_of(Kernel& k, GlobalDPtr p, Reg<U32> row, Src<U32> stride);
// p + index elements.
GlobalDPtr at(Kernel& k, GlobalDPtr p, Reg<U32> index);
SharedDPtr at(Kernel& k, SharedDPtr p, Reg<U32> index);

// f32 values in registers: what loads decode to and stores encode from.
using Values = std::vector<Reg<F32>>;

// Elements as they sit in memory, in registers: f32 values, pairs of 16-bit values in b32 words
// (lower address in the low half), or one lone 16-bit value. Byte types: four bytes in each b32
// word, two in a b16 half (n = 2), or one lone byte.
struct Raw {
  ScalarType dtype = ScalarType::F32;
  std::vector<Reg<F32>> f32;
  std::vector<Reg<B32>> pairs;
  std::vector<Reg<B16>> halves;
  std::vector<Reg<B8>> bytes;
};

// Loads `n` consecutive elements (n a power of two, the address aligned to n elements, or to
// 16 bytes when larger) with vector accesses of at most 16 bytes. With `pred`, a load happens only
// where it holds and yields zeros elsewhere. Shared memory ignores `h`.
template <Space S>
Raw load_raw(Kernel& k, DPtr<S> p, std::uint32_t n, std::optional<Pred> pred = std::nullopt,
             MemHints h = kNoHints);
// Stores what `load_raw` or `encode` produced, at p, where `pred` holds.
template <Space S>
void store_raw(Kernel& k, DPtr<S> p, const Raw& r, std::optional<Pred> pred = std::nullopt,
               MemHints h = kNoHints);

// Overwrites `to`'s registers with `from`'s (same dtype and shape): a loop-carried copy.
void assign(Kernel& k, const Raw& to, const Raw& from);
// n zero elements of d.
Raw zero_raw(Kernel& k, ScalarType d, std::uint32_t n);
// To f32: f16 by cvt.f32.f16; bf16 by moving the bits into the high half (exact, and on sm_80,
// where cvt.f32.bf16 does not exist).
Values decode(Kernel& k, const Raw& r);
// From f32, rounding to nearest even (cvt.rn.f16x2.f32 / cvt.rn.bf16x2.f32 for pairs; FP8 by
// cvt.rn.satfinite.e4m3x2.f32, saturating; u8/s8 by cvt.rni.sat, saturating).
Raw encode(Kernel& k, std::span<const Reg<F32>> values, ScalarType d);

// load_raw then decode; encode then store_raw.
template <Space S>
Values load_values(Kernel& k, DPtr<S> p, std::uint32_t n, std::optional<Pred> pred = std::nullopt,
                   MemHints h = kNoHints);
template <Space S>
void store_values(Kernel& k, DPtr<S> p, std::span<const Reg<F32>> values,
                  std::optional<Pred> pred = std::nullopt, MemHints h = kNoHints);

}  // namespace ptxdsl
