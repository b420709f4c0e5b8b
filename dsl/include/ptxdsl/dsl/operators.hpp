#pragma once

#include <type_traits>

#include "ptxdsl/dsl/kernel.hpp"

// Operators for the obvious cases; each emits exactly one instruction into the register's kernel.
namespace ptxdsl {
namespace detail {

template <TypeTag T>
Kernel& owner(Reg<T> r) {
  if (r.kernel == nullptr) throw Error("operator applied to a register that was never created");
  return *r.kernel;
}

}  // namespace detail

template <ArithTag T>
Reg<T> operator+(Reg<T> a, std::type_identity_t<Src<T>> b) {
  return detail::owner(a).add(a, b);
}
template <ArithTag T>
Reg<T> operator-(Reg<T> a, std::type_identity_t<Src<T>> b) {
  return detail::owner(a).sub(a, b);
}
template <ArithTag T>
Reg<T> operator*(Reg<T> a, std::type_identity_t<Src<T>> b) {
  return detail::owner(a).mul(a, b);
}
template <LogicTag T>
Reg<T> operator&(Reg<T> a, std::type_identity_t<Src<T>> b) {
  return detail::owner(a).and_(a, b);
}
template <LogicTag T>
Reg<T> operator|(Reg<T> a, std::type_identity_t<Src<T>> b) {
  return detail::owner(a).or_(a, b);
}
template <LogicTag T>
Reg<T> operator^(Reg<T> a, std::type_identity_t<Src<T>> b) {
  return detail::owner(a).xor_(a, b);
}
template <LogicTag T>
Reg<T> operator<<(Reg<T> a, Src<U32> amount) {
  return detail::owner(a).shl(a, amount);
}
template <LogicTag T>
Reg<T> operator>>(Reg<T> a, Src<U32> amount) {
  return detail::owner(a).shr(a, amount);
}

#define PTXDSL_COMPARE(op, cmp)                                         \
  template <ArithTag T>                                                 \
  Pred operator op(Reg<T> a, std::type_identity_t<Src<T>> b) {          \
    return detail::owner(a).setp(Cmp::cmp, a, b);                       \
  }
PTXDSL_COMPARE(<, Lt)
PTXDSL_COMPARE(<=, Le)
PTXDSL_COMPARE(>, Gt)
PTXDSL_COMPARE(>=, Ge)
PTXDSL_COMPARE(==, Eq)
PTXDSL_COMPARE(!=, Ne)
#undef PTXDSL_COMPARE

// `p + i`: a run-time element index, one `mad.wide` (global) or `mad.lo` (shared).
template <Space S, MemTag T, TypeTag I>
  requires(I::kType == ScalarType::U32 || I::kType == ScalarType::S32)
Ptr<S, T> operator+(Ptr<S, T> p, Reg<I> i) {
  return detail::owner(i).index(p, i);
}

}  // namespace ptxdsl
