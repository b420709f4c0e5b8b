#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ptxdsl/dsl/contract.hpp"
#include "ptxdsl/dsl/error.hpp"
#include "ptxdsl/dsl/ir.hpp"
#include "ptxdsl/dsl/memory.hpp"
#include "ptxdsl/dsl/mma.hpp"
#include "ptxdsl/dsl/reg.hpp"
#include "ptxdsl/dsl/tensor_map.hpp"

namespace ptxdsl {

class Module;

// Every lane of a warp: the member mask of a warp collective that the whole warp executes.
inline constexpr std::uint32_t kAllLanes = 0xFFFFFFFFu;
// The most threads a CTA has on any target.
inline constexpr std::uint32_t kMaxBlockThreads = 1024;

// A branch target. Made by `Kernel::label`, placed once by `Kernel::bind`.
struct Label {
  Kernel* kernel = nullptr;
  std::uint32_t id = 0;
  std::uint64_t kernel_id = 0;  // the kernel's `Kernel::id()`, as in `Reg`
};

struct SharedDecl {
  std::string name;  // as declared in the module
  std::uint32_t bytes = 0;
  std::uint32_t align = 16;
  bool dynamic = false;  // `.extern .shared ... name[]`
};

// One `.entry`: the builder of its body. Instructions are named after PTX; each call appends
// exactly the instruction(s) it says, in order. Misuse that types cannot catch throws
// `ptxdsl::Error` naming the kernel, the instruction and the problem.
class Kernel {
 public:
  Kernel(Module& module, std::string name);
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;
  ~Kernel();

  const std::string& name() const { return name_; }
  Module& module() const { return *module_; }
  // Unique in the process and never reused (1, 2, ...), unlike the kernel's address.
  std::uint64_t id() const { return id_; }
  // `k` if it is a live kernel whose id is `id`, else nullptr: for a handle (`Reg`, `Label`) that
  // may have outlived its kernel, whose pointer must not be followed then.
  static Kernel* live(Kernel* k, std::uint64_t id);

  // ---- registers, parameters, special registers ----
  template <TypeTag T>
  Reg<T> reg(std::string_view debug_name = {}) {
    return Reg<T>{this, new_reg(reg_class(T::kType), debug_name), id_};
  }
  template <MemTag T>
  Reg<T> param(std::string_view name) {
    Reg<T> r = reg<T>(name);
    Instr in = make(Op::Ld, T::kType);
    in.space = Space::Param;
    in.ops = {def(r), symbol_address(declare_param(name, T::kType, false, T::kType))};
    commit(std::move(in));
    return r;
  }
  // A global pointer parameter: `ld.param.u64` then `cvta.to.global.u64`.
  template <MemTag T>
  GlobalPtr<T> param_ptr(std::string_view name) {
    Reg<U64> raw = reg<U64>(name);
    Instr in = make(Op::Ld, ScalarType::U64);
    in.space = Space::Param;
    in.ops = {def(raw), symbol_address(declare_param(name, ScalarType::U64, true, T::kType))};
    commit(std::move(in));
    Reg<U64> global = reg<U64>(name);
    Instr cv = make(Op::Cvta, ScalarType::U64);
    cv.space = Space::Global;
    cv.ops = {def(global), use(raw)};
    commit(std::move(cv));
    return GlobalPtr<T>{global, 0};
  }
  Reg<U32> special(Special s);
  Reg<U32> tid_x() { return special(Special::TidX); }
  Reg<U32> ntid_x() { return special(Special::NtidX); }
  Reg<U32> ctaid_x() { return special(Special::CtaidX); }
  Reg<U32> nctaid_x() { return special(Special::NctaidX); }
  Reg<U32> laneid() { return special(Special::LaneId); }
  Reg<U32> warpid() { return special(Special::WarpId); }
  // `%cluster_ctarank` (this CTA's rank in its cluster, 0 to nctarank - 1) and
  // `%cluster_nctarank` (the CTAs of the cluster); the other cluster registers through special().
  Reg<U32> cluster_ctarank() { return special(Special::ClusterCtarank); }
  Reg<U32> cluster_nctarank() { return special(Special::ClusterNctarank); }

  // ---- moves ----
  template <TypeTag T>
  Reg<T> mov(SrcOf<T> a) {
    Reg<T> d = reg<T>();
    mov(d, a);
    return d;
  }
  template <TypeTag T>
  Reg<T> mov(Reg<T> a) {
    return mov<T>(SrcOf<T>(a));
  }
  template <TypeTag T>
  void mov(Reg<T> d, SrcOf<T> a) {
    Instr in = make(Op::Mov, T::kType);
    in.ops = {def(d), use(a)};
    commit(std::move(in));
  }
  // Split a 32-bit register into two 16-bit halves (`mov.b32 {%h1, %h2}, %r1`): lo first.
  template <TypeTag H, TypeTag W>
  requires(H::kBytes == 2 && W::kBytes == 4) std::array < Reg<H>,
  2 > unpack(Reg<W> packed) {
    std::array<Reg<H>, 2> halves{reg<H>(), reg<H>()};
    Instr in = make(Op::Mov, ScalarType::B32);
    in.ops = {def_vec(halves), use(packed)};
    commit(std::move(in));
    return halves;
  }
  // Join two 16-bit halves into one 32-bit register (`mov.b32 %r1, {%h1, %h2}`): lo first.
  template <TypeTag W = B32, TypeTag H>
  requires(H::kBytes == 2 && W::kBytes == 4) Reg<W> pack(Reg<H> lo, Reg<H> hi) {
    Reg<W> d = reg<W>();
    Instr in = make(Op::Mov, ScalarType::B32);
    in.ops = {def(d), use_vec(std::array<Reg<H>, 2>{lo, hi})};
    commit(std::move(in));
    return d;
  }
  // Reinterpret the bits of a register as another type whose register has the same size
  // (`mov.b32`); a byte and a byte pair share the 16-bit register (`mov.b16`).
  template <TypeTag To, TypeTag From>
  requires(register_bytes(To::kType) == register_bytes(From::kType) &&
           reg_class(To::kType) != RegClass::B8 && To::kType != ScalarType::Pred &&
           From::kType != ScalarType::Pred) Reg<To> bitcast(Reg<From> a) {
    Reg<To> d = reg<To>();
    Instr in = make(Op::Mov, bits_type(register_bytes(To::kType)));
    in.ops = {def(d), use(a)};
    commit(std::move(in));
    return d;
  }

  // ---- arithmetic: `op(a, b)` returns a new register, `op(d, a, b)` writes d (loop-carried) ----
  template <ArithTag T>
  Reg<T> add(Reg<T> a, SrcOf<T> b, MathMode m = kDefault) {
    return binary(Op::Add, a, b, m);
  }
  template <ArithTag T>
  void add(Reg<T> d, Reg<T> a, SrcOf<T> b, MathMode m = kDefault) {
    binary_into(Op::Add, d, a, b, m);
  }
  template <ArithTag T>
  Reg<T> sub(Reg<T> a, SrcOf<T> b, MathMode m = kDefault) {
    return binary(Op::Sub, a, b, m);
  }
  template <ArithTag T>
  void sub(Reg<T> d, Reg<T> a, SrcOf<T> b, MathMode m = kDefault) {
    binary_into(Op::Sub, d, a, b, m);
  }
  // Floating multiply, or the low half of an integer product (`mul.lo`).
  template <ArithTag T>
  Reg<T> mul(Reg<T> a, SrcOf<T> b, MathMode m = kDefault) {
    return binary(Op::Mul, a, b, m, is_int(T::kType) ? MulMode::Lo : MulMode::None);
  }
  template <ArithTag T>
  void mul(Reg<T> d, Reg<T> a, SrcOf<T> b, MathMode m = kDefault) {
    binary_into(Op::Mul, d, a, b, m, is_int(T::kType) ? MulMode::Lo : MulMode::None);
  }
  template <IntTag T>
  Reg<T> mul_hi(Reg<T> a, SrcOf<T> b) {
    return binary(Op::Mul, a, b, kDefault, MulMode::Hi);
  }
  template <IntTag T>
  Reg<WideOf<T>> mul_wide(Reg<T> a, SrcOf<T> b) {
    Reg<WideOf<T>> d = reg<WideOf<T>>();
    Instr in = make(Op::Mul, T::kType);
    in.mul = MulMode::Wide;
    in.ops = {def(d), use(a), use(b)};
    commit(std::move(in));
    return d;
  }
  // Integer multiply-add, low half (`mad.lo`).
  template <IntTag T>
  Reg<T> mad(Reg<T> a, SrcOf<T> b, SrcOf<T> c) {
    Reg<T> d = reg<T>();
    ternary_into(Op::Mad, d, a, b, c, kDefault, MulMode::Lo);
    return d;
  }
  template <IntTag T>
  Reg<WideOf<T>> mad_wide(Reg<T> a, SrcOf<T> b, SrcOf<WideOf<T>> c) {
    Reg<WideOf<T>> d = reg<WideOf<T>>();
    Instr in = make(Op::Mad, T::kType);
    in.mul = MulMode::Wide;
    in.ops = {def(d), use(a), use(b), use(c)};
    commit(std::move(in));
    return d;
  }
  // Fused multiply-add, rounded once (`fma.rn` unless another rounding is asked for).
  template <FloatTag T>
  Reg<T> fma(Reg<T> a, SrcOf<T> b, SrcOf<T> c, MathMode m = kRn) {
    Reg<T> d = reg<T>();
    ternary_into(Op::Fma, d, a, b, c, m, MulMode::None);
    return d;
  }
  template <FloatTag T>
  void fma(Reg<T> d, Reg<T> a, SrcOf<T> b, SrcOf<T> c, MathMode m = kRn) {
    ternary_into(Op::Fma, d, a, b, c, m, MulMode::None);
  }
  // Division: integers exact; f32 `div.rn` by default, `kApprox` / `kFull` on request.
  template <DivTag T>
  Reg<T> div(Reg<T> a, SrcOf<T> b, MathMode m = kDefault) {
    return binary(Op::Div, a, b, m);
  }
  template <IntTag T>
  Reg<T> rem(Reg<T> a, SrcOf<T> b) {
    return binary(Op::Rem, a, b, kDefault);
  }
  template <ArithTag T>
  Reg<T> min(Reg<T> a, SrcOf<T> b, MathMode m = kDefault) {
    return binary(Op::Min, a, b, m);
  }
  template <ArithTag T>
  Reg<T> max(Reg<T> a, SrcOf<T> b, MathMode m = kDefault) {
    return binary(Op::Max, a, b, m);
  }
  template <SignedArithTag T>
  Reg<T> abs(Reg<T> a, MathMode m = kDefault) {
    return unary(Op::Abs, a, m);
  }
  template <SignedArithTag T>
  Reg<T> neg(Reg<T> a, MathMode m = kDefault) {
    return unary(Op::Neg, a, m);
  }

