// What the type system catches does not compile. Each concept below asks whether an expression is
// well-formed; the static_asserts say which uses compile and which do not. (A requires-expression
// must sit in a template to evaluate to false rather than fail to compile, hence the concepts.)
#include <catch2/catch.hpp>

#include <ptxdsl/dsl.hpp>
#include <type_traits>
#include <utility>

using namespace ptxdsl;

namespace {

template <class A, class B>
concept CanAdd = requires(Kernel& k, A a, B b) {
  k.add(a, b);
};
template <class A, class B>
concept CanPlus = requires(A a, B b) {
  a + b;
};
template <class A, class B>
concept CanLess = requires(A a, B b) {
  a < b;
};
template <class A>
concept CanFma = requires(Kernel& k, A a) {
  k.fma(a, a, a);
};
template <class A>
concept CanShl = requires(Kernel& k, A a) {
  k.shl(a, 1u);
};
template <class A>
concept CanNeg = requires(Kernel& k, A a) {
  k.neg(a);
};
template <class A>
concept CanDiv = requires(Kernel& k, A a) {
  k.div(a, a);
};
template <class A>
concept CanRsqrt = requires(Kernel& k, A a) {
  k.rsqrt(a);
};
template <class A>
concept CanLg2 = requires(Kernel& k, A a) {
  k.lg2(a);
};
template <class A>
concept CanEx2 = requires(Kernel& k, A a) {
  k.ex2(a);
};
template <class A>
concept CanShfl = requires(Kernel& k, A a) {
  k.shfl_bfly(a, 1);
};
template <class A>
concept CanMulWide = requires(Kernel& k, A a) {
  k.mul_wide(a, a);
};
template <class A>
concept CanSetp = requires(Kernel& k, A a) {
  k.setp(Cmp::Lt, a, a);
};
template <class To, class From>
concept CanCvt = requires(Kernel& k, Reg<From> a) {
  k.cvt<To>(a);
};
template <class P, class V>
concept CanStore = requires(Kernel& k, P p, V v) {
  k.st(p, v);
};
template <class P, int N>
concept CanLoadVec = requires(Kernel& k, P p) {
  k.template ld_v<N>(p);
};
template <class P, class I>
concept CanIndex = requires(Kernel& k, P p, I i) {
  k.index(p, i);
};
template <class T>
concept CanParam = requires(Kernel& k) {
  k.param<T>("x");
};
template <class P>
concept CanAtomAdd = requires(Kernel& k, P p) {
  k.atom_add(p, 1.0f);
};
template <class T, class V>
concept CanImmediate = requires(V v) {
  Src<T>(v);
};

// Operands of one type: a register of another type, or a literal of the wrong kind, does not fit.
static_assert(CanAdd<Reg<F32>, Reg<F32>>);
static_assert(CanAdd<Reg<F32>, float>);
static_assert(CanAdd<Reg<U32>, unsigned>);
static_assert(!CanAdd<Reg<F32>, Reg<U32>>);
static_assert(!CanAdd<Reg<U32>, Reg<S32>>);
static_assert(!CanAdd<Reg<F32>, Reg<F64>>);
static_assert(!CanAdd<Reg<F16>, Reg<BF16>>);
static_assert(!CanAdd<Reg<U32>, float>);  // no silent truncation of a float literal
static_assert(!CanAdd<PredT, PredT>);
static_assert(!CanAdd<Reg<PredT>, Reg<PredT>>);
static_assert(CanPlus<Reg<F32>, Reg<F32>>);
static_assert(!CanPlus<Reg<F32>, Reg<U32>>);
static_assert(!CanPlus<Reg<U64>, double>);
static_assert(CanLess<Reg<U32>, unsigned>);
static_assert(!CanLess<Reg<U32>, Reg<F32>>);
static_assert(!CanLess<Reg<F16x2>, Reg<F16x2>>);
static_assert(CanImmediate<F32, double>);
static_assert(CanImmediate<F16, float>);
static_assert(CanImmediate<F16x2, unsigned>);  // a pair's raw bits
static_assert(!CanImmediate<F16x2, float>);
static_assert(!CanImmediate<S32, float>);

// Each instruction family takes the types PTX gives it.
static_assert(CanFma<Reg<F32>> && CanFma<Reg<BF16x2>>);
static_assert(!CanFma<Reg<U32>>);
static_assert(CanShl<Reg<U32>> && CanShl<Reg<B64>>);
static_assert(!CanShl<Reg<F32>>);
static_assert(CanNeg<Reg<S32>> && CanNeg<Reg<F32>> && CanNeg<Reg<BF16>>);
static_assert(!CanNeg<Reg<U32>>);  // PTX has no neg.u32
static_assert(CanDiv<Reg<F32>> && CanDiv<Reg<U64>>);
static_assert(!CanDiv<Reg<F16>>);  // nor div.f16
static_assert(CanRsqrt<Reg<F64>>);
static_assert(!CanRsqrt<Reg<F16>>);
static_assert(CanLg2<Reg<F32>>);
static_assert(!CanLg2<Reg<F64>>);
static_assert(CanEx2<Reg<F16x2>>);
static_assert(!CanEx2<Reg<F64>>);
static_assert(CanShfl<Reg<F32>> && CanShfl<Reg<F16x2>>);
static_assert(!CanShfl<Reg<F64>>);  // shfl.sync moves 32 bits
static_assert(!CanShfl<Reg<U16>>);
static_assert(CanMulWide<Reg<U32>> && CanMulWide<Reg<S32>>);
static_assert(!CanMulWide<Reg<U64>>);  // nothing wider than 64 bits
static_assert(CanSetp<Reg<F16>>);
static_assert(!CanSetp<Reg<F16x2>>);  // setp on pairs yields two predicates
static_assert(!CanSetp<Reg<PredT>>);

// cvt: between integers and single floats; predicates and pairs have their own forms.
static_assert(CanCvt<F32, F16> && CanCvt<S32, F32> && CanCvt<BF16, F64>);
static_assert(!CanCvt<PredT, F32>);
static_assert(!CanCvt<F32, PredT>);
static_assert(!CanCvt<F16x2, F32>);  // that is cvt_pack
static_assert(!CanCvt<F32, B32>);    // bits have no numeric value: bitcast

// Memory: the value's type is the pointer's element type; vectors are 2 or 4 wide.
static_assert(CanStore<GlobalPtr<F32>, Reg<F32>>);
static_assert(CanStore<GlobalPtr<F32>, float>);
static_assert(!CanStore<GlobalPtr<F32>, Reg<U32>>);
static_assert(!CanStore<SharedPtr<F16>, Reg<F32>>);
static_assert(!CanStore<GlobalPtr<U32>, float>);
static_assert(CanLoadVec<GlobalPtr<F32>, 4> && CanLoadVec<SharedPtr<F16>, 2>);
static_assert(!CanLoadVec<GlobalPtr<F32>, 3>);
static_assert(!CanLoadVec<GlobalPtr<F32>, 8>);
static_assert(CanIndex<GlobalPtr<F32>, Reg<U32>> && CanIndex<SharedPtr<F32>, Reg<S32>>);
static_assert(!CanIndex<GlobalPtr<F32>, Reg<U64>>);
static_assert(!CanIndex<GlobalPtr<F32>, Reg<F32>>);
static_assert(!CanPlus<GlobalPtr<F32>, Reg<F32>>);
static_assert(CanAtomAdd<GlobalPtr<F32>>);
static_assert(!CanAtomAdd<SharedPtr<F32>>);
static_assert(!CanAtomAdd<GlobalPtr<U32>>);
static_assert(CanParam<F32> && CanParam<BF16>);
static_assert(!CanParam<PredT>);

// 8-bit integers, FP8, FP4 and ue8m0: one byte an element (two in a pair), moved and converted,
// never computed on; one narrow format does not stand in for another.
template <class Pair>
concept CanPackF32 = requires(Kernel& k, Reg<F32> a) {
  k.cvt_pack<Pair>(a, a);
};
template <class P>
concept CanUnpack = requires(Kernel& k, P p) {
  k.cvt_unpack(p);
};
template <class T>
concept CanMov = requires(Kernel& k, Reg<T> a) {
  k.mov(a);
};
static_assert(U8::kBytes == 1 && S8::kBytes == 1 && E4M3::kBytes == 1 && E2M1x2::kBytes == 1);
static_assert(E4M3x2::kBytes == 2 && UE8M0x2::kBytes == 2);
static_assert(reg_class(ScalarType::U8) == RegClass::B16);          // ld.u8 widens into 16 bits
static_assert(reg_class(ScalarType::E2M1x2) == RegClass::B8);       // what cvt.*.e2m1x2 writes
static_assert(!CanAdd<Reg<U8>, Reg<U8>> && !CanAdd<Reg<S8>, int>);  // no add.u8 in PTX
static_assert(!CanFma<Reg<E4M3x2>> && !CanNeg<Reg<E5M2x2>> && !CanShl<Reg<U8>>);
static_assert(!CanSetp<Reg<U8>> && !CanSetp<Reg<E4M3>>);
static_assert(CanCvt<F32, U8> && CanCvt<S8, F32> && CanCvt<S32, S8> && CanCvt<U8, S32>);
static_assert(!CanCvt<F32, E4M3> && !CanCvt<E4M3x2, F32>);  // FP8 goes through cvt_pack
static_assert(CanPackF32<E4M3x2> && CanPackF32<E5M2x2> && CanPackF32<E2M1x2> &&
              CanPackF32<UE8M0x2>);
static_assert(!CanPackF32<E4M3> && !CanPackF32<U8>);
static_assert(CanUnpack<Reg<E4M3x2>> && CanUnpack<Reg<UE8M0x2>>);
static_assert(!CanUnpack<Reg<F16x2>> && !CanUnpack<Reg<E4M3>>);
static_assert(
    std::is_same_v<decltype(std::declval<Kernel&>().cvt_unpack(Reg<UE8M0x2>{})), Reg<BF16x2>>);
static_assert(CanStore<GlobalPtr<U8>, Reg<U8>> && CanStore<GlobalPtr<E4M3x2>, Reg<E4M3x2>>);
static_assert(!CanStore<GlobalPtr<E4M3>, Reg<U8>>);        // a byte is not an e4m3
static_assert(!CanStore<GlobalPtr<E4M3x2>, Reg<E5M2x2>>);  // nor e5m2 an e4m3
static_assert(!CanStore<GlobalPtr<E4M3>, Reg<E4M3x2>>);    // nor a pair one element
static_assert(!CanStore<GlobalPtr<U8>, float>);
static_assert(CanLoadVec<GlobalPtr<U8>, 4> && CanLoadVec<SharedPtr<E4M3x2>, 2>);
static_assert(CanMov<U8> && CanMov<E4M3x2>);
static_assert(CanParam<U8> && CanParam<E4M3>);

}  // namespace

