#pragma once

#include <array>
#include <bit>
#include <concepts>
#include <cstdint>
#include <type_traits>

#include "ptxdsl/dsl/half.hpp"
#include "ptxdsl/dsl/ir.hpp"
#include "ptxdsl/dsl/types.hpp"

namespace ptxdsl {

class Kernel;

// A typed virtual register: a small value handle owned by one kernel. ptxas allocates the real
// ones. `kernel_id` is the kernel's `Kernel::id()`, which, unlike its address, no later kernel
// reuses: a register that outlived its kernel is refused, not numbered into another one.
template <TypeTag T>
struct Reg {
  using Type = T;
  Kernel* kernel = nullptr;
  RegId id{};
  std::uint64_t kernel_id = 0;
  bool valid() const { return kernel != nullptr; }
};
using Pred = Reg<PredT>;

// A build-time unrolled group of registers, as a vector load or store moves them.
template <TypeTag T, int N>
using Vec = std::array<Reg<T>, N>;

// What an immediate of type T is written as in C++.
template <TypeTag T>
using HostValue = std::conditional_t<
    T::kType == ScalarType::F32, float,
    std::conditional_t<
        T::kType == ScalarType::F64, double,
        std::conditional_t<
            is_signed_int(T::kType), std::conditional_t<T::kBytes == 8, std::int64_t, std::int32_t>,
            std::conditional_t<T::kBytes == 8, std::uint64_t,
                               std::conditional_t<T::kBytes == 4, std::uint32_t, std::uint16_t>>>>>;

// The bit pattern of an immediate of type T; floats are exact (`0f3F800000`).
template <TypeTag T, class V>
std::uint64_t immediate_bits(V value) {
  constexpr ScalarType t = T::kType;
  if constexpr (t == ScalarType::F32) {
    return std::bit_cast<std::uint32_t>(static_cast<float>(value));
  } else if constexpr (t == ScalarType::F64) {
    return std::bit_cast<std::uint64_t>(static_cast<double>(value));
  } else if constexpr (t == ScalarType::F16) {
    return f32_to_f16_bits(static_cast<float>(value));
  } else if constexpr (t == ScalarType::BF16) {
    return f32_to_bf16_bits(static_cast<float>(value));
  } else if constexpr (T::kBytes == 8) {
    return static_cast<std::uint64_t>(static_cast<HostValue<T>>(value));
  } else {
    using Unsigned = std::make_unsigned_t<HostValue<T>>;
    return static_cast<Unsigned>(static_cast<HostValue<T>>(value));
  }
}

// Types a C++ floating-point literal converts to (single floats, not the f16x2/bf16x2 pairs).
constexpr bool takes_float_literal(ScalarType t) {
  return t == ScalarType::F16 || t == ScalarType::BF16 || t == ScalarType::F32 ||
         t == ScalarType::F64;
}

// A source operand of type T: a register of T, or an immediate written as a C++ number.
template <TypeTag T>
struct Src {
  Operand op;
  Kernel* kernel = nullptr;
  std::uint64_t kernel_id = 0;

  // NOLINTNEXTLINE(google-explicit-constructor): reads like PTX
  Src(Reg<T> r) : kernel(r.kernel), kernel_id(r.kernel_id) {
    op.kind = Operand::Kind::Reg;
    op.reg = r.id;
  }
  // Integer registers take integer literals only (`k.add(u, 1.5f)` does not compile); the paired
  // 16-bit floats take their raw bits.
  template <class V>
  requires std::is_integral_v<V> ||(std::is_floating_point_v<V>&& takes_float_literal(T::kType))
      Src(V value) {  // NOLINT(google-explicit-constructor)
    op.kind = Operand::Kind::Imm;
    op.imm_type = T::kType;
    op.imm_bits = immediate_bits<T>(value);
  }
};

// A source parameter whose type follows from the other operands (`k.add(x, 1.0f)`).
template <TypeTag T>
using SrcOf = typename std::type_identity<Src<T>>::type;

// The wider integer type mul.wide / mad.wide produce.
template <TypeTag T>
struct Wide;
template <>
struct Wide<U16> {
  using type = U32;
};
template <>
struct Wide<U32> {
  using type = U64;
};
template <>
struct Wide<S32> {
  using type = S64;
};
template <TypeTag T>
using WideOf = typename Wide<T>::type;

}  // namespace ptxdsl