  // ---- logic and shifts; `and_` etc. take predicates too ----
  template <TypeTag T>
  requires(LogicTag<T> || T::kType == ScalarType::Pred) Reg<T> and_(Reg<T> a, SrcOf<T> b) {
    return binary(Op::And, a, b, kDefault);
  }
  template <TypeTag T>
  requires(LogicTag<T> || T::kType == ScalarType::Pred) Reg<T> or_(Reg<T> a, SrcOf<T> b) {
    return binary(Op::Or, a, b, kDefault);
  }
  template <TypeTag T>
  requires(LogicTag<T> || T::kType == ScalarType::Pred) Reg<T> xor_(Reg<T> a, SrcOf<T> b) {
    return binary(Op::Xor, a, b, kDefault);
  }
  template <TypeTag T>
  requires(LogicTag<T> || T::kType == ScalarType::Pred) Reg<T> not_(Reg<T> a) {
    return unary(Op::Not, a, kDefault);
  }
  template <LogicTag T>
  Reg<T> shl(Reg<T> a, Src<U32> amount) {
    return shift(Op::Shl, a, amount);
  }
  // Logical for unsigned and bit types, arithmetic for signed ones (as PTX's shr.u / shr.s).
  template <LogicTag T>
  Reg<T> shr(Reg<T> a, Src<U32> amount) {
    return shift(Op::Shr, a, amount);
  }

  // ---- bits: counts, reversal, fields, byte permutes, three-input logic, funnel shifts, dots ----
  // popc: the set bits of a 32- or 64-bit value; clz: its leading zeros (32 or 64 for zero).
  template <LogicTag T>
  requires(T::kBytes >= 4) Reg<U32> popc(Reg<T> a) {
    return bits_op<U32>(Op::Popc, bits_type(T::kBytes), {use(a)});
  }
  template <LogicTag T>
  requires(T::kBytes >= 4) Reg<U32> clz(Reg<T> a) {
    return bits_op<U32>(Op::Clz, bits_type(T::kBytes), {use(a)});
  }
  // brev: the bits in reverse order.
  template <LogicTag T>
  requires(T::kBytes >= 4) Reg<T> brev(Reg<T> a) {
    return bits_op<T>(Op::Brev, bits_type(T::kBytes), {use(a)});
  }
  // bfind: the position of the most significant bit unlike the sign (the highest 1 of unsigned
  // and non-negative values, the highest 0 of negative ones), 0xFFFFFFFF when there is none; with
  // `shift_amount`, the left shift that brings that bit to the top instead.
  template <IntTag T>
  requires(T::kBytes >= 4) Reg<U32> bfind(Reg<T> a, bool shift_amount = false) {
    Reg<U32> d = reg<U32>();
    Instr in = make(Op::Bfind, T::kType);
    in.shift_amount = shift_amount;
    in.ops = {def(d), use(a)};
    commit(std::move(in));
    return d;
  }
  // bfe: `len` bits of `a` from bit `pos` (each taken mod 256), zero-extended for unsigned T and
  // sign-extended for signed T.
  template <IntTag T>
  requires(T::kBytes >= 4) Reg<T> bfe(Reg<T> a, Src<U32> pos, Src<U32> len) {
    return bits_op<T>(Op::Bfe, T::kType, {use(a), use(pos), use(len)});
  }
  // bfi: `base` with its `len` bits from bit `pos` replaced by the low bits of `bits`.
  template <LogicTag T>
  requires(T::kBytes >= 4) Reg<T> bfi(Reg<T> bits, SrcOf<T> base, Src<U32> pos, Src<U32> len) {
    return bits_op<T>(Op::Bfi, bits_type(T::kBytes), {use(bits), use(base), use(pos), use(len)});
  }
  // prmt: byte i of the result is byte (selector >> 4i) & 7 of the eight of {b, a} (a's bytes are
  // 0-3); with bit 3 of that nibble set, the byte's sign bit fills it instead.
  template <LogicTag T>
  requires(T::kBytes == 4) Reg<T> prmt(Reg<T> a, SrcOf<T> b, Src<U32> selector) {
    return bits_op<T>(Op::Prmt, ScalarType::B32, {use(a), use(b), use(selector)});
  }
  // lop3: any function of three inputs, bit by bit. `lut` is its truth table, written as the
  // function of a = 0xF0, b = 0xCC, c = 0xAA: `(a & b) | c` is `(0xF0 & 0xCC) | 0xAA` = 0xEA.
  template <LogicTag T>
  requires(T::kBytes == 4) Reg<T> lop3(Reg<T> a, SrcOf<T> b, SrcOf<T> c, std::uint8_t lut) {
    return bits_op<T>(Op::Lop3, ScalarType::B32, {use(a), use(b), use(c), use(Src<B32>(lut))});
  }
  // shf: a funnel shift of the 64 bits {hi, lo}: the high word after a left shift by n, or the
  // low word after a right shift (n mod 32 with Wrap, at most 32 with Clamp).
  template <LogicTag T>
  requires(T::kBytes == 4) Reg<T> shf(Funnel mode, Reg<T> lo, SrcOf<T> hi, Src<U32> n) {
    Reg<T> d = reg<T>();
    Instr in = make(Op::Shf, ScalarType::B32);
    in.funnel = mode;
    in.ops = {def(d), use(lo), use(hi), use(n)};
    commit(std::move(in));
    return d;
  }
  // dp4a: c plus the dot product of the four bytes of a and of b (each signed or unsigned as its
  // type is); the sum is u32 when both are unsigned, else s32, and wraps.
  template <DotTag A, DotTag B>
  Reg<DotSum<A, B>> dp4a(Reg<A> a, Reg<B> b, SrcOf<DotSum<A, B>> c) {
    return dot_op<A, B>(Op::Dp4a, a, b, c, false);
  }
  // dp2a: c plus a's two 16-bit halves times b's bytes 0-1 (or 2-3 with `high`).
  template <DotTag A, DotTag B>
  Reg<DotSum<A, B>> dp2a(Reg<A> a, Reg<B> b, SrcOf<DotSum<A, B>> c, bool high = false) {
    return dot_op<A, B>(Op::Dp2a, a, b, c, high);
  }

  // ---- special functions: the precision is always explicit in the PTX ----
  template <F32OrF64Tag T>
  Reg<T> rcp(Reg<T> a, MathMode m = kRn) {
    return unary(Op::Rcp, a, m);
  }
  template <F32OrF64Tag T>
  Reg<T> sqrt(Reg<T> a, MathMode m = kRn) {
    return unary(Op::Sqrt, a, m);
  }
  template <F32OrF64Tag T>
  Reg<T> rsqrt(Reg<T> a, MathMode m = kApprox) {
    return unary(Op::Rsqrt, a, m);
  }
  template <Ex2Tag T>
  Reg<T> ex2(Reg<T> a, MathMode m = kApprox) {
    return unary(Op::Ex2, a, m);
  }
  template <TypeTag T>
  requires(T::kType == ScalarType::F32) Reg<T> lg2(Reg<T> a, MathMode m = kApprox) {
    return unary(Op::Lg2, a, m);
  }