// atom and red take 32/64-bit integers and bits, f32, f64 and the 16-bit float pairs, with a
// value of the pointer's type.
template <class P, class V>
concept CanAtom = requires(Kernel& k, P p, V v) {
  k.atom(AtomOp::Add, p, v);
};
template <class P, class V>
concept CanRed = requires(Kernel& k, P p, V v) {
  k.red(AtomOp::Add, p, v);
};
static_assert(CanAtom<SharedPtr<U32>, Reg<U32>> && CanAtom<GlobalPtr<F16x2>, Reg<F16x2>>);
static_assert(CanRed<GlobalPtr<S64>, Reg<S64>> && CanAtom<SharedPtr<F64>, Reg<F64>>);
static_assert(!CanAtom<GlobalPtr<F16>, Reg<F16>> && !CanAtom<SharedPtr<U16>, Reg<U16>>);
static_assert(!CanAtom<GlobalPtr<U32>, Reg<F32>> && !CanRed<SharedPtr<F32>, Reg<U32>>);
static_assert(!CanAtom<GlobalPtr<U64>, Reg<U32>> && !CanRed<GlobalPtr<BF16>, Reg<BF16>>);

// mma.sync multiplies fragments of one family into the accumulator of their type; .satfinite is
// the 8-bit integers'. ldmatrix and stmatrix move 16-bit elements.
template <class A, class B, class C>
concept CanMma = requires(Kernel& k, MmaA<A> a, MmaB<B> b, MmaAcc<C> c) {
  k.mma(a, b, c);
};
template <class A, class B, class C>
concept CanMmaSatfinite = requires(Kernel& k, MmaA<A> a, MmaB<B> b, MmaAcc<C> c) {
  k.mma_satfinite(a, b, c);
};
template <class T>
concept CanLdmatrix = requires(Kernel& k, SharedPtr<T> p) {
  k.template ldmatrix<4>(p);
};
static_assert(CanMma<F16, F16, F32> && CanMma<BF16, BF16, F32> && CanMma<TF32, TF32, F32>);
static_assert(CanMma<E4M3, E5M2, F32> && CanMma<U8, S8, S32> && CanMmaSatfinite<S8, U8, S32>);
static_assert(!CanMma<F16, BF16, F32> && !CanMma<BF16, F16, F32> && !CanMma<TF32, F16, F32>);
static_assert(!CanMma<E4M3, S8, F32> && !CanMma<S8, S8, F32> && !CanMma<F16, F16, S32>);
static_assert(!CanMmaSatfinite<F16, F16, F32> && !CanMmaSatfinite<E4M3, E4M3, F32>);
static_assert(CanLdmatrix<F16> && CanLdmatrix<BF16> && CanLdmatrix<B16>);
static_assert(!CanLdmatrix<F32> && !CanLdmatrix<U8> && !CanLdmatrix<B32>);

TEST_CASE("type misuse does not compile (checked by static_assert)", "[dsl][types]") {
  // The checks above ran when this file compiled; this case records that they exist.
  SUCCEED("compile-time checks passed");
}
