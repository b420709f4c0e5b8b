#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <variant>

#include "ptxdsl/dsl/ir.hpp"
#include "ptxdsl/dsl/reg.hpp"
#include "ptxdsl/dsl/types.hpp"

// The register fragments of one warp's tensor-core product mma.sync (D = A·B + C, A 16×K row-major,
// B K×8 column-major, C and D 16×8), typed by their element types so that a product of
// mismatched fragments does not compile. Which element of the matrix each lane's register holds
// is PTX's ("Matrix Fragments for mma.m16n8k16" and its siblings); docs/dsl.md draws it.
namespace ptxdsl {

// tf32: an f32 bit pattern of which the tensor core reads the sign, the exponent and the top 10
// mantissa bits. A tag of mma fragments only: no other instruction takes it.
struct TF32 {};

// What mma.sync multiplies: an element type, the K its shape takes, the accumulator it sums into,
// and the family of types it may be paired with (A and B may differ within FP8 and within the
// 8-bit integers only).
template <class E>
struct MmaElement;
template <>
struct MmaElement<F16> {
  static constexpr MmaInput kInput = MmaInput::F16;
  static constexpr int kK = 16;
  using Acc = F32;
};
template <>
struct MmaElement<BF16> {
  static constexpr MmaInput kInput = MmaInput::BF16;
  static constexpr int kK = 16;
  using Acc = F32;
};
template <>
struct MmaElement<TF32> {
  static constexpr MmaInput kInput = MmaInput::TF32;
  static constexpr int kK = 8;
  using Acc = F32;
};
template <>
struct MmaElement<E4M3> {
  static constexpr MmaInput kInput = MmaInput::E4M3;
  static constexpr int kK = 32;
  using Acc = F32;
};
template <>
struct MmaElement<E5M2> {
  static constexpr MmaInput kInput = MmaInput::E5M2;
  static constexpr int kK = 32;
  using Acc = F32;
};
template <>
struct MmaElement<S8> {
  static constexpr MmaInput kInput = MmaInput::S8;
  static constexpr int kK = 32;
  using Acc = S32;
};
template <>
struct MmaElement<U8> {
  static constexpr MmaInput kInput = MmaInput::U8;
  static constexpr int kK = 32;
  using Acc = S32;
};

template <class E>
concept MmaInputTag = requires {
  { MmaElement<E>::kInput } -> std::convertible_to<MmaInput>;
};
// The accumulator type of a product of E: f32, or s32 for the 8-bit integers.
template <MmaInputTag E>
using MmaAccOf = typename MmaElement<E>::Acc;
// The 8-bit integer inputs: their products take `.satfinite`.
template <class E>
concept MmaIntTag = MmaInputTag<E> && std::same_as<MmaAccOf<E>, S32>;
// A and B that one mma.sync multiplies: the same type, or both FP8, or both 8-bit integers.
template <class A, class B>
concept MmaPair = MmaInputTag<A> && MmaInputTag<B> &&
    (std::same_as<A, B> || (MmaElement<A>::kK == 32 && MmaElement<B>::kK == 32 &&
                            std::same_as<MmaAccOf<A>, MmaAccOf<B>>));

// A: 16×K, four .b32 registers a lane (two 16-bit, one tf32 or four 8-bit elements each).
template <MmaInputTag E>
struct MmaA {
  Vec<B32, 4> regs;
};
// B: K×8, two .b32 registers a lane.
template <MmaInputTag E>
struct MmaB {
  Vec<B32, 2> regs;
};
// C and D: 16×8 of f32 or s32, four registers a lane.
template <class T>
concept MmaAccTag = std::same_as<T, F32> || std::same_as<T, S32>;
template <MmaAccTag T>
struct MmaAcc {
  Vec<T, 4> regs;
};

// ---- a warpgroup's products, wgmma.mma_async (sm_90a) ----

// What wgmma.mma_async multiplies: f16, bf16 (K 16), tf32 (K 8), e4m3/e5m2 (K 32), into f32.
template <class E>
concept WgmmaInputTag = MmaInputTag<E> && std::same_as<MmaAccOf<E>, F32>;
template <class A, class B>
concept WgmmaPair = WgmmaInputTag<A> && WgmmaInputTag<B> && MmaPair<A, B>;
// The N of a shape m64nNkK: a multiple of 8 in [8, 256].
template <int N>
concept WgmmaN = N >= 8 && N <= 256 && N % 8 == 0;

// The accumulator D (64×N f32) of a warpgroup: N/2 registers a thread. Thread t of the
// warpgroup holds, in register i, row 16·(t/32) + (t%32)/4 + 8·((i/2)%2), column
// 2·(t%4) + 8·(i/4) + i%2 (the PTX ISA's "WGMMA .m64nNk16 register fragment layout for
// accumulator matrix D").
template <int N>
requires WgmmaN<N>
struct WgmmaAcc {
  static constexpr int kN = N;
  std::array<Reg<F32>, N / 2> regs;
};

// wgmma.mma_async's operands beside its matrices: whether D is added to (scale-d: always, never,
// or where a predicate holds: the first product of a loop writes D without reading it), A or B
// negated (imm-scale-a/b = -1), and A or B read MN-major from shared memory (imm-trans-a/b = 1;
// f16 and bf16 only, A only from a descriptor).
struct WgmmaOptions {
  std::variant<bool, Reg<PredT>> accumulate = true;
  bool negate_a = false;
  bool negate_b = false;
  bool transpose_a = false;
  bool transpose_b = false;
};

// ---- shared-memory tiles as wgmma reads them (sm_90a) ----

// The swizzle of a shared-memory tile (32, 64 or 128 bytes): the 16-byte chunk of a byte (1, 2 or
// 3 address bits from bit 4) is XORed with the 128-byte line it lies in (as many bits from bit 7),
// so that the lines of one column of chunks fall in different banks.
enum class Swizzle : std::uint8_t { None, B32, B64, B128 };

// Where a tile swizzled by `s` keeps the byte an unswizzled one keeps at `address` (the tile's
// base aligned to the swizzle's 256-, 512- or 1024-byte atom).
constexpr std::uint32_t swizzled_address(Swizzle s, std::uint32_t address) {
  const std::uint32_t bits = s == Swizzle::B32    ? 1
                             : s == Swizzle::B64  ? 2
                             : s == Swizzle::B128 ? 3
                                                  : 0;
  const std::uint32_t chunk = ((1u << bits) - 1u) << 4;
  return address ^ ((address >> 3) & chunk);
}

// A tile's layout as a matrix descriptor states it: the byte offsets between the core matrices
// (8 rows of 16 bytes) along the leading and the strided dimension, and the swizzle.
struct MatrixLayout {
  std::uint32_t leading_bytes = 0;
  std::uint32_t stride_bytes = 0;
  Swizzle swizzle = Swizzle::None;
};

// A matrix descriptor in a register, made by Kernel::matrix_descriptor: what wgmma takes for a
// tile in shared memory, never bits packed by hand.
struct MatrixDescriptor {
  Reg<U64> bits;
};

// The 64-bit shared-memory matrix descriptor of wgmma (the PTX ISA's "Matrix Descriptor
// Format"): the start address >> 4 in bits 0-13, the leading byte offset >> 4 in bits 16-29, the
// stride byte offset >> 4 in bits 32-45, the swizzle in bits 62-63 (128-byte 1, 64-byte 2,
// 32-byte 3), base offset 0. Throws naming a value that is not a multiple of 16 below 2^18.
std::uint64_t matrix_descriptor(std::uint32_t shared_address, const MatrixLayout& layout);

}  // namespace ptxdsl