  // tanh.approx: f32, f16 and f16x2; bf16 and bf16x2 need sm_90. sin/cos.approx: f32 (radians).
  template <FloatTag T>
  requires(T::kType != ScalarType::F64) Reg<T> tanh(Reg<T> a) {
    return unary(Op::Tanh, a, kApprox);
  }
  template <TypeTag T>
  requires(T::kType == ScalarType::F32) Reg<T> sin(Reg<T> a, MathMode m = kApprox) {
    return unary(Op::Sin, a, m);
  }
  template <TypeTag T>
  requires(T::kType == ScalarType::F32) Reg<T> cos(Reg<T> a, MathMode m = kApprox) {
    return unary(Op::Cos, a, m);
  }
  // copysign: `magnitude` with the sign of `sign`, in PTX's operand order (`copysign d, a, b` is
  // C's copysign(b, a)).
  template <F32OrF64Tag T>
  Reg<T> copysign(Reg<T> sign, SrcOf<T> magnitude) {
    return binary(Op::Copysign, sign, magnitude, kDefault);
  }

  // ---- comparison and selection ----
  template <CompareTag T>
  Pred setp(Cmp cmp, Reg<T> a, SrcOf<T> b, bool ftz = false) {
    Pred p = reg<PredT>();
    Instr in = make(Op::Setp, T::kType);
    in.cmp = cmp;
    in.ftz = ftz;
    in.ops = {def(p), use(a), use(b)};
    commit(std::move(in));
    return p;
  }
  template <TypeTag T>
  requires(T::kType != ScalarType::Pred) Reg<T> selp(SrcOf<T> a, SrcOf<T> b, Pred p) {
    Reg<T> d = reg<T>();
    Instr in = make(Op::Selp, move_type(T::kType));
    in.ops = {def(d), use(a), use(b), use(p)};
    commit(std::move(in));
    return d;
  }
  // The same, with the type taken from the first operand: `k.selp(x, 0.0f, p)`.
  template <TypeTag T>
  requires(T::kType != ScalarType::Pred) Reg<T> selp(Reg<T> a, SrcOf<T> b, Pred p) {
    return selp<T>(SrcOf<T>(a), b, p);
  }

  // ---- conversion: the one way to change type ----
  template <CvtTag To, CvtTag From>
  Reg<To> cvt(Reg<From> a, Rounding r = Rounding::None, bool ftz = false, bool sat = false) {
    Reg<To> d = reg<To>();
    cvt(d, a, r, ftz, sat);
    return d;
  }
  template <CvtTag To, CvtTag From>
  void cvt(Reg<To> d, Reg<From> a, Rounding r = Rounding::None, bool ftz = false,
           bool sat = false) {
    Instr in = make(Op::Cvt, To::kType);
    in.src_type = From::kType;
    in.rounding = r == Rounding::None ? default_cvt_rounding(To::kType, From::kType) : r;
    in.ftz = ftz;
    in.sat = sat;
    in.ops = {def(d), use(a)};
    commit(std::move(in));
  }
  // Two f32 values to one f16x2/bf16x2 (`cvt.rn.f16x2.f32 d, hi, lo`): `lo` lands in the low half,
  // which is the lower address once stored.
  template <TypeTag Pair>
  requires(Pair::kType == ScalarType::F16x2 ||
           Pair::kType == ScalarType::BF16x2) Reg<Pair> cvt_pack(Reg<F32> lo, Reg<F32> hi,
                                                                 Rounding r = Rounding::Rn) {
    Reg<Pair> d = reg<Pair>();
    Instr in = make(Op::CvtPack, Pair::kType);
    in.src_type = ScalarType::F32;
    in.rounding = r;
    in.ops = {def(d), use(hi), use(lo)};
    commit(std::move(in));
    return d;
  }

  // Two f32 values to one FP8, FP4 or ue8m0 pair (`cvt.rn.satfinite.e4m3x2.f32 d, hi, lo`): `lo`
  // lands in the low byte (FP4: the low nibble), the lower address once stored. FP8 and FP4 round
  // to nearest even and saturate to the largest finite value (PTX has no other form); ue8m0 rounds
  // toward zero (Rounding::Rz, the default) or up (Rounding::Rp) and saturates when `satfinite`.
  template <NarrowPairTag Pair>
  Reg<Pair> cvt_pack(Reg<F32> lo, Reg<F32> hi, Rounding r = Rounding::None, bool satfinite = true) {
    Reg<Pair> d = reg<Pair>();
    Instr in = make(Op::CvtPack, Pair::kType);
    in.src_type = ScalarType::F32;
    in.rounding = r != Rounding::None                  ? r
                  : Pair::kType == ScalarType::UE8M0x2 ? Rounding::Rz
                                                       : Rounding::Rn;
    in.sat = satfinite;
    in.ops = {def(d), use(hi), use(lo)};
    commit(std::move(in));
    return d;
  }
  // An f16 pair to an FP8 pair (`cvt.rn.satfinite.e4m3x2.f16x2 d, a`), halves to bytes in order.
  template <NarrowPairTag Pair>
  requires(Pair::kType == ScalarType::E4M3x2 ||
           Pair::kType == ScalarType::E5M2x2) Reg<Pair> cvt_pack(Reg<F16x2> a) {
    Reg<Pair> d = reg<Pair>();
    cvt_pair_op(Pair::kType, ScalarType::F16x2, true, def(d), use(a));
    return d;
  }
  // A narrow pair to the 16-bit pair that holds it exactly: FP8 and FP4 to f16x2
  // (`cvt.rn.f16x2.e4m3x2 d, a`), ue8m0 to bf16x2 (`cvt.rn.bf16x2.ue8m0x2 d, a`).
  template <NarrowPairTag Pair>
  Reg<Unpacked<Pair>> cvt_unpack(Reg<Pair> a) {
    Reg<Unpacked<Pair>> d = reg<Unpacked<Pair>>();
    cvt_pair_op(Unpacked<Pair>::kType, Pair::kType, false, def(d), use(a));
    return d;
  }
  // The two bytes of a 16-bit pair as single elements (`mov.b16` and `shr.u16`), low first: the
  // e4m3 values of an e4m3x2, for a store of one byte.
  template <TypeTag One, TypeTag Pair>
  requires(One::kBytes == 1 && Pair::kBytes == 2 &&
           reg_class(One::kType) == RegClass::B16) std::array < Reg<One>,
  2 > split_bytes(Reg<Pair> p) {
    std::array<Reg<One>, 2> bytes{reg<One>(), reg<One>()};
    Instr lo = make(Op::Mov, ScalarType::B16);
    lo.ops = {def(bytes[0]), use(p)};
    commit(std::move(lo));
    Instr hi = make(Op::Shr, ScalarType::U16);
    hi.ops = {def(bytes[1]), use(p), use(Src<U32>(8))};
    commit(std::move(hi));
    return bytes;
  }

