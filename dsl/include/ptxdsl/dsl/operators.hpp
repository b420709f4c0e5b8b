#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include "ptxdsl/dsl/kernel.hpp"

// Operators for the obvious cases; each emits exactly one instruction into the operands' kernel.
namespace ptxdsl {
namespace detail {

// The kernel an operator emits into: the left operand's, else the right one's, so that a default
// `Reg` (or one whose kernel was destroyed) on either side is reported by that kernel, naming the
// instruction.
inline Kernel& owner(Kernel* left, std::uint64_t left_id, Kernel* right, std::uint64_t right_id,
                     std::string_view op) {
  if (Kernel* k = Kernel::live(left, left_id)) return *k;
  if (Kernel* k = Kernel::live(right, right_id)) return *k;
  if (left != nullptr || right != nullptr) {
    throw Error("operator " + std::string(op) +
                ": its registers belong to another kernel, destroyed since (a Reg must not "
                "outlive its Module)");
  }
  throw Error("operator " + std::string(op) +
              ": no operand is a register of a kernel (default-constructed Reg)");
}
template <TypeTag T, class B>
Kernel& owner(Reg<T> a, const B& b, std::string_view op) {
  return owner(a.kernel, a.kernel_id, b.kernel, b.kernel_id, op);
}

}  // namespace detail

template <ArithTag T>
Reg<T> operator+(Reg<T> a, std::type_identity_t<Src<T>> b) {
  return detail::owner(a, b, "+").add(a, b);
}
template <ArithTag T>
Reg<T> operator-(Reg<T> a, std::type_identity_t<Src<T>> b) {
  return detail::owner(a, b, "-").sub(a, b);
}
template <ArithTag T>
Reg<T> operator*(Reg<T> a, std::type_identity_t<Src<T>> b) {
  return detail::owner(a, b, "*").mul(a, b);
}
template <LogicTag T>
Reg<T> operator&(Reg<T> a, std::type_identity_t<Src<T>> b) {
  return detail::owner(a, b, "&").and_(a, b);
}
template <LogicTag T>
Reg<T> operator|(Reg<T> a, std::type_identity_t<Src<T>> b) {
  return detail::owner(a, b, "|").or_(a, b);
}
template <LogicTag T>
Reg<T> operator^(Reg<T> a, std::type_identity_t<Src<T>> b) {
  return detail::owner(a, b, "^").xor_(a, b);
}
template <LogicTag T>
Reg<T> operator<<(Reg<T> a, Src<U32> amount) {
  return detail::owner(a, amount, "<<").shl(a, amount);
}
template <LogicTag T>
Reg<T> operator>>(Reg<T> a, Src<U32> amount) {
  return detail::owner(a, amount, ">>").shr(a, amount);
}

#define PTXDSL_COMPARE(op, cmp)                                                       \
  template <ArithTag T>                                                               \
  requires CompareTag<T> Pred operator op(Reg<T> a, std::type_identity_t<Src<T>> b) { \
    return detail::owner(a, b, #op).setp(Cmp::cmp, a, b);                             \
  }
PTXDSL_COMPARE(<, Lt)
PTXDSL_COMPARE(<=, Le)
PTXDSL_COMPARE(>, Gt)
PTXDSL_COMPARE(>=, Ge)
PTXDSL_COMPARE(==, Eq)
PTXDSL_COMPARE(!=, Ne)
#undef PTXDSL_COMPARE

// Predicates: `p && q` (and.pred), `p || q` (or.pred), `!p` (not.pred). Both sides are always
// built and run: there is no short circuit.
inline Pred operator&&(Pred a, Pred b) {
  return detail::owner(a, b, "&&").and_(a, b);
}
inline Pred operator||(Pred a, Pred b) {
  return detail::owner(a, b, "||").or_(a, b);
}
inline Pred operator!(Pred a) {
  return detail::owner(a.kernel, a.kernel_id, nullptr, 0, "!").not_(a);
}

// `p + i`: a run-time element index, one `mad.wide` (global) or `mad.lo` (shared).
template <Space S, MemTag T, TypeTag I>
requires(I::kType == ScalarType::U32 || I::kType == ScalarType::S32) Ptr<S, T>
operator+(Ptr<S, T> p, Reg<I> i) {
  return detail::owner(i.kernel, i.kernel_id, p.base.kernel, p.base.kernel_id, "+").index(p, i);
}

}  // namespace ptxdsl