  // ---- memory: scalar and vector loads and stores in global, shared and param space ----
  template <Space S, MemTag T>
  Reg<T> ld(Ptr<S, T> addr, MemHints h = kNoHints) {
    Reg<T> d = reg<T>();
    memory_op(Op::Ld, S, T::kType, h, def(d), address(addr), 1);
    return d;
  }
  template <Space S, MemTag T>
  void st(Ptr<S, T> addr, SrcOf<T> v, MemHints h = kNoHints) {
    memory_op(Op::St, S, T::kType, h, address(addr), use(v), 1);
  }
  // `width` must be 2 or 4; the address must be aligned to the vector's size.
  template <Space S, MemTag T>
  std::vector<Reg<T>> ld_vec(Ptr<S, T> addr, int width, MemHints h = kNoHints) {
    std::vector<Reg<T>> d;
    for (int i = 0; i < width && i < 4; ++i) d.push_back(reg<T>());
    memory_op(Op::Ld, S, T::kType, h, def_vec(d), address(addr), width);
    return d;
  }
  template <Space S, MemTag T>
  void st_vec(Ptr<S, T> addr, std::span<const Reg<T>> v, MemHints h = kNoHints) {
    memory_op(Op::St, S, T::kType, h, address(addr), use_vec(v), static_cast<int>(v.size()));
  }
  // What `ld_vec` returns, stored back without spelling the span.
  template <Space S, MemTag T>
  void st_vec(Ptr<S, T> addr, const std::vector<Reg<T>>& v, MemHints h = kNoHints) {
    st_vec(addr, std::span<const Reg<T>>(v), h);
  }
  template <int N, Space S, MemTag T>
  requires(N == 2 || N == 4) Vec<T, N> ld_v(Ptr<S, T> addr, MemHints h = kNoHints) {
    Vec<T, N> d;
    for (auto& r : d) r = reg<T>();
    memory_op(Op::Ld, S, T::kType, h, def_vec(d), address(addr), N);
    return d;
  }
  template <int N, Space S, MemTag T>
  requires(N == 2 || N == 4) void st_v(Ptr<S, T> addr, const Vec<T, N>& v, MemHints h = kNoHints) {
    memory_op(Op::St, S, T::kType, h, address(addr), use_vec(v), N);
  }
  // Masked tails: a load that yields `fallback` where `p` is false, a store that happens only
  // where `p` is true.
  template <Space S, MemTag T>
  Reg<T> ld_if(Pred p, Ptr<S, T> addr, SrcOf<T> fallback, MemHints h = kNoHints) {
    Reg<T> d = mov<T>(fallback);
    predicated(p, [&] { memory_op(Op::Ld, S, T::kType, h, def(d), address(addr), 1); });
    return d;
  }
  template <int N, Space S, MemTag T>
  requires(N == 2 || N == 4) Vec<T, N> ld_v_if(Pred p, Ptr<S, T> addr, SrcOf<T> fallback,
                                               MemHints h = kNoHints) {
    Vec<T, N> d;
    for (auto& r : d) r = mov<T>(fallback);
    predicated(p, [&] { memory_op(Op::Ld, S, T::kType, h, def_vec(d), address(addr), N); });
    return d;
  }
  template <Space S, MemTag T>
  void st_if(Pred p, Ptr<S, T> addr, SrcOf<T> v, MemHints h = kNoHints) {
    predicated(p, [&] { st(addr, v, h); });
  }
  template <int N, Space S, MemTag T>
  requires(N == 2 || N == 4) void st_v_if(Pred p, Ptr<S, T> addr, const Vec<T, N>& v,
                                          MemHints h = kNoHints) {
    predicated(p, [&] { st_v<N>(addr, v, h); });
  }
  // `atom.global.add.f32` returns the old value; `red.global.add.f32` does not.
  Reg<F32> atom_add(GlobalPtr<F32> addr, Src<F32> v);
  void red_add(GlobalPtr<F32> addr, Src<F32> v);
  // `atom.global.add.u32`: a ticket from a counter that CTAs share (dynamic work assignment).
  // The form with `d` writes the old value into a register that already exists (loop-carried,
  // or kept where a predicate skips the atomic): no mov that would wait for the atomic's return.
  Reg<U32> atom_add(GlobalPtr<U32> addr, Src<U32> v);
  void atom_add(Reg<U32> d, GlobalPtr<U32> addr, Src<U32> v);
  // `atom.global.inc.u32`: old = *addr; *addr = old >= limit ? 0 : old + 1. A ticket below
  // `limit` as add 1 gives one, but ptxas turns an add of a value into a warp-aggregated atomic
  // whose shuffle of the result waits for the atomic's round trip where it stands; an inc it
  // leaves alone (with limit 0xFFFFFFFF it is an add again), so the wait moves to the first use.
  void atom_inc(Reg<U32> d, GlobalPtr<U32> addr, Src<U32> limit);
  // `fence.acq_rel.gpu`: this thread's memory accesses before it are ordered before those after
  // it for every thread of the GPU (a CTA announcing it is done with a shared counter).
  void fence_gpu();

  // ---- atomics and fences in every space, operation, type and order ----
  // `atom{.sem}{.scope}.space.op.type d, [addr], b`: d = old value, *addr = op(old, b), in one
  // indivisible step. Global, shared and (sm_90) cluster addresses. Which op takes which type is
  // the instruction table's (an illegal pair throws, naming the types allowed): add on u32, s32,
  // u64, f32, f64, f16x2 and bf16x2 (sm_90; the pairs print `.noftz`); min/max on 32/64-bit
  // integers (signed or unsigned by the register's type); and/or/xor/exch on 32/64-bit integers
  // and bits (printed .b32/.b64); inc/dec on u32.
  template <Space S, AtomTag T>
  Reg<T> atom(AtomOp op, Ptr<S, T> addr, SrcOf<T> b, AtomOrder order = {}) {
    Reg<T> d = reg<T>();
    atom_op(Op::Atom, op, S, T::kType, order, {def(d), address(addr), use(b)});
    return d;
  }
  // `atom.cas.b32 d, [addr], compare, value`: *addr = old == compare ? value : old; d = old.
  template <Space S, AtomTag T>
  Reg<T> atom_cas(Ptr<S, T> addr, SrcOf<T> compare, SrcOf<T> value, AtomOrder order = {}) {
    Reg<T> d = reg<T>();
    atom_op(Op::Atom, AtomOp::Cas, S, T::kType, order,
            {def(d), address(addr), use(compare), use(value)});
    return d;
  }
  // `red{.sem}{.scope}.space.op.type [addr], b`: atom without the old value (no exch, no cas;
  // .relaxed or .release only).
  template <Space S, AtomTag T>
  void red(AtomOp op, Ptr<S, T> addr, SrcOf<T> b, AtomOrder order = {}) {
    atom_op(Op::Red, op, S, T::kType, order, {address(addr), use(b)});
  }
  // `fence.sc.scope` or `fence.acq_rel.scope` (`.cluster`: sm_90): orders this thread's memory
  // accesses before it with those after it for the threads of the scope; .sc also with other .sc
  // fences.
  void fence(MemSem sem, Scope scope);

  // ---- asynchronous copies, global to shared (cp.async, sm_80 and later) ----
  // `bytes` (4, 8 or 16) from `src` to `dst`, both aligned to `bytes`; nothing waits for it. The
  // copies a thread issued since its last `cp_async_commit` form one group; after
  // `cp_async_wait(n)` all but the thread's newest n committed groups have landed and are visible
  // to that thread (to others only after a barrier). 16-byte copies bypass L1 (.cg), narrower
  // ones cannot (.ca). Of the hints, a copy takes the L2 ones (l2_policy, l2_prefetch).
  template <MemTag T>
  void cp_async(SharedPtr<T> dst, GlobalPtr<T> src, std::uint32_t bytes, MemHints h = kNoHints) {
    cp_async_op(address(dst), address(src), bytes, std::nullopt, h);
  }
  // The same copy reading only the first `src_bytes` (≤ bytes) of `src` and zero-filling the rest
  // of `dst`: masked tails and masked rows (0 reads nothing, so `src` may lie past an allocation).
  template <MemTag T>
  void cp_async_zfill(SharedPtr<T> dst, GlobalPtr<T> src, std::uint32_t bytes, Src<U32> src_bytes,
                      MemHints h = kNoHints) {
    cp_async_op(address(dst), address(src), bytes, use(src_bytes), h);
  }
  void cp_async_commit();
  void cp_async_wait(std::uint32_t newest_pending);

  // ---- mbarriers and bulk copies (the Hopper TMA unit) ----
  // An mbarrier is a 64-bit object in shared memory (8-byte aligned) that counts the arrivals and
  // the transaction bytes of its current phase. The phase completes when `count` arrivals have
  // come and every byte announced (expect_tx) has landed; the next phase then begins with the
  // same count. Phases alternate parity 0, 1, 0, ...: a waiter names the parity of the phase it
  // waits for.
  //   `mbarrier_init`: `mbarrier.init.shared.b64` (sm_80, PTX 7.0); count in [1, 2^20 - 1].
  //   `fence_mbarrier_init`: makes initialized barriers visible to the TMA unit (and the
  //     cluster); one thread after its inits, then a barrier (sm_90, PTX 8.0).
  //   `mbarrier_arrive`: one arrival (sm_90, PTX 7.8); `mbarrier_arrive_expect_tx` also announces
  //     `bytes` more transaction bytes for this phase (sm_90, PTX 8.0).
  //   `mbarrier_wait`: waits until the phase of parity `parity` (0 or 1) has completed: a loop
  //     of `mbarrier.try_wait.parity` (sm_90, PTX 7.8). The bytes of bulk copies that completed
  //     on that phase are then visible to the thread.
  //   `cp_async_bulk`: `bytes` (a multiple of 16, at most 2^20 - 16) from `src` to `dst`, both
  //     16-byte aligned, by the TMA unit: one instruction for the whole block. It completes that
  //     many transaction bytes on `bar` (sm_90, PTX 8.0). Usually one thread of the CTA issues it
  //     after its `mbarrier_arrive_expect_tx` for the same bytes.
  void mbarrier_init(SharedPtr<B64> bar, Src<U32> count);
  void fence_mbarrier_init();
  void mbarrier_arrive(SharedPtr<B64> bar);
  void mbarrier_arrive_expect_tx(SharedPtr<B64> bar, Src<U32> bytes);
  //   With Scope::Cluster the wait is `.acquire.cluster` (PTX 8.0): what peers' st.async and
  //   remote arrivals released on this barrier is then visible.
  void mbarrier_wait(SharedPtr<B64> bar, Src<U32> parity, Scope scope = Scope::Cta);
  //   `mbarrier_expect_tx`: announces `bytes` more transaction bytes for the current phase with
  //     no arrival (`mbarrier.expect_tx.relaxed.cluster.shared::cta.b64`, sm_90, PTX 8.0).
  //   `mbarrier_complete_tx`: `bytes` of the current phase's transaction count have landed, on a
  //     barrier of this CTA or, through a cluster address, of a peer's (PTX 8.0).
  //   `mbarrier_arrive` on a cluster address: one arrival on a peer's barrier
  //     (`mbarrier.arrive.release.cluster.shared::cluster.b64 _, [bar]`, PTX 8.0).
  void mbarrier_expect_tx(SharedPtr<B64> bar, Src<U32> bytes);
  void mbarrier_complete_tx(SharedPtr<B64> bar, Src<U32> bytes);
  void mbarrier_complete_tx(ClusterPtr<B64> bar, Src<U32> bytes);
  void mbarrier_arrive(ClusterPtr<B64> bar);
  template <MemTag T>
  void cp_async_bulk(SharedPtr<T> dst, GlobalPtr<T> src, Src<U32> bytes, SharedPtr<B64> bar) {
    cp_async_bulk_op(address(dst), address(src), use(bytes), address(bar));
  }

  // ---- thread-block clusters (sm_90, PTX 7.8 unless said) ----
  // The CTAs of a cluster run together on one GPC and can read and write each other's shared
  // memory (distributed shared memory, DSMEM) through `.shared::cluster` addresses.
  //   `mapa`: the address of the same byte of `p`'s array in the CTA of rank `rank` (its own
  //     rank included) (`mapa.shared::cluster.u32`). `p`'s constant offset rides along.
  //   ld/st/ld_v/st_v take a ClusterPtr like any other address (`ld.shared::cluster.f32`).
  //   `barrier_cluster_arrive` / `barrier_cluster_wait`: the cluster barrier. Every thread that
  //     has not exited arrives once, then waits; the wait returns when every non-exited thread of
  //     the cluster has arrived. Arrive releases and wait acquires by default; MemSem::Relaxed
  //     arrives without ordering, explicit Release / Acquire print the qualifier (PTX 8.0).
  //     `aligned`: every thread of the warp executes it together (`.aligned`).
  //   `cluster_sync`: arrive then wait, aligned: what a peer wrote before it is visible after.
  //   `fence_cluster`: `fence.acq_rel.cluster`. `fence_proxy_async`:
  //   `fence.proxy.async.shared::cta`,
  //     orders this thread's generic-proxy shared accesses with later async-proxy ones (PTX 8.0).
  //   `st_async`: stores 4 or 8 bytes into a peer's shared memory and completes that many
  //     transaction bytes on `bar`, an mbarrier of the same CTA as `addr` (PTX 8.1).
  //   `red_async_add`: the same for an atomic add of a u32 or s32 (PTX 8.1).
  template <MemTag T>
  ClusterPtr<T> mapa(SharedPtr<T> p, Src<U32> rank) {
    Reg<U32> d = reg<U32>();
    mapa_op(use(d), use(p.base), use(rank));
    return {d, p.offset};
  }
  void barrier_cluster_arrive(MemSem sem = MemSem::None, bool aligned = true);
  void barrier_cluster_wait(MemSem sem = MemSem::None, bool aligned = true);
  void cluster_sync();
  void fence_cluster();
  void fence_proxy_async();

  // ---- tensor maps and the TMA unit's tensor copies (sm_90, PTX 8.0) ----
  //   `param_tensor_map`: a tensor map parameter (`.param .align 64 .b8 name[128]`, tensor_map.hpp)
  //     and its generic address (`mov.u64`, then `cvta.param.u64`, PTX 7.7).
  //   `cp_async_bulk_tensor`: the map's box at `coords` (innermost first, one a dimension) into
  //     `dst` (128-byte aligned), its bytes completing on `bar` as a bulk copy's do (announce the
  //     box's bytes with mbarrier_arrive_expect_tx); `_multicast` writes it to the same offset of
  //     each CTA of the cluster whose rank's bit `cta_mask` sets, completing on their mbarriers at
  //     `bar`'s offset.
  //   `cp_async_bulk_tensor_store`: the box at `src` into the tensor at `coords` (elements outside
  //     it are not written), in the thread's bulk group: `cp_async_bulk_commit_group` closes the
  //     group, `cp_async_bulk_wait_group(n, read)` waits until at most n groups are pending (with
  //     `read`, until their shared memory has been read). Ordinary stores into `src` need
  //     fence_proxy_async before the copy reads them.
  //   `prefetch_tensormap`: brings the map into the cache.
  TensorMap param_tensor_map(std::string_view name);
  template <MemTag T>
  void cp_async_bulk_tensor(SharedPtr<T> dst, const TensorMap& map,
                            std::initializer_list<Reg<S32>> coords, SharedPtr<B64> bar) {
    bulk_tensor_op(Op::BulkTensorLoad, {address(dst), tensor_address(map, coords), address(bar)});
  }
  template <MemTag T>
  void cp_async_bulk_tensor_multicast(SharedPtr<T> dst, const TensorMap& map,
                                      std::initializer_list<Reg<S32>> coords, SharedPtr<B64> bar,
                                      Reg<U16> cta_mask) {
    bulk_tensor_op(Op::BulkTensorLoad,
                   {address(dst), tensor_address(map, coords), address(bar), use(cta_mask)});
  }
  template <MemTag T>
  void cp_async_bulk_tensor_store(const TensorMap& map, std::initializer_list<Reg<S32>> coords,
                                  SharedPtr<T> src) {
    bulk_tensor_op(Op::BulkTensorStore, {tensor_address(map, coords), address(src)});
  }
  void cp_async_bulk_commit_group();
  void cp_async_bulk_wait_group(std::uint32_t newest_pending, bool read = false);
  void prefetch_tensormap(const TensorMap& map);
  template <MemTag T>
  requires(T::kBytes == 4 || T::kBytes == 8) void st_async(ClusterPtr<T> addr, SrcOf<T> v,
                                                           ClusterPtr<B64> bar) {
    async_remote_op(Op::StAsync, storage_type(T::kType), address(addr), use(v), address(bar));
  }
  template <TypeTag T>
  requires(T::kType == ScalarType::U32 ||
           T::kType == ScalarType::S32) void red_async_add(ClusterPtr<T> addr, SrcOf<T> v,
                                                           ClusterPtr<B64> bar) {
    async_remote_op(Op::RedAsync, T::kType, address(addr), use(v), address(bar));
  }

  // ---- prefetches ----
  // `prefetch.global.<level> [addr]`: brings the line holding `addr` into L1 or L2 ahead of a load,
  // with no register and nothing to wait for. A hint: values never change. The CPU executor checks
  // the address as a load's (inside an allocation), so mask what lies past the data.
  template <MemTag T>
  void prefetch(GlobalPtr<T> addr, PrefetchLevel level) {
    prefetch_op(address(addr), level);
  }
  template <MemTag T>
  void prefetch_if(Pred p, GlobalPtr<T> addr, PrefetchLevel level) {
    predicated(p, [&] { prefetch(addr, level); });
  }

  // ---- L2 cache policies (sm_80 and later) ----
  // `createpolicy.fractional`: an opaque policy for MemHints::l2_policy. Of the lines an access
  // with it touches, `fraction` (in (0, 1]) take the `primary` eviction priority, the rest
  // `secondary` (First or Unchanged; unset: unchanged).
  Reg<B64> create_policy(L2Evict primary, float fraction = 1.0f,
                         std::optional<L2Evict> secondary = std::nullopt);

  // ---- address arithmetic, 64-bit by construction ----
  // `p + i` elements with a run-time index: one `mad.wide.u32` (global) or `mad.lo.u32` (shared).
  template <Space S, MemTag T, TypeTag I>
  requires(I::kType == ScalarType::U32 || I::kType == ScalarType::S32) Ptr<S, T> index(Ptr<S, T> p,
                                                                                       Reg<I> i) {
    constexpr bool k32 = S == Space::Shared || S == Space::SharedCluster;
    typename Ptr<S, T>::Base base = reg<typename Ptr<S, T>::Base::Type>();
    Instr in = make(Op::Mad, k32 ? ScalarType::U32 : I::kType);
    in.mul = k32 ? MulMode::Lo : MulMode::Wide;
    in.ops = {def(base), use(i), use(Src<U32>(T::kBytes)), use(p.base)};
    commit(std::move(in));
    return {base, p.offset};
  }
  // Row `row` of a row-major matrix with `stride` elements per row, in 64 bits. A constant stride
  // folds the element size in (one `mad.wide.u32`); a run-time one takes `mul.wide.u32` and then
  // `mad.lo.u64` by the element size.
  template <MemTag T>
  GlobalPtr<T> row(GlobalPtr<T> p, Reg<U32> row, Src<U32> stride) {
    constexpr std::uint64_t kMaxU32 = 0xFFFFFFFFu;
    if (stride.op.kind == Operand::Kind::Imm && stride.op.imm_bits * T::kBytes <= kMaxU32) {
      Reg<U64> base = reg<U64>();
      Instr in = make(Op::Mad, ScalarType::U32);
      in.mul = MulMode::Wide;
      const auto row_bytes = static_cast<std::uint32_t>(stride.op.imm_bits * T::kBytes);
      in.ops = {def(base), use(row), use(Src<U32>(row_bytes)), use(p.base)};
      commit(std::move(in));
      return {base, p.offset};
    }
    Reg<U64> elements = mul_wide<U32>(row, stride);
    Reg<U64> base = reg<U64>();
    Instr in = make(Op::Mad, ScalarType::U64);
    in.mul = MulMode::Lo;
    in.ops = {def(base), use(elements), use(Src<U64>(T::kBytes)), use(p.base)};
    commit(std::move(in));
    return {base, p.offset};
  }

  // ---- shared memory ----
  // A static array of `count` elements, its base address in a register (`mov.u32 %r, name`).
  template <MemTag T>
  SharedPtr<T> shared_array(std::string_view name, std::uint32_t count, std::uint32_t align = 16) {
    return {shared_base(declare_shared(name, count * T::kBytes, align, false)), 0};
  }
  // The kernel's dynamic shared memory (`.extern .shared`); `bytes` is what a launch must pass.
  // It starts on a 128-byte line by default (see laid_out_bytes).
  template <MemTag T>
  SharedPtr<T> shared_dynamic(std::string_view name, std::uint32_t bytes,
                              std::uint32_t align = 128) {
    return {shared_base(declare_shared(name, bytes, align, true)), 0};
  }
  // What a shared array takes in the layout: a static one in a kernel with a dynamic array is
  // rounded up to that array's alignment, so that the dynamic array, which follows every static
  // one, starts aligned in whatever order they are placed. On the H200 a staging region 16 bytes
  // off a 128-byte line made the L2 serve every sector that cp.async copied into it twice.
  std::uint32_t laid_out_bytes(const SharedDecl& d) const;
  void bar_sync(std::uint32_t barrier = 0);

  // ---- scheduling: named barriers, register reallocation, sleeps, timers ----
  // Named barriers: barrier `barrier` (0-15) completes when `threads` (a multiple of 32) have
  // arrived; `bar_sync` waits for that, `bar_arrive` counts this thread and goes on (a producer
  // signalling consumers that wait). Every arrival of one phase must name the same count.
  void bar_sync(std::uint32_t barrier, std::uint32_t threads) {
    named_barrier(Op::Bar, barrier, threads);
  }
  void bar_arrive(std::uint32_t barrier, std::uint32_t threads) {
    named_barrier(Op::BarArrive, barrier, threads);
  }
  // setmaxnreg (sm_90a, PTX 8.0): this warp's register ceiling rises to (inc) or falls to (dec)
  // `registers`, a multiple of 8 in [24, 256]; every thread of the warp executes it together.
  // Warp-specialized kernels give producer warps' registers to the consumers.
  void setmaxnreg_inc(std::uint32_t registers) { setmaxnreg(true, registers); }
  void setmaxnreg_dec(std::uint32_t registers) { setmaxnreg(false, registers); }
  // nanosleep.u32: suspends the thread for about `ns` nanoseconds (at most 1 ms); a back-off
  // in spin loops. The executor does not sleep.
  void nanosleep(Src<U32> ns);
  // %clock64: the SM's cycle counter; %globaltimer: the GPU's nanosecond clock. The executor
  // gives the CTA's warp-instruction count and the host's monotonic clock.
  Reg<U64> clock64() { return timer(Special::Clock64); }
  Reg<U64> globaltimer() { return timer(Special::Globaltimer); }

  // ---- programmatic dependent launch (sm_90, PTX 7.8) ----
  // `griddepcontrol.launch_dependents`: the grid launched after this one in its stream with the
  // programmatic-serialization attribute may start once every CTA of this one has said so (or
  // exited). `griddepcontrol.wait`: waits until the grids this one depends on have completed and
  // their memory is visible; a kernel that has it says so in its contract
  // (KernelContract::waits_for_prior_grid), so that a runtime launches it early.
  void griddep_launch_dependents();
  void griddep_wait();

  // ---- warp shuffles (32-bit values), `width` lanes per segment ----
  template <TypeTag T>
  requires(T::kBytes == 4) Reg<T> shfl(ShflMode mode, Reg<T> a, Src<U32> lane_or_delta,
                                       std::uint32_t width = 32,
                                       std::uint32_t member_mask = 0xFFFFFFFFu) {
    Reg<T> d = reg<T>();
    Instr in = make(Op::Shfl, ScalarType::B32);
    in.shfl = mode;
    const std::uint32_t c = shfl_c_operand(in, width);  // checks the width first
    in.ops = {def(d), use(a), use(lane_or_delta), use(Src<B32>(c)), use(Src<B32>(member_mask))};
    commit(std::move(in));
    return d;
  }
  template <TypeTag T>
  requires(T::kBytes == 4) Reg<T> shfl_bfly(Reg<T> a, std::uint32_t lane_mask,
                                            std::uint32_t width = 32) {
    return shfl(ShflMode::Bfly, a, lane_mask, width);
  }
  template <TypeTag T>
  requires(T::kBytes == 4) Reg<T> shfl_down(Reg<T> a, std::uint32_t delta,
                                            std::uint32_t width = 32) {
    return shfl(ShflMode::Down, a, delta, width);
  }
  template <TypeTag T>
  requires(T::kBytes == 4) Reg<T> shfl_up(Reg<T> a, std::uint32_t delta, std::uint32_t width = 32) {
    return shfl(ShflMode::Up, a, delta, width);
  }
  template <TypeTag T>
  requires(T::kBytes == 4) Reg<T> shfl_idx(Reg<T> a, Src<U32> lane, std::uint32_t width = 32) {
    return shfl(ShflMode::Idx, a, lane, width);
  }

  // ---- warp collectives: every live lane of `member` executes them together ----
  // vote.sync: whether `a` holds in all, any, or all-or-none (uni) of the member lanes; ballot:
  // the mask of the member lanes where it holds.
  Pred vote_all(Pred a, Src<B32> member = kAllLanes) {
    return vote<PredT>(VoteMode::All, a, member);
  }
  Pred vote_any(Pred a, Src<B32> member = kAllLanes) {
    return vote<PredT>(VoteMode::Any, a, member);
  }
  Pred vote_uni(Pred a, Src<B32> member = kAllLanes) {
    return vote<PredT>(VoteMode::Uni, a, member);
  }
  Reg<B32> vote_ballot(Pred a, Src<B32> member = kAllLanes) {
    return vote<B32>(VoteMode::Ballot, a, member);
  }
  // match.any.sync: the member lanes whose `a` equals this lane's.
  template <TypeTag T>
  requires(T::kBytes == 4 || T::kBytes == 8) Reg<B32> match_any(Reg<T> a,
                                                                Src<B32> member = kAllLanes) {
    return bits_op<B32>(Op::MatchAny, bits_type(T::kBytes), {use(a), use(member)});
  }
  // match.all.sync: the member lanes and true when every member lane's `a` is the same, else 0
  // and false.
  struct MatchAll {
    Reg<B32> lanes;
    Pred equal;
  };
  template <TypeTag T>
  requires(T::kBytes == 4 || T::kBytes == 8) MatchAll
      match_all(Reg<T> a, Src<B32> member = kAllLanes) {
    MatchAll out{reg<B32>(), reg<PredT>()};
    Instr in = make(Op::MatchAll, bits_type(T::kBytes));
    in.ops = {def(out.lanes), def(out.equal), use(a), use(member)};
    commit(std::move(in));
    return out;
  }
  // redux.sync: the add, min or max of u32/s32 values, or the and, or, xor of 32-bit words, over
  // the member lanes; every member lane gets it.
  template <TypeTag T>
  requires(T::kType == ScalarType::U32 || T::kType == ScalarType::S32 ||
           T::kType == ScalarType::B32) Reg<T> redux(ReduxOp op, Reg<T> a,
                                                     Src<B32> member = kAllLanes) {
    const bool bitwise = op == ReduxOp::And || op == ReduxOp::Or || op == ReduxOp::Xor;
    Reg<T> d = reg<T>();
    Instr in = make(Op::Redux, bitwise ? ScalarType::B32 : T::kType);
    in.redux = op;
    in.ops = {def(d), use(a), use(member)};
    commit(std::move(in));
    return d;
  }
  // activemask.b32: the lanes of the warp executing this instruction with this thread (guards
  // true).
  Reg<B32> activemask() { return bits_op<B32>(Op::Activemask, ScalarType::B32, {}); }
  // elect.sync (sm_90, PTX 8.0): one leader among the member lanes: its lane id, and whether this
  // lane is it.
  struct Elected {
    Reg<U32> leader;
    Pred is_leader;
  };
  Elected elect_sync(Src<B32> member = kAllLanes) {
    Elected out{reg<U32>(), reg<PredT>()};
    Instr in = make(Op::Elect, ScalarType::B32);
    in.ops = {def(out.leader), def(out.is_leader), use(member)};
    commit(std::move(in));
    return out;
  }

  // ---- tensor cores: one warp's matrix products and the fragments they read ----
  // Every live thread of the warp executes these together (`.sync.aligned`), all 32 lanes.
  // mma.sync: D = A·B + C on 16×8 fragments (K = 16 for f16/bf16, 8 for tf32, 32 for FP8 and
  // 8-bit integers); f32 sums, or s32 sums that wrap. FP8 needs sm_89 (PTX 8.4).
  template <MmaInputTag A, MmaInputTag B>
  requires MmaPair<A, B> MmaAcc<MmaAccOf<A>> mma(const MmaA<A>& a, const MmaB<B>& b,
                                                 const MmaAcc<MmaAccOf<A>>& c) {
    MmaAcc<MmaAccOf<A>> d{};
    for (auto& r : d.regs) r = reg<MmaAccOf<A>>();
    mma_op(MmaElement<A>::kInput, MmaElement<B>::kInput, MmaAccOf<A>::kType, false, def_vec(d.regs),
           use_vec(a.regs), use_vec(b.regs), use_vec(c.regs));
    return d;
  }
  // The same, summing into `acc` in place (D and C the same registers): a loop's accumulator.
  template <MmaInputTag A, MmaInputTag B>
  requires MmaPair<A, B>
  void mma_accumulate(MmaAcc<MmaAccOf<A>>& acc, const MmaA<A>& a, const MmaB<B>& b) {
    mma_op(MmaElement<A>::kInput, MmaElement<B>::kInput, MmaAccOf<A>::kType, false,
           def_vec(acc.regs), use_vec(a.regs), use_vec(b.regs), use_vec(acc.regs));
  }
  // mma.sync.satfinite on 8-bit integers: the s32 sums clamp to [-2^31, 2^31 - 1].
  template <MmaIntTag A, MmaIntTag B>
  MmaAcc<S32> mma_satfinite(const MmaA<A>& a, const MmaB<B>& b, const MmaAcc<S32>& c) {
    MmaAcc<S32> d{};
    for (auto& r : d.regs) r = reg<S32>();
    mma_op(MmaElement<A>::kInput, MmaElement<B>::kInput, ScalarType::S32, true, def_vec(d.regs),
           use_vec(a.regs), use_vec(b.regs), use_vec(c.regs));
    return d;
  }
  // An accumulator of zeros (four movs).
  template <MmaAccTag T>
  MmaAcc<T> mma_zero() {
    MmaAcc<T> acc{};
    for (auto& r : acc.regs) r = mov<T>(0);
    return acc;
  }
  // ldmatrix: N (1, 2 or 4) 8×8 matrices of 16-bit elements from shared memory. Lane 8i + r
  // gives the 16-byte-aligned address of row r of matrix i; lane l receives, in register i,
  // row l/4's elements 2(l%4) and 2(l%4)+1 of matrix i (low half first): the A and B fragments
  // of an f16/bf16 mma. `.trans` gives the transposed matrices (column l/4's elements).
  template <int N, MemTag T>
  requires((N == 1 || N == 2 || N == 4) && T::kBytes == 2) Vec<B32, N> ldmatrix(SharedPtr<T> row) {
    return ldmatrix_n<N>(row, false);
  }
  template <int N, MemTag T>
  requires((N == 1 || N == 2 || N == 4) &&
           T::kBytes == 2) Vec<B32, N> ldmatrix_trans(SharedPtr<T> row) {
    return ldmatrix_n<N>(row, true);
  }
  // stmatrix (sm_90, PTX 7.8): ldmatrix's inverse, the fragments back into the rows the lanes'
  // addresses name.
  template <int N, MemTag T>
  requires((N == 1 || N == 2 || N == 4) && T::kBytes == 2) void stmatrix(SharedPtr<T> row,
                                                                         const Vec<B32, N>& v) {
    matrix_op(Op::Stmatrix, N, false, address(row), use_vec(v));
  }
  template <int N, MemTag T>
  requires((N == 1 || N == 2 || N == 4) &&
           T::kBytes == 2) void stmatrix_trans(SharedPtr<T> row, const Vec<B32, N>& v) {
    matrix_op(Op::Stmatrix, N, true, address(row), use_vec(v));
  }

  // Warpgroup products' ordering (sm_90a, PTX 8.0), every thread of the warp together:
  // wgmma.fence before a wgmma reads registers (its accumulators, an A fragment) written since;
  // wgmma.commit_group closes the thread's wgmma issued since the last one into a group;
  // wgmma.wait_group n waits until at most its newest n groups are pending.
  void wgmma_fence();
  void wgmma_commit_group();
  void wgmma_wait_group(std::uint32_t newest_pending);
  // wgmma.mma_async (sm_90a, PTX 8.0): the warpgroup of this warp (4 consecutive warps, warp
  // index / 4) computes D = A·B (+ D), A 64×K, B K×N, D 64×N in f32 (WgmmaAcc<N>, mma.hpp). A is
  // read through its descriptor from shared memory, or from registers (each warp's 16 rows, an
  // mma.sync A fragment); B from shared memory. The results land at a wgmma.wait_group that
  // covers its commit group: until then D (and A's registers) must not be touched, and
  // registers written since the last wgmma.fence must not be wgmma's operands.
  //   k.wgmma_mma_async<BF16>(acc, a_desc, b_desc, {.accumulate = k_step_not_first});
  template <WgmmaInputTag A, WgmmaInputTag B = A, int N>
  requires WgmmaPair<A, B>
  void wgmma_mma_async(WgmmaAcc<N>& d, const MatrixDescriptor& a, const MatrixDescriptor& b,
                       const WgmmaOptions& o = {}) {
    wgmma_op(MmaElement<A>::kInput, MmaElement<B>::kInput, N, def_vec(d.regs), use(a.bits),
             use(b.bits), o);
  }
  template <WgmmaInputTag A, WgmmaInputTag B = A, int N>
  requires WgmmaPair<A, B>
  void wgmma_mma_async(WgmmaAcc<N>& d, const MmaA<A>& a, const MatrixDescriptor& b,
                       const WgmmaOptions& o = {}) {
    wgmma_op(MmaElement<A>::kInput, MmaElement<B>::kInput, N, def_vec(d.regs), use_vec(a.regs),
             use(b.bits), o);
  }
  // A warpgroup accumulator's N/2 registers, unwritten: a product with accumulate = false
  // writes them first.
  template <int N>
  requires WgmmaN<N> WgmmaAcc<N> wgmma_acc() {
    WgmmaAcc<N> d{};
    for (auto& r : d.regs) r = reg<F32>("acc");
    return d;
  }
  // The matrix descriptor of the tile at `tile` with `layout` (mma.hpp's matrix_descriptor) in a
  // register: the address's bits (masked, shifted, widened) or'ed with the layout's constant ones.
  template <MemTag T>
  MatrixDescriptor matrix_descriptor(SharedPtr<T> tile, const MatrixLayout& layout) {
    return matrix_descriptor_op(tile.base, tile.offset, layout);
  }

  // ---- control flow ----
  Label label(std::string_view hint = "L");
  void bind(Label l);
  void bra(Label l, bool uniform = false);
  void bra_if(Pred p, Label l, bool negate = false);
  void ret();
  // Every instruction `body` emits is guarded by `@p` (or `@!p` when negate).
  void predicated(Pred p, const std::function<void()>& body, bool negate = false);
  void if_(Pred p, const std::function<void()>& then_body);
  void if_else(Pred p, const std::function<void()>& then_body,
               const std::function<void()>& else_body);
  // for (i = lo; i < hi; i += step) with run-time bounds, unsigned compare.
  void for_range(Src<U32> lo, Src<U32> hi, Src<U32> step,
                 const std::function<void(Reg<U32>)>& body);
  // while (cond()) body(): `cond` emits the test at the top of every trip; the body updates the
  // registers it reads (op(d, a, b) or mov(d, a) into them).
  void while_(const std::function<Pred()>& cond, const std::function<void()>& body);

  // ---- kernel attributes and contract ----
  void require_threads(std::uint32_t x);  // .reqntid x, 1, 1
  void max_threads(std::uint32_t x);      // .maxntid x, 1, 1
  // .maxnreg n: the register ceiling ptxas allocates up to. With .reqntid alone ptxas aims for an
  // occupancy of its own choosing and spills to reach it; a kernel that would rather use more
  // registers says how many it may.
  void max_registers(std::uint32_t n);
  std::uint32_t max_registers() const { return max_registers_; }  // 0: unset
  // .reqnctapercluster x, y, z: the kernel runs in clusters of this shape (at most
  // kMaxClusterCtas CTAs), recorded in the contract (sm_90).
  void require_cluster(Dim3 dims);
  // .explicitcluster: the kernel must be launched as clusters (sm_90).
  void explicit_cluster();
  // Everything is checked; afterwards the kernel accepts no more instructions.
  void finalize();
  bool finalized() const { return finalized_; }
  KernelContract contract() const;

  // ---- what consumers read ----
  const std::vector<Instr>& instructions() const { return body_; }
  const std::vector<ParamSpec>& params() const { return params_; }
  const std::vector<SharedDecl>& shared() const { return shared_; }
  std::uint32_t reg_count(RegClass c) const { return reg_counts_[static_cast<int>(c)]; }
  const std::string& reg_name(RegId id) const;  // the debug name, or empty
  std::string label_name(std::uint32_t id) const;

 private:
  template <TypeTag T>
  Operand def(Reg<T> r) {
    note_owner(r.kernel, r.kernel_id);
    Operand o;
    o.kind = Operand::Kind::Reg;
    o.reg = r.id;
    return o;
  }
  template <TypeTag T>
  Operand use(Reg<T> r) {
    return def(r);
  }
  template <TypeTag T>
  Operand use(const Src<T>& s) {
    if (s.op.kind == Operand::Kind::Reg) note_owner(s.kernel, s.kernel_id);
    return s.op;
  }
  template <class Regs>
  Operand def_vec(const Regs& regs) {
    Operand o;
    o.kind = Operand::Kind::Vec;
    for (const auto& r : regs) {
      note_owner(r.kernel, r.kernel_id);
      o.vec.push_back(r.id);
    }
    return o;
  }
  template <class Regs>
  Operand use_vec(const Regs& regs) {
    return def_vec(regs);
  }
  Operand tensor_address(const TensorMap& map, std::initializer_list<Reg<S32>> coords) {
    Operand o = use(map.address);
    o.kind = Operand::Kind::Addr;
    o.has_base = true;
    for (const Reg<S32>& c : coords) {
      note_owner(c.kernel, c.kernel_id);
      o.vec.push_back(c.id);
    }
    return o;
  }
  template <Space S, MemTag T>
  Operand address(const Ptr<S, T>& p) {
    note_owner(p.base.kernel, p.base.kernel_id);
    Operand o;
    o.kind = Operand::Kind::Addr;
    o.has_base = true;
    o.reg = p.base.id;
    o.offset = p.offset;
    return o;
  }

  template <TypeTag T>
  Reg<T> binary(Op op, Reg<T> a, SrcOf<T> b, MathMode m, MulMode mul = MulMode::None) {
    Reg<T> d = reg<T>();
    binary_into(op, d, a, b, m, mul);
    return d;
  }
  template <TypeTag T>
  void binary_into(Op op, Reg<T> d, Reg<T> a, SrcOf<T> b, MathMode m, MulMode mul = MulMode::None) {
    Instr in = make(op, T::kType);
    apply(in, m);
    in.mul = mul;
    in.ops = {def(d), use(a), use(b)};
    commit(std::move(in));
  }
  template <TypeTag T>
  void ternary_into(Op op, Reg<T> d, Reg<T> a, SrcOf<T> b, SrcOf<T> c, MathMode m, MulMode mul) {
    Instr in = make(op, T::kType);
    apply(in, m);
    in.mul = mul;
    in.ops = {def(d), use(a), use(b), use(c)};
    commit(std::move(in));
  }
  template <TypeTag T>
  Reg<T> unary(Op op, Reg<T> a, MathMode m) {
    Reg<T> d = reg<T>();
    Instr in = make(op, T::kType);
    apply(in, m);
    in.ops = {def(d), use(a)};
    commit(std::move(in));
    return d;
  }
  template <LogicTag T>
  Reg<T> shift(Op op, Reg<T> a, Src<U32> amount) {
    Reg<T> d = reg<T>();
    ScalarType t = T::kType;
    if (op == Op::Shl || is_unsigned_int(t)) t = bits_type(T::kBytes);
    Instr in = make(op, op == Op::Shr && is_unsigned_int(T::kType) ? T::kType : t);
    in.ops = {def(d), use(a), use(amount)};
    commit(std::move(in));
    return d;
  }

  template <TypeTag D>
  Reg<D> bits_op(Op op, ScalarType type, std::initializer_list<Operand> sources) {
    Reg<D> d = reg<D>();
    Instr in = make(op, type);
    in.ops = {def(d)};
    in.ops.insert(in.ops.end(), sources);
    commit(std::move(in));
    return d;
  }
  template <DotTag A, DotTag B>
  Reg<DotSum<A, B>> dot_op(Op op, Reg<A> a, Reg<B> b, SrcOf<DotSum<A, B>> c, bool high) {
    Reg<DotSum<A, B>> d = reg<DotSum<A, B>>();
    Instr in = make(op, A::kType);
    in.src_type = B::kType;
    in.high_half = high;
    in.ops = {def(d), use(a), use(b), use(c)};
    commit(std::move(in));
    return d;
  }

  template <TypeTag D>
  Reg<D> vote(VoteMode mode, Pred a, Src<B32> member) {
    Reg<D> d = reg<D>();
    Instr in = make(Op::Vote, D::kType);
    in.vote = mode;
    in.ops = {def(d), use(a), use(member)};
    commit(std::move(in));
    return d;
  }

  template <int N, MemTag T>
  Vec<B32, N> ldmatrix_n(SharedPtr<T> row, bool transpose) {
    Vec<B32, N> d;
    for (auto& r : d) r = reg<B32>();
    matrix_op(Op::Ldmatrix, N, transpose, def_vec(d), address(row));
    return d;
  }
  MatrixDescriptor matrix_descriptor_op(Reg<U32> base, std::int64_t offset,
                                        const MatrixLayout& layout);
  void mma_op(MmaInput a_type, MmaInput b_type, ScalarType acc, bool satfinite, Operand d,
              Operand a, Operand b, Operand c);
  void wgmma_op(MmaInput a_type, MmaInput b_type, int n, Operand d, Operand a, Operand b,
                const WgmmaOptions& o);
  void matrix_op(Op op, int count, bool transpose, Operand first, Operand second);

  void named_barrier(Op op, std::uint32_t barrier, std::uint32_t threads);
  void setmaxnreg(bool grow, std::uint32_t registers);
  Reg<U64> timer(Special s);

  static void apply(Instr& in, MathMode m) {
    in.precision = m.precision;
    in.rounding = m.rounding;
    in.ftz = m.ftz;
    in.sat = m.sat;
  }
  static Rounding default_cvt_rounding(ScalarType to, ScalarType from);
  std::uint32_t shfl_c_operand(const Instr& in, std::uint32_t width) const;

  Instr make(Op op, ScalarType type);
  void note_owner(const Kernel* owner, std::uint64_t owner_id);
  // Empty if a handle of kernel `owner_id` may be used here, else whose it is, in words.
  std::string foreign_owner(const Kernel* owner, std::uint64_t owner_id) const;
  void commit(Instr in);
  void memory_op(Op op, Space s, ScalarType t, MemHints h, Operand first, Operand second,
                 int width);
  void cvt_pair_op(ScalarType to, ScalarType from, bool satfinite, Operand d, Operand a);
  void atom_op(Op op, AtomOp atom, Space s, ScalarType t, AtomOrder order,
               std::vector<Operand> ops);
  void prefetch_op(Operand addr, PrefetchLevel level);
  void cp_async_bulk_op(Operand dst, Operand src, Operand bytes, Operand bar);
  void bulk_tensor_op(Op op, std::vector<Operand> ops);
  void mapa_op(Operand d, Operand a, Operand rank);
  void async_remote_op(Op op, ScalarType t, Operand addr, Operand v, Operand bar);
  void mbarrier_tx_op(Op op, Space s, Operand bar, Operand bytes);
  void cluster_attribute(const char* directive);
  Instr mbarrier_op(Op op, SharedPtr<B64> bar);
  void check_mbarrier_address(const Instr& in, const Operand& bar) const;
  void cp_async_op(Operand dst, Operand src, std::uint32_t bytes, std::optional<Operand> src_bytes,
                   MemHints h);
  RegId new_reg(RegClass c, std::string_view debug_name);
  std::string declare_param(std::string_view name, ScalarType type, bool pointer,
                            ScalarType element);
  std::string declare_shared(std::string_view name, std::uint32_t bytes, std::uint32_t align,
                             bool dynamic);
  Reg<U32> shared_base(const std::string& symbol);
  static Operand symbol_address(const std::string& symbol);
  [[noreturn]] void fail(const Instr& in, const std::string& problem) const;
  [[noreturn]] void fail(const std::string& what, const std::string& problem) const;

  Module* module_;
  std::uint64_t id_;
  std::string name_;
  std::vector<Instr> body_;
  std::vector<ParamSpec> params_;
  std::vector<SharedDecl> shared_;
  std::array<std::uint32_t, kRegClassCount> reg_counts_{};
  std::vector<std::pair<RegId, std::string>> reg_names_;
  std::vector<std::string> label_hints_;
  std::vector<bool> label_bound_;
  // Owners (address, id) of the operands of the instruction being built; `commit` checks them,
  // `fail` drops them.
  mutable std::vector<std::pair<const Kernel*, std::uint64_t>> pending_owners_;
  std::uint32_t block_threads_ = 0;
  bool block_required_ = false;
  std::uint32_t max_registers_ = 0;
  Dim3 cluster_{0, 0, 0};
  bool explicit_cluster_ = false;
  bool finalized_ = false;
  bool guarded_ = false;
  bool guard_negated_ = false;
  RegId guard_{};
};

}  // namespace ptxdsl
