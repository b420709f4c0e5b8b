// One exact expected line for every instruction form the DSL emits (asmjit's TEST_INSTRUCTION
// style): each row builds its instruction(s) into a kernel of its own, the text is compared line
// for line, and the whole table is assembled by ptxas for sm_80 and sm_90.
#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "support.hpp"

using namespace ptxdsl;
using Catch::Matchers::Contains;

namespace {

template <TypeTag T, std::size_t N>
std::array<Reg<T>, N> regs(Kernel& k) {
  std::array<Reg<T>, N> out;
  for (auto& r : out) r = k.reg<T>();
  return out;
}

// The registers every row may read. They are made in this order, so their names are fixed:
//   f32  a b c       %f1 %f2 %f3                 f64  d       %fd1..%fd3
//   f16  h           %rs1..%rs3                  bf16 bh      %rs4..%rs6
//   u16  us          %rs7 %rs8                   b16  b16     %rs9
//   u32  u           %r1..%r3                    s32  s       %r4..%r6
//   f16x2 h2         %r7..%r9                    bf16x2 bh2   %r10..%r12
//   b32  b32         %r13 %r14                   shared f32 pointer sp, base %r15
//   u64  ud          %rd1..%rd3                  s64  sd      %rd4 %rd5
//   b64  b64         %rd6 %rd7                   global f32 pointer gp, base %rd8
//   pred p           %p1 %p2
// The first register a row makes in a class is the next one: %f4, %fd4, %rs10, %r16, %rd9, %p3.
struct Fx {
  explicit Fx(Kernel& kernel) : k(kernel) {}
  Kernel& k;
  Reg<F32> a = k.reg<F32>(), b = k.reg<F32>(), c = k.reg<F32>();
  std::array<Reg<F64>, 3> d = regs<F64, 3>(k);
  std::array<Reg<F16>, 3> h = regs<F16, 3>(k);
  std::array<Reg<BF16>, 3> bh = regs<BF16, 3>(k);
  std::array<Reg<U16>, 2> us = regs<U16, 2>(k);
  Reg<B16> b16 = k.reg<B16>();
  std::array<Reg<U32>, 3> u = regs<U32, 3>(k);
  std::array<Reg<S32>, 3> s = regs<S32, 3>(k);
  std::array<Reg<F16x2>, 3> h2 = regs<F16x2, 3>(k);
  std::array<Reg<BF16x2>, 3> bh2 = regs<BF16x2, 3>(k);
  std::array<Reg<B32>, 2> b32 = regs<B32, 2>(k);
  SharedPtr<F32> sp{k.reg<U32>(), 0};
  std::array<Reg<U64>, 3> ud = regs<U64, 3>(k);
  std::array<Reg<S64>, 2> sd = regs<S64, 2>(k);
  std::array<Reg<B64>, 2> b64 = regs<B64, 2>(k);
  GlobalPtr<F32> gp{k.reg<U64>(), 0};
  std::array<Pred, 2> p = regs<PredT, 2>(k);
};

struct Row {
  std::string expected;  // the row's lines, '\n'-separated; `{k}` stands for the kernel's name
  std::function<void(Fx&)> emit;
  Arch min_arch = Arch::Sm80;
};

#define ROW(expected, ...)              \
  Row {                                 \
    expected, [](Fx& x) {               \
      [[maybe_unused]] Kernel& k = x.k; \
      __VA_ARGS__;                      \
    }                                   \
  }
#define ROW_SM90(expected, ...)             \
  Row {                                     \
    expected,                               \
        [](Fx& x) {                         \
          [[maybe_unused]] Kernel& k = x.k; \
          __VA_ARGS__;                      \
        },                                  \
        Arch::Sm90                          \
  }

std::vector<Row> moves() {
  return {
      ROW("mov.f32 %f4, 0f3F800000;", k.mov<F32>(1.0f)),
      ROW("mov.f32 %f4, 0f80000000;", k.mov<F32>(-0.0f)),
      ROW("mov.f32 %f4, 0f3DCCCCCD;", k.mov<F32>(0.1f)),
      ROW("mov.f32 %f4, 0f358637BD;", k.mov<F32>(1e-6f)),
      ROW("mov.f32 %f4, 0f00000001;", k.mov<F32>(std::numeric_limits<float>::denorm_min())),
      ROW("mov.f32 %f4, 0f7F800000;", k.mov<F32>(std::numeric_limits<float>::infinity())),
      ROW("mov.f32 %f4, 0fFF800000;", k.mov<F32>(-std::numeric_limits<float>::infinity())),
      ROW("mov.f32 %f4, 0f7FC00000;", k.mov<F32>(std::numeric_limits<float>::quiet_NaN())),
      ROW("mov.f32 %f4, 0f39000000;", k.mov<F32>(1.0 / 8192)),
      ROW("mov.f64 %fd4, 0d3FF0000000000000;", k.mov<F64>(1.0)),
      ROW("mov.f64 %fd4, 0d3FB999999999999A;", k.mov<F64>(0.1)),
      ROW("mov.b16 %rs10, 0x3C00;", k.mov<F16>(1.0f)),
      ROW("mov.b16 %rs10, 0x2E66;", k.mov<F16>(0.1f)),
      ROW("mov.b16 %rs10, 0x7BFF;", k.mov<F16>(65504.0f)),
      ROW("mov.b16 %rs10, 0x7C00;", k.mov<F16>(1e5f)),
      ROW("mov.b16 %rs10, 0x0002;", k.mov<F16>(1e-7f)),
      ROW("mov.b16 %rs10, 0xC000;", k.mov<F16>(-2.0f)),
      ROW("mov.b16 %rs10, 0x3F80;", k.mov<BF16>(1.0f)),
      ROW("mov.b16 %rs10, 0x3DCD;", k.mov<BF16>(0.1f)),
      ROW("mov.b16 %rs10, 0x3F80;", k.mov<BF16>(1.00390625f)),  // a tie rounds to even
      ROW("mov.b16 %rs10, 0x3F82;", k.mov<BF16>(1.01171875f)),
      ROW("mov.u16 %rs10, 7;", k.mov<U16>(7)),
      ROW("mov.b16 %rs10, 0x00FF;", k.mov<B16>(0xFF)),
      ROW("mov.u32 %r16, 42;", k.mov<U32>(42u)),
      ROW("mov.s32 %r16, -5;", k.mov<S32>(-5)),
      ROW("mov.s32 %r16, -2147483648;", k.mov<S32>(std::numeric_limits<std::int32_t>::min())),
      ROW("mov.b32 %r16, 0xFF;", k.mov<B32>(0xFFu)),
      ROW("mov.b32 %r16, 0x3C003C00;", k.mov<F16x2>(0x3C003C00u)),
      ROW("mov.u64 %rd9, 18446744073709551615;", k.mov<U64>(~0ull)),
      ROW("mov.s64 %rd9, -9223372036854775808;",
          k.mov<S64>(std::numeric_limits<std::int64_t>::min())),
      ROW("mov.b64 %rd9, 0xFFFFFFFFFFFFFFFF;", k.mov<B64>(~0ull)),
      ROW("mov.f32 %f4, %f1;", k.mov(x.a)),
      ROW("mov.f32 %f1, %f2;", k.mov(x.a, x.b)),
      ROW("mov.f32 %f1, 0f40000000;", k.mov(x.a, 2.0f)),
      ROW("mov.b16 %rs10, %rs1;", k.mov(x.h[0])),
      ROW("mov.b32 %r16, %r10;", k.mov(x.bh2[0])),
      ROW("mov.pred %p3, %p1;", k.mov(x.p[0])),
      ROW("mov.f32 %f4, 0f00000000;  // acc", k.mov(k.reg<F32>("acc"), 0.0f)),
      ROW("mov.b32 {%rs10, %rs11}, %r7;", k.unpack<F16>(x.h2[0])),
      ROW("mov.b32 {%rs10, %rs11}, %r10;", k.unpack<BF16>(x.bh2[0])),
      ROW("mov.b32 %r16, {%rs1, %rs2};", k.pack(x.h[0], x.h[1])),
      ROW("mov.b32 %r16, {%rs4, %rs5};", k.pack<BF16x2>(x.bh[0], x.bh[1])),
      ROW("mov.b32 %r16, %f1;", k.bitcast<U32>(x.a)),
      ROW("mov.b32 %f4, %r1;", k.bitcast<F32>(x.u[0])),
      ROW("mov.b64 %fd4, %rd1;", k.bitcast<F64>(x.ud[0])),
      ROW("mov.b16 %rs10, %rs7;", k.bitcast<BF16>(x.us[0])),
  };
}

std::vector<Row> specials() {
  std::vector<Row> rows = {
      ROW("mov.u32 %r16, %tid.x;", k.tid_x()),     ROW("mov.u32 %r16, %ntid.x;", k.ntid_x()),
      ROW("mov.u32 %r16, %ctaid.x;", k.ctaid_x()), ROW("mov.u32 %r16, %nctaid.x;", k.nctaid_x()),
      ROW("mov.u32 %r16, %laneid;", k.laneid()),   ROW("mov.u32 %r16, %warpid;", k.warpid()),
  };
  const std::pair<Special, const char*> all[] = {
      {Special::TidX, "%tid.x"},       {Special::TidY, "%tid.y"},
      {Special::TidZ, "%tid.z"},       {Special::NtidX, "%ntid.x"},
      {Special::NtidY, "%ntid.y"},     {Special::NtidZ, "%ntid.z"},
      {Special::CtaidX, "%ctaid.x"},   {Special::CtaidY, "%ctaid.y"},
      {Special::CtaidZ, "%ctaid.z"},   {Special::NctaidX, "%nctaid.x"},
      {Special::NctaidY, "%nctaid.y"}, {Special::NctaidZ, "%nctaid.z"},
      {Special::LaneId, "%laneid"},    {Special::WarpId, "%warpid"},
      {Special::NwarpId, "%nwarpid"},  {Special::SmId, "%smid"},
  };
  for (auto [special, name] : all) {
    rows.push_back({fmt::format("mov.u32 %r16, {};", name),
                    [special = special](Fx& x) { x.k.special(special); }});
  }
  return rows;
}

std::vector<Row> arithmetic() {
  return {
      // add / sub: every type, rounding, ftz, sat, immediates, and the write-into form
      ROW("add.f32 %f4, %f1, %f2;", k.add(x.a, x.b)),
      ROW("add.f32 %f4, %f1, 0f40000000;", k.add(x.a, 2.0f)),
      ROW("add.rn.f32 %f4, %f1, %f2;", k.add(x.a, x.b, kRn)),
      ROW("add.rz.f32 %f4, %f1, %f2;", k.add(x.a, x.b, kRz)),
      ROW("add.rm.f32 %f4, %f1, %f2;", k.add(x.a, x.b, kRm)),
      ROW("add.rp.f32 %f4, %f1, %f2;", k.add(x.a, x.b, kRp)),
      ROW("add.rn.ftz.sat.f32 %f4, %f1, %f2;",
          k.add(x.a, x.b, MathMode{Precision::Exact, Rounding::Rn, true, true})),
      ROW("add.f32 %f3, %f1, %f2;", k.add(x.c, x.a, x.b)),
      ROW("add.f64 %fd4, %fd1, %fd2;", k.add(x.d[0], x.d[1])),
      ROW("add.rz.f64 %fd4, %fd1, 0d3FF0000000000000;", k.add(x.d[0], 1.0, kRz)),
      ROW("add.f16 %rs10, %rs1, %rs2;", k.add(x.h[0], x.h[1])),
      ROW("add.rn.ftz.sat.f16 %rs10, %rs1, %rs2;",
          k.add(x.h[0], x.h[1], MathMode{Precision::Exact, Rounding::Rn, true, true})),
      ROW_SM90("add.bf16 %rs10, %rs4, %rs5;", k.add(x.bh[0], x.bh[1])),
      ROW_SM90("add.rn.bf16 %rs10, %rs4, %rs5;", k.add(x.bh[0], x.bh[1], kRn)),
      ROW("add.f16x2 %r16, %r7, %r8;", k.add(x.h2[0], x.h2[1])),
      ROW_SM90("add.bf16x2 %r16, %r10, %r11;", k.add(x.bh2[0], x.bh2[1])),
      ROW("add.u32 %r16, %r1, 1;", k.add(x.u[0], 1u)),
      ROW("add.s32 %r16, %r4, -1;", k.add(x.s[0], -1)),
      ROW("add.sat.s32 %r16, %r4, %r5;", k.add(x.s[0], x.s[1], MathMode{.sat = true})),
      ROW("add.u16 %rs10, %rs7, %rs8;", k.add(x.us[0], x.us[1])),
      ROW("add.u64 %rd9, %rd1, %rd2;", k.add(x.ud[0], x.ud[1])),
      ROW("add.s64 %rd9, %rd4, 8;", k.add(x.sd[0], 8)),
      ROW("sub.f32 %f4, %f1, %f2;", k.sub(x.a, x.b)),
      ROW("sub.rm.f32 %f4, %f1, 0f3F000000;", k.sub(x.a, 0.5f, kRm)),
      ROW("sub.f32 %f1, %f1, %f2;", k.sub(x.a, x.a, x.b)),
      ROW("sub.f64 %fd4, %fd1, %fd2;", k.sub(x.d[0], x.d[1])),
      ROW("sub.f16 %rs10, %rs1, %rs2;", k.sub(x.h[0], x.h[1])),
      ROW_SM90("sub.bf16 %rs10, %rs4, %rs5;", k.sub(x.bh[0], x.bh[1])),
      ROW("sub.s32 %r16, %r4, %r5;", k.sub(x.s[0], x.s[1])),
      ROW("sub.sat.s32 %r16, %r4, 1;", k.sub(x.s[0], 1, MathMode{.sat = true})),
      ROW("sub.u64 %rd9, %rd1, 16;", k.sub(x.ud[0], 16u)),
      // mul: floats; integers low, high and wide halves
      ROW("mul.f32 %f4, %f1, %f2;", k.mul(x.a, x.b)),
      ROW("mul.rn.ftz.f32 %f4, %f1, 0f39000000;",
          k.mul(x.a, 1.0f / 8192, MathMode{Precision::Exact, Rounding::Rn, true})),
      ROW("mul.f32 %f2, %f1, %f1;", k.mul(x.b, x.a, x.a)),
      ROW("mul.rz.f64 %fd4, %fd1, %fd2;", k.mul(x.d[0], x.d[1], kRz)),
      ROW("mul.f16 %rs10, %rs1, %rs2;", k.mul(x.h[0], x.h[1])),
      ROW("mul.rn.f16x2 %r16, %r7, %r8;", k.mul(x.h2[0], x.h2[1], kRn)),
      ROW_SM90("mul.bf16 %rs10, %rs4, %rs5;", k.mul(x.bh[0], x.bh[1])),
      ROW_SM90("mul.bf16x2 %r16, %r10, %r11;", k.mul(x.bh2[0], x.bh2[1])),
      ROW("mul.lo.u32 %r16, %r1, %r2;", k.mul(x.u[0], x.u[1])),
      ROW("mul.lo.s64 %rd9, %rd4, -3;", k.mul(x.sd[0], -3)),
      ROW("mul.lo.u16 %rs10, %rs7, 3;", k.mul(x.us[0], 3)),
      ROW("mul.hi.u32 %r16, %r1, %r2;", k.mul_hi(x.u[0], x.u[1])),
      ROW("mul.hi.s32 %r16, %r4, 7;", k.mul_hi(x.s[0], 7)),
      ROW("mul.hi.u64 %rd9, %rd1, %rd2;", k.mul_hi(x.ud[0], x.ud[1])),
      ROW("mul.wide.u32 %rd9, %r1, %r2;", k.mul_wide(x.u[0], x.u[1])),
      ROW("mul.wide.s32 %rd9, %r4, -4;", k.mul_wide(x.s[0], -4)),
      ROW("mul.wide.u16 %r16, %rs7, %rs8;", k.mul_wide(x.us[0], x.us[1])),
      // mad (integers) and fma (floats)
      ROW("mad.lo.u32 %r16, %r1, %r2, %r3;", k.mad(x.u[0], x.u[1], x.u[2])),
      ROW("mad.lo.s32 %r16, %r4, 3, -1;", k.mad(x.s[0], 3, -1)),
      ROW("mad.lo.u64 %rd9, %rd1, 4, %rd2;", k.mad(x.ud[0], 4u, x.ud[1])),
      ROW("mad.wide.u32 %rd9, %r1, 4, %rd1;", k.mad_wide(x.u[0], 4u, x.ud[0])),
      ROW("mad.wide.s32 %rd9, %r4, %r5, %rd4;", k.mad_wide(x.s[0], x.s[1], x.sd[0])),
      ROW("fma.rn.f32 %f4, %f1, %f2, %f3;", k.fma(x.a, x.b, x.c)),
      ROW("fma.rn.f32 %f4, %f1, 0f40000000, 0f3F000000;", k.fma(x.a, 2.0f, 0.5f)),
      ROW("fma.rn.f32 %f3, %f1, %f1, %f3;", k.fma(x.c, x.a, x.a, x.c)),
      ROW("fma.rz.f32 %f4, %f1, %f2, %f3;", k.fma(x.a, x.b, x.c, kRz)),
      ROW("fma.rm.ftz.sat.f32 %f4, %f1, %f2, %f3;",
          k.fma(x.a, x.b, x.c, MathMode{Precision::Exact, Rounding::Rm, true, true})),
      ROW("fma.rn.f64 %fd4, %fd1, %fd2, %fd3;", k.fma(x.d[0], x.d[1], x.d[2])),
      ROW("fma.rp.f64 %fd4, %fd1, %fd2, %fd3;", k.fma(x.d[0], x.d[1], x.d[2], kRp)),
      ROW("fma.rn.f16 %rs10, %rs1, %rs2, %rs3;", k.fma(x.h[0], x.h[1], x.h[2])),
      ROW("fma.rn.ftz.sat.f16 %rs10, %rs1, %rs2, %rs3;",
          k.fma(x.h[0], x.h[1], x.h[2], MathMode{Precision::Exact, Rounding::Rn, true, true})),
      ROW("fma.rn.bf16 %rs10, %rs4, %rs5, %rs6;", k.fma(x.bh[0], x.bh[1], x.bh[2])),
      ROW("fma.rn.f16x2 %r16, %r7, %r8, %r9;", k.fma(x.h2[0], x.h2[1], x.h2[2])),
      ROW("fma.rn.bf16x2 %r16, %r10, %r11, %r12;", k.fma(x.bh2[0], x.bh2[1], x.bh2[2])),
      // div and rem
      ROW("div.rn.f32 %f4, %f1, %f2;", k.div(x.a, x.b)),
      ROW("div.rz.f32 %f4, %f1, 0f40000000;", k.div(x.a, 2.0f, kRz)),
      ROW("div.approx.f32 %f4, %f1, %f2;", k.div(x.a, x.b, kApprox)),
      ROW("div.approx.ftz.f32 %f4, %f1, %f2;", k.div(x.a, x.b, kApproxFtz)),
      ROW("div.full.f32 %f4, %f1, %f2;", k.div(x.a, x.b, kFull)),
      ROW("div.rn.f64 %fd4, %fd1, %fd2;", k.div(x.d[0], x.d[1])),
      ROW("div.rm.f64 %fd4, %fd1, %fd2;", k.div(x.d[0], x.d[1], kRm)),
      ROW("div.u32 %r16, %r1, 3;", k.div(x.u[0], 3u)),
      ROW("div.s64 %rd9, %rd4, %rd5;", k.div(x.sd[0], x.sd[1])),
      ROW("rem.u32 %r16, %r1, 32;", k.rem(x.u[0], 32u)),
      ROW("rem.s32 %r16, %r4, %r5;", k.rem(x.s[0], x.s[1])),
      // min, max, abs, neg
      ROW("min.f32 %f4, %f1, %f2;", k.min(x.a, x.b)),
      ROW("max.ftz.f32 %f4, %f1, 0f00000000;", k.max(x.a, 0.0f, MathMode{.ftz = true})),
      ROW("min.f64 %fd4, %fd1, %fd2;", k.min(x.d[0], x.d[1])),
      ROW("max.f16 %rs10, %rs1, %rs2;", k.max(x.h[0], x.h[1])),
      ROW("min.ftz.f16x2 %r16, %r7, %r8;", k.min(x.h2[0], x.h2[1], MathMode{.ftz = true})),
      ROW("min.bf16 %rs10, %rs4, %rs5;", k.min(x.bh[0], x.bh[1])),
      ROW("max.bf16x2 %r16, %r10, %r11;", k.max(x.bh2[0], x.bh2[1])),
      ROW("min.u32 %r16, %r1, 255;", k.min(x.u[0], 255u)),
      ROW("max.s32 %r16, %r4, -1;", k.max(x.s[0], -1)),
      ROW("min.u16 %rs10, %rs7, %rs8;", k.min(x.us[0], x.us[1])),
      ROW("max.u64 %rd9, %rd1, %rd2;", k.max(x.ud[0], x.ud[1])),
      ROW("min.s64 %rd9, %rd4, %rd5;", k.min(x.sd[0], x.sd[1])),
      ROW("abs.f32 %f4, %f1;", k.abs(x.a)),
      ROW("abs.ftz.f32 %f4, %f1;", k.abs(x.a, MathMode{.ftz = true})),
      ROW("abs.f64 %fd4, %fd1;", k.abs(x.d[0])),
      ROW("abs.f16 %rs10, %rs1;", k.abs(x.h[0])),
      ROW("abs.bf16 %rs10, %rs4;", k.abs(x.bh[0])),
      ROW("abs.f16x2 %r16, %r7;", k.abs(x.h2[0])),
      ROW("abs.s32 %r16, %r4;", k.abs(x.s[0])),
      ROW("abs.s64 %rd9, %rd4;", k.abs(x.sd[0])),
      ROW("neg.f32 %f4, %f1;", k.neg(x.a)),
      ROW("neg.ftz.f32 %f4, %f1;", k.neg(x.a, MathMode{.ftz = true})),
      ROW("neg.f64 %fd4, %fd1;", k.neg(x.d[0])),
      ROW("neg.ftz.f16 %rs10, %rs1;", k.neg(x.h[0], MathMode{.ftz = true})),
      ROW("neg.bf16x2 %r16, %r10;", k.neg(x.bh2[0])),
      ROW("neg.s32 %r16, %r4;", k.neg(x.s[0])),
      ROW("neg.s64 %rd9, %rd4;", k.neg(x.sd[0])),
  };
}

std::vector<Row> logic() {
  return {
      ROW("and.b32 %r16, %r1, 31;", k.and_(x.u[0], 31u)),
      ROW("and.b32 %r16, %r4, %r5;", k.and_(x.s[0], x.s[1])),
      ROW("and.b16 %rs10, %rs9, 0x00FF;", k.and_(x.b16, 0xFF)),
      ROW("and.b64 %rd9, %rd6, 0xFFFF0000;", k.and_(x.b64[0], 0xFFFF0000u)),
      ROW("or.b32 %r16, %r13, %r14;", k.or_(x.b32[0], x.b32[1])),
      ROW("or.b64 %rd9, %rd1, %rd2;", k.or_(x.ud[0], x.ud[1])),
      ROW("xor.b32 %r16, %r1, 1;", k.xor_(x.u[0], 1u)),
      ROW("xor.b16 %rs10, %rs7, %rs8;", k.xor_(x.us[0], x.us[1])),
      ROW("not.b32 %r16, %r1;", k.not_(x.u[0])),
      ROW("not.b64 %rd9, %rd4;", k.not_(x.sd[0])),
      ROW("and.pred %p3, %p1, %p2;", k.and_(x.p[0], x.p[1])),
      ROW("or.pred %p3, %p1, %p2;", k.or_(x.p[0], x.p[1])),
      ROW("xor.pred %p3, %p1, %p2;", k.xor_(x.p[0], x.p[1])),
      ROW("not.pred %p3, %p1;", k.not_(x.p[0])),
      ROW("shl.b32 %r16, %r1, 2;", k.shl(x.u[0], 2u)),
      ROW("shl.b32 %r16, %r4, %r1;", k.shl(x.s[0], x.u[0])),
      ROW("shl.b64 %rd9, %rd1, 3;", k.shl(x.ud[0], 3u)),
      ROW("shl.b16 %rs10, %rs9, 8;", k.shl(x.b16, 8u)),
      ROW("shr.u32 %r16, %r1, 5;", k.shr(x.u[0], 5u)),
      ROW("shr.s32 %r16, %r4, %r1;", k.shr(x.s[0], x.u[0])),
      ROW("shr.b32 %r16, %r13, 1;", k.shr(x.b32[0], 1u)),
      ROW("shr.u16 %rs10, %rs7, 3;", k.shr(x.us[0], 3u)),
      ROW("shr.u64 %rd9, %rd1, 32;", k.shr(x.ud[0], 32u)),
      ROW("shr.s64 %rd9, %rd4, 63;", k.shr(x.sd[0], 63u)),
  };
}

std::vector<Row> special_functions() {
  return {
      ROW("rcp.rn.f32 %f4, %f1;", k.rcp(x.a)),
      ROW("rcp.rz.ftz.f32 %f4, %f1;", k.rcp(x.a, MathMode{Precision::Exact, Rounding::Rz, true})),
      ROW("rcp.approx.f32 %f4, %f1;", k.rcp(x.a, kApprox)),
      ROW("rcp.approx.ftz.f32 %f4, %f1;", k.rcp(x.a, kApproxFtz)),
      ROW("rcp.rn.f64 %fd4, %fd1;", k.rcp(x.d[0])),
      ROW("rcp.approx.ftz.f64 %fd4, %fd1;", k.rcp(x.d[0], kApproxFtz)),
      ROW("sqrt.rn.f32 %f4, %f1;", k.sqrt(x.a)),
      ROW("sqrt.approx.f32 %f4, %f1;", k.sqrt(x.a, kApprox)),
      ROW("sqrt.approx.ftz.f32 %f4, %f1;", k.sqrt(x.a, kApproxFtz)),
      ROW("sqrt.rp.f64 %fd4, %fd1;", k.sqrt(x.d[0], kRp)),
      ROW("rsqrt.approx.f32 %f4, %f1;", k.rsqrt(x.a)),
      ROW("rsqrt.approx.ftz.f32 %f4, %f1;", k.rsqrt(x.a, kApproxFtz)),
      ROW("rsqrt.approx.f64 %fd4, %fd1;", k.rsqrt(x.d[0])),
      ROW("rsqrt.approx.ftz.f64 %fd4, %fd1;", k.rsqrt(x.d[0], kApproxFtz)),
      ROW("ex2.approx.f32 %f4, %f1;", k.ex2(x.a)),
      ROW("ex2.approx.ftz.f32 %f4, %f1;", k.ex2(x.a, kApproxFtz)),
      ROW("ex2.approx.f16 %rs10, %rs1;", k.ex2(x.h[0])),
      ROW("ex2.approx.f16x2 %r16, %r7;", k.ex2(x.h2[0])),
      ROW_SM90("ex2.approx.ftz.bf16 %rs10, %rs4;", k.ex2(x.bh[0], kApproxFtz)),
      ROW_SM90("ex2.approx.ftz.bf16x2 %r16, %r10;", k.ex2(x.bh2[0], kApproxFtz)),
      ROW("lg2.approx.f32 %f4, %f1;", k.lg2(x.a)),
      ROW("lg2.approx.ftz.f32 %f4, %f1;", k.lg2(x.a, kApproxFtz)),
      ROW("tanh.approx.f32 %f4, %f1;", k.tanh(x.a)),
      ROW("tanh.approx.f16 %rs10, %rs1;", k.tanh(x.h[0])),
      ROW("tanh.approx.f16x2 %r16, %r7;", k.tanh(x.h2[0])),
      ROW_SM90("tanh.approx.bf16 %rs10, %rs4;", k.tanh(x.bh[0])),
      ROW_SM90("tanh.approx.bf16x2 %r16, %r10;", k.tanh(x.bh2[0])),
      ROW("sin.approx.f32 %f4, %f1;", k.sin(x.a)),
      ROW("sin.approx.ftz.f32 %f4, %f1;", k.sin(x.a, kApproxFtz)),
      ROW("cos.approx.f32 %f4, %f1;", k.cos(x.a)),
      ROW("cos.approx.ftz.f32 %f4, %f1;", k.cos(x.a, kApproxFtz)),
      ROW("copysign.f32 %f4, %f1, %f2;", k.copysign(x.a, x.b)),
      ROW("copysign.f32 %f4, %f1, 0f3F800000;", k.copysign(x.a, 1.0f)),
      ROW("copysign.f64 %fd4, %fd1, %fd2;", k.copysign(x.d[0], x.d[1])),
  };
}

struct CmpName {
  Cmp cmp;
  const char* name;
};
constexpr CmpName kOrdered[] = {{Cmp::Eq, "eq"}, {Cmp::Ne, "ne"}, {Cmp::Lt, "lt"},
                                {Cmp::Le, "le"}, {Cmp::Gt, "gt"}, {Cmp::Ge, "ge"}};
constexpr CmpName kUnsigned[] = {
    {Cmp::Lo, "lo"}, {Cmp::Ls, "ls"}, {Cmp::Hi, "hi"}, {Cmp::Hs, "hs"}};
constexpr CmpName kUnordered[] = {{Cmp::Equ, "equ"}, {Cmp::Neu, "neu"}, {Cmp::Ltu, "ltu"},
                                  {Cmp::Leu, "leu"}, {Cmp::Gtu, "gtu"}, {Cmp::Geu, "geu"},
                                  {Cmp::Num, "num"}, {Cmp::Nan, "nan"}};

std::vector<Row> comparisons() {
  std::vector<Row> rows;
  const auto add = [&](Cmp cmp, std::string expected, void (*emit)(Fx&, Cmp)) {
    rows.push_back({std::move(expected), [cmp, emit](Fx& x) { emit(x, cmp); }});
  };
  for (const CmpName& c : kOrdered) {
    add(c.cmp, fmt::format("setp.{}.f32 %p3, %f1, %f2;", c.name),
        [](Fx& x, Cmp cmp) { x.k.setp(cmp, x.a, x.b); });
    add(c.cmp, fmt::format("setp.{}.u32 %p3, %r1, %r2;", c.name),
        [](Fx& x, Cmp cmp) { x.k.setp(cmp, x.u[0], x.u[1]); });
    add(c.cmp, fmt::format("setp.{}.s32 %p3, %r4, -1;", c.name),
        [](Fx& x, Cmp cmp) { x.k.setp(cmp, x.s[0], -1); });
    add(c.cmp, fmt::format("setp.{}.f64 %p3, %fd1, %fd2;", c.name),
        [](Fx& x, Cmp cmp) { x.k.setp(cmp, x.d[0], x.d[1]); });
    add(c.cmp, fmt::format("setp.{}.f16 %p3, %rs1, %rs2;", c.name),
        [](Fx& x, Cmp cmp) { x.k.setp(cmp, x.h[0], x.h[1]); });
    add(c.cmp, fmt::format("setp.{}.u64 %p3, %rd1, %rd2;", c.name),
        [](Fx& x, Cmp cmp) { x.k.setp(cmp, x.ud[0], x.ud[1]); });
    add(c.cmp, fmt::format("setp.{}.s64 %p3, %rd4, %rd5;", c.name),
        [](Fx& x, Cmp cmp) { x.k.setp(cmp, x.sd[0], x.sd[1]); });
    add(c.cmp, fmt::format("setp.{}.u16 %p3, %rs7, %rs8;", c.name),
        [](Fx& x, Cmp cmp) { x.k.setp(cmp, x.us[0], x.us[1]); });
  }
  for (const CmpName& c : kUnsigned) {
    add(c.cmp, fmt::format("setp.{}.u32 %p3, %r1, %r2;", c.name),
        [](Fx& x, Cmp cmp) { x.k.setp(cmp, x.u[0], x.u[1]); });
    add(c.cmp, fmt::format("setp.{}.u64 %p3, %rd1, 0;", c.name),
        [](Fx& x, Cmp cmp) { x.k.setp(cmp, x.ud[0], 0u); });
  }
  for (const CmpName& c : kUnordered) {
    add(c.cmp, fmt::format("setp.{}.f32 %p3, %f1, %f2;", c.name),
        [](Fx& x, Cmp cmp) { x.k.setp(cmp, x.a, x.b); });
    add(c.cmp, fmt::format("setp.{}.f64 %p3, %fd1, %fd2;", c.name),
        [](Fx& x, Cmp cmp) { x.k.setp(cmp, x.d[0], x.d[1]); });
  }
  for (const CmpName& c : {kOrdered[0], kOrdered[1]}) {
    add(c.cmp, fmt::format("setp.{}.b32 %p3, %r13, %r14;", c.name),
        [](Fx& x, Cmp cmp) { x.k.setp(cmp, x.b32[0], x.b32[1]); });
    add(c.cmp, fmt::format("setp.{}.b16 %p3, %rs9, 0x0000;", c.name),
        [](Fx& x, Cmp cmp) { x.k.setp(cmp, x.b16, 0); });
    add(c.cmp, fmt::format("setp.{}.b64 %p3, %rd6, %rd7;", c.name),
        [](Fx& x, Cmp cmp) { x.k.setp(cmp, x.b64[0], x.b64[1]); });
  }
  std::vector<Row> more = {
      ROW("setp.gt.f32 %p3, %f1, 0f00000000;", k.setp(Cmp::Gt, x.a, 0.0f)),
      ROW("setp.lt.ftz.f32 %p3, %f1, %f2;", k.setp(Cmp::Lt, x.a, x.b, true)),
      ROW("setp.lt.ftz.f16 %p3, %rs1, %rs2;", k.setp(Cmp::Lt, x.h[0], x.h[1], true)),
      ROW_SM90("setp.lt.bf16 %p3, %rs4, %rs5;", k.setp(Cmp::Lt, x.bh[0], x.bh[1])),
      ROW("selp.f32 %f4, %f1, %f2, %p1;", k.selp(x.a, x.b, x.p[0])),
      ROW("selp.f32 %f4, 0f3F800000, %f1, %p2;", k.selp<F32>(1.0f, x.a, x.p[1])),
      ROW("selp.f32 %f4, %f1, 0f00000000, %p1;", k.selp(x.a, 0.0f, x.p[0])),
      ROW("selp.f64 %fd4, %fd1, %fd2, %p1;", k.selp(x.d[0], x.d[1], x.p[0])),
      ROW("selp.u32 %r16, %r1, 0, %p1;", k.selp(x.u[0], 0u, x.p[0])),
      ROW("selp.s64 %rd9, %rd4, -1, %p1;", k.selp(x.sd[0], -1, x.p[0])),
      ROW("selp.b16 %rs10, %rs1, %rs2, %p1;", k.selp(x.h[0], x.h[1], x.p[0])),
      ROW("selp.b16 %rs10, %rs4, 0x3F80, %p1;", k.selp(x.bh[0], 1.0f, x.p[0])),
      ROW("selp.b32 %r16, %r10, %r11, %p1;", k.selp(x.bh2[0], x.bh2[1], x.p[0])),
  };
  rows.insert(rows.end(), more.begin(), more.end());
  return rows;
}

std::vector<Row> conversions() {
  return {
      ROW("cvt.f32.f16 %f4, %rs1;", k.cvt<F32>(x.h[0])),
      ROW("cvt.ftz.f32.f16 %f4, %rs1;", k.cvt<F32>(x.h[0], Rounding::None, true)),
      ROW("cvt.f32.bf16 %f4, %rs4;", k.cvt<F32>(x.bh[0])),
      ROW("cvt.rn.f16.f32 %rs10, %f1;", k.cvt<F16>(x.a)),
      ROW("cvt.rz.f16.f32 %rs10, %f1;", k.cvt<F16>(x.a, Rounding::Rz)),
      ROW("cvt.rn.ftz.f16.f32 %rs10, %f1;", k.cvt<F16>(x.a, Rounding::Rn, true)),
      ROW("cvt.rn.bf16.f32 %rs10, %f1;", k.cvt<BF16>(x.a)),
      ROW("cvt.rz.bf16.f32 %rs10, %f1;", k.cvt<BF16>(x.a, Rounding::Rz)),
      ROW("cvt.f64.f32 %fd4, %f1;", k.cvt<F64>(x.a)),
      ROW("cvt.rn.f32.f64 %f4, %fd1;", k.cvt<F32>(x.d[0])),
      ROW("cvt.rm.f32.f64 %f4, %fd1;", k.cvt<F32>(x.d[0], Rounding::Rm)),
      ROW("cvt.rn.f16.f64 %rs10, %fd1;", k.cvt<F16>(x.d[0])),
      ROW("cvt.f64.f16 %fd4, %rs1;", k.cvt<F64>(x.h[0])),
      ROW("cvt.rni.f32.f32 %f4, %f1;", k.cvt<F32>(x.a, Rounding::Rni)),
      ROW("cvt.rzi.f64.f64 %fd4, %fd1;", k.cvt<F64>(x.d[0], Rounding::Rzi)),
      ROW("cvt.rmi.f16.f16 %rs10, %rs1;", k.cvt<F16>(x.h[0], Rounding::Rmi)),
      ROW("cvt.ftz.f32.f32 %f4, %f1;", k.cvt<F32>(x.a, Rounding::None, true)),
      ROW("cvt.sat.f32.f32 %f4, %f1;", k.cvt<F32>(x.a, Rounding::None, false, true)),
      ROW("cvt.rn.f32.u32 %f4, %r1;", k.cvt<F32>(x.u[0])),
      ROW("cvt.rm.f32.s32 %f4, %r4;", k.cvt<F32>(x.s[0], Rounding::Rm)),
      ROW("cvt.rn.f64.u64 %fd4, %rd1;", k.cvt<F64>(x.ud[0])),
      ROW("cvt.rn.f16.u32 %rs10, %r1;", k.cvt<F16>(x.u[0])),
      ROW("cvt.rzi.s32.f32 %r16, %f1;", k.cvt<S32>(x.a)),
      ROW("cvt.rni.u32.f32 %r16, %f1;", k.cvt<U32>(x.a, Rounding::Rni)),
      ROW("cvt.rmi.ftz.sat.s32.f32 %r16, %f1;", k.cvt<S32>(x.a, Rounding::Rmi, true, true)),
      ROW("cvt.rpi.s64.f64 %rd9, %fd1;", k.cvt<S64>(x.d[0], Rounding::Rpi)),
      ROW("cvt.rzi.s32.f16 %r16, %rs1;", k.cvt<S32>(x.h[0])),
      ROW("cvt.u64.u32 %rd9, %r1;", k.cvt<U64>(x.u[0])),
      ROW("cvt.s64.s32 %rd9, %r4;", k.cvt<S64>(x.s[0])),
      ROW("cvt.u64.s32 %rd9, %r4;", k.cvt<U64>(x.s[0])),
      ROW("cvt.u32.u64 %r16, %rd1;", k.cvt<U32>(x.ud[0])),
      ROW("cvt.u16.u32 %rs10, %r1;", k.cvt<U16>(x.u[0])),
      ROW("cvt.u32.u16 %r16, %rs7;", k.cvt<U32>(x.us[0])),
      ROW("cvt.sat.u32.s32 %r16, %r4;", k.cvt<U32>(x.s[0], Rounding::None, false, true)),
      ROW("cvt.f32.f16 %f1, %rs1;", k.cvt(x.a, x.h[0])),
      ROW_SM90("cvt.rn.f16.bf16 %rs10, %rs4;", k.cvt<F16>(x.bh[0])),
      ROW_SM90("cvt.rn.bf16.f16 %rs10, %rs1;", k.cvt<BF16>(x.h[0])),
      ROW_SM90("cvt.rn.bf16.f64 %rs10, %fd1;", k.cvt<BF16>(x.d[0])),
      ROW_SM90("cvt.f64.bf16 %fd4, %rs4;", k.cvt<F64>(x.bh[0])),
      ROW_SM90("cvt.rn.bf16.s32 %rs10, %r4;", k.cvt<BF16>(x.s[0])),
      ROW_SM90("cvt.rzi.s32.bf16 %r16, %rs4;", k.cvt<S32>(x.bh[0])),
      ROW_SM90("cvt.rni.bf16.bf16 %rs10, %rs4;", k.cvt<BF16>(x.bh[0], Rounding::Rni)),
      // two f32 into one pair: `hi` is the first source, `lo` lands at the lower address
      ROW("cvt.rn.f16x2.f32 %r16, %f2, %f1;", k.cvt_pack<F16x2>(x.a, x.b)),
      ROW("cvt.rz.bf16x2.f32 %r16, %f2, %f1;", k.cvt_pack<BF16x2>(x.a, x.b, Rounding::Rz)),
  };
}

std::vector<Row> memory() {
  return {
      // scalar loads: spaces, offsets folded into the address, hints
      ROW("ld.global.f32 %f4, [%rd8];", k.ld(x.gp)),
      ROW("ld.global.f32 %f4, [%rd8+12];", k.ld(x.gp + 3)),
      ROW("ld.global.f32 %f4, [%rd8+-4];", k.ld(x.gp - 1)),
      ROW("ld.global.f32 %f4, [%rd8+4096];", k.ld(x.gp + 1000 + 24)),
      ROW("ld.global.nc.f32 %f4, [%rd8];", k.ld(x.gp, kNc)),
      ROW("ld.global.nc.L1::no_allocate.f32 %f4, [%rd8];", k.ld(x.gp, kNcNoAllocate)),
      ROW("ld.global.L1::no_allocate.f32 %f4, [%rd8];", k.ld(x.gp, kNoAllocate)),
      ROW("ld.global.L1::evict_last.f32 %f4, [%rd8];", k.ld(x.gp, kEvictLast)),
      ROW("ld.global.nc.L1::evict_first.f32 %f4, [%rd8];",
          k.ld(x.gp, MemHints{.nc = true, .eviction = Eviction::L1EvictFirst})),
      ROW("ld.global.ca.f32 %f4, [%rd8];", k.ld(x.gp, MemHints{.cache = CacheOp::Ca})),
      ROW("ld.global.cg.f32 %f4, [%rd8];", k.ld(x.gp, MemHints{.cache = CacheOp::Cg})),
      ROW("ld.global.cs.f32 %f4, [%rd8];", k.ld(x.gp, kStreaming)),
      ROW("ld.global.lu.f32 %f4, [%rd8];", k.ld(x.gp, MemHints{.cache = CacheOp::Lu})),
      ROW("ld.global.cv.f32 %f4, [%rd8];", k.ld(x.gp, MemHints{.cache = CacheOp::Cv})),
      ROW("ld.global.cs.nc.f32 %f4, [%rd8];",
          k.ld(x.gp, MemHints{.nc = true, .cache = CacheOp::Cs})),
      ROW("ld.global.b16 %rs10, [%rd8+2];", k.ld(x.gp.as<F16>() + 1)),
      ROW("ld.global.b16 %rs10, [%rd8];", k.ld(x.gp.as<BF16>())),
      ROW("ld.global.u16 %rs10, [%rd8];", k.ld(x.gp.as<U16>())),
      ROW("ld.global.b32 %r16, [%rd8];", k.ld(x.gp.as<F16x2>())),
      ROW("ld.global.u32 %r16, [%rd8];", k.ld(x.gp.as<U32>())),
      ROW("ld.global.s32 %r16, [%rd8];", k.ld(x.gp.as<S32>())),
      ROW("ld.global.u64 %rd9, [%rd8];", k.ld(x.gp.as<U64>())),
      ROW("ld.global.f64 %fd4, [%rd8+8];", k.ld(x.gp.as<F64>() + 1)),
      ROW("ld.shared.f32 %f4, [%r15];", k.ld(x.sp)),
      ROW("ld.shared.f32 %f4, [%r15+8];", k.ld(x.sp + 2)),
      ROW("ld.shared.u32 %r16, [%r15];", k.ld(x.sp.as<U32>())),
      ROW("ld.shared.b16 %rs10, [%r15+6];", k.ld(x.sp.as<F16>() + 3)),
      // scalar stores
      ROW("st.global.f32 [%rd8], %f1;", k.st(x.gp, x.a)),
      ROW("st.global.f32 [%rd8+4], 0f3F800000;", k.st(x.gp + 1, 1.0f)),
      ROW("st.global.cs.f32 [%rd8], %f1;", k.st(x.gp, x.a, kStreaming)),
      ROW("st.global.wb.f32 [%rd8], %f1;", k.st(x.gp, x.a, MemHints{.cache = CacheOp::Wb})),
      ROW("st.global.cg.f32 [%rd8], %f1;", k.st(x.gp, x.a, MemHints{.cache = CacheOp::Cg})),
      ROW("st.global.wt.f32 [%rd8], %f1;", k.st(x.gp, x.a, MemHints{.cache = CacheOp::Wt})),
      ROW("st.global.L1::no_allocate.f32 [%rd8], %f1;", k.st(x.gp, x.a, kNoAllocate)),
      ROW("st.global.b16 [%rd8+2], %rs1;", k.st(x.gp.as<F16>() + 1, x.h[0])),
      ROW("st.global.b16 [%rd8], 0x3C00;", k.st(x.gp.as<F16>(), 1.0f)),
      ROW("st.global.u64 [%rd8+-8], %rd1;", k.st(x.gp.as<U64>() - 1, x.ud[0])),
      ROW("st.shared.f32 [%r15], %f1;", k.st(x.sp, x.a)),
      ROW("st.shared.u32 [%r15+16], 0;", k.st(x.sp.as<U32>() + 4, 0u)),
      // vectors: v2 and v4, up to 16 bytes
      ROW("ld.global.v4.f32 {%f4, %f5, %f6, %f7}, [%rd8];", k.ld_v<4>(x.gp)),
      ROW("ld.global.nc.v4.f32 {%f4, %f5, %f6, %f7}, [%rd8+16];", k.ld_v<4>(x.gp + 4, kNc)),
      ROW("ld.global.nc.L1::no_allocate.v4.f32 {%f4, %f5, %f6, %f7}, [%rd8+1024];",
          k.ld_v<4>(x.gp + 256, kNcNoAllocate)),
      ROW("ld.global.cs.v4.f32 {%f4, %f5, %f6, %f7}, [%rd8];", k.ld_v<4>(x.gp, kStreaming)),
      ROW("ld.global.v2.f32 {%f4, %f5}, [%rd8+8];", k.ld_v<2>(x.gp + 2)),
      ROW("ld.global.v4.b16 {%rs10, %rs11, %rs12, %rs13}, [%rd8+8];",
          k.ld_v<4>(x.gp.as<F16>() + 4)),
      ROW("ld.global.nc.v4.b32 {%r16, %r17, %r18, %r19}, [%rd8];",
          k.ld_v<4>(x.gp.as<BF16x2>(), kNc)),
      ROW("ld.global.v2.f64 {%fd4, %fd5}, [%rd8+16];", k.ld_v<2>(x.gp.as<F64>() + 2)),
      ROW("ld.global.v2.u64 {%rd9, %rd10}, [%rd8];", k.ld_v<2>(x.gp.as<U64>())),
      ROW("ld.shared.v4.f32 {%f4, %f5, %f6, %f7}, [%r15+32];", k.ld_v<4>(x.sp + 8)),
      ROW("ld.shared.v2.b32 {%r16, %r17}, [%r15];", k.ld_v<2>(x.sp.as<F16x2>())),
      ROW("ld.global.v4.f32 {%f4, %f5, %f6, %f7}, [%rd8];", k.ld_vec(x.gp, 4)),
      ROW("ld.global.v2.f32 {%f4, %f5}, [%rd8];", k.ld_vec(x.gp, 2)),
      ROW("st.global.v4.f32 [%rd8+16], {%f1, %f2, %f3, %f1};",
          k.st_v<4>(x.gp + 4, Vec<F32, 4>{x.a, x.b, x.c, x.a})),
      ROW("st.global.cs.v4.f32 [%rd8], {%f1, %f2, %f3, %f1};",
          k.st_v<4>(x.gp, Vec<F32, 4>{x.a, x.b, x.c, x.a}, kStreaming)),
      ROW("st.global.v2.b32 [%rd8], {%r7, %r8};",
          k.st_v<2>(x.gp.as<F16x2>(), Vec<F16x2, 2>{x.h2[0], x.h2[1]})),
      ROW("st.shared.v2.f32 [%r15+8], {%f1, %f2};", k.st_v<2>(x.sp + 2, Vec<F32, 2>{x.a, x.b})),
      ROW("st.global.v2.f32 [%rd8], {%f1, %f2};", k.st_vec(x.gp, std::vector{x.a, x.b})),
      ROW("ld.global.v4.f32 {%f4, %f5, %f6, %f7}, [%rd8];\n"
          "st.global.v4.f32 [%rd8+16], {%f4, %f5, %f6, %f7};",
          k.st_vec(x.gp + 4, k.ld_vec(x.gp, 4))),
      // predicated forms for masked tails
      ROW("mov.f32 %f4, 0f00000000;\n@%p1 ld.global.f32 %f4, [%rd8];", k.ld_if(x.p[0], x.gp, 0.0f)),
      ROW("mov.b16 %rs10, 0x0000;\n@%p1 ld.global.nc.b16 %rs10, [%rd8];",
          k.ld_if(x.p[0], x.gp.as<F16>(), 0.0f, kNc)),
      ROW("mov.f32 %f4, 0f00000000;\nmov.f32 %f5, 0f00000000;\nmov.f32 %f6, 0f00000000;\n"
          "mov.f32 %f7, 0f00000000;\n@%p1 ld.global.nc.v4.f32 {%f4, %f5, %f6, %f7}, [%rd8+16];",
          k.ld_v_if<4>(x.p[0], x.gp + 4, 0.0f, kNc)),
      ROW("mov.f32 %f4, 0fFF800000;\nmov.f32 %f5, 0fFF800000;\n"
          "@%p2 ld.shared.v2.f32 {%f4, %f5}, [%r15];",
          k.ld_v_if<2>(x.p[1], x.sp, -std::numeric_limits<float>::infinity())),
      ROW("@%p1 st.global.f32 [%rd8], %f1;", k.st_if(x.p[0], x.gp, x.a)),
      ROW("@%p1 st.global.cs.v4.f32 [%rd8], {%f1, %f2, %f3, %f1};",
          k.st_v_if<4>(x.p[0], x.gp, Vec<F32, 4>{x.a, x.b, x.c, x.a}, kStreaming)),
      ROW("@%p2 st.shared.v2.f32 [%r15], {%f1, %f2};",
          k.st_v_if<2>(x.p[1], x.sp, Vec<F32, 2>{x.a, x.b})),
      ROW("@%p1 add.f32 %f4, %f1, %f2;\n@%p1 st.global.f32 [%rd8], %f4;",
          k.predicated(x.p[0], [&] { k.st(x.gp, k.add(x.a, x.b)); })),
      ROW("@!%p1 mul.f32 %f4, %f1, %f2;", k.predicated(
                                              x.p[0], [&] { k.mul(x.a, x.b); }, true)),
      // atomics
      ROW("atom.global.add.f32 %f4, [%rd8], %f1;", k.atom_add(x.gp, x.a)),
      ROW("atom.global.add.f32 %f4, [%rd8+4], 0f3F800000;", k.atom_add(x.gp + 1, 1.0f)),
      ROW("red.global.add.f32 [%rd8], %f1;", k.red_add(x.gp, x.a)),
      ROW("red.global.add.f32 [%rd8+64], 0f40000000;", k.red_add(x.gp + 16, 2.0f)),
      ROW("atom.global.add.u32 %r16, [%rd8+8], 1;", k.atom_add(x.gp.as<U32>() + 2, 1u)),
      ROW("atom.global.add.u32 %r1, [%rd8], %r2;", k.atom_add(x.u[0], x.gp.as<U32>(), x.u[1])),
      ROW("atom.global.inc.u32 %r1, [%rd8+4], 7;", k.atom_inc(x.u[0], x.gp.as<U32>() + 1, 7u)),
      ROW("atom.global.inc.u32 %r1, [%rd8], %r2;", k.atom_inc(x.u[0], x.gp.as<U32>(), x.u[1])),
      ROW("fence.acq_rel.gpu;", k.fence_gpu()),
  };
}

std::vector<Row> addresses_and_params() {
  return {
      // run-time indices: one mad.wide (global) or mad.lo (shared); constants still fold after it
      ROW("mad.wide.u32 %rd9, %r1, 4, %rd8;", k.index(x.gp, x.u[0])),
      ROW("mad.wide.s32 %rd9, %r4, 4, %rd8;", k.index(x.gp, x.s[0])),
      ROW("mad.wide.u32 %rd9, %r1, 2, %rd8;", k.index(x.gp.as<F16>(), x.u[0])),
      ROW("mad.wide.u32 %rd9, %r1, 8, %rd8;", k.index(x.gp.as<F64>(), x.u[0])),
      ROW("mad.wide.u32 %rd9, %r1, 4, %rd8;\nld.global.nc.v4.f32 {%f4, %f5, %f6, %f7}, [%rd9+512];",
          k.ld_v<4>(k.index(x.gp, x.u[0]) + 128, kNc)),
      ROW("mad.wide.u32 %rd9, %r1, 4, %rd8;\nst.global.f32 [%rd9+12], %f1;",
          k.st(x.gp + 3 + x.u[0], x.a)),
      ROW("mad.lo.u32 %r16, %r1, 4, %r15;", k.index(x.sp, x.u[0])),
      ROW("mad.lo.u32 %r16, %r4, 2, %r15;", k.index(x.sp.as<BF16>(), x.s[0])),
      ROW("mad.wide.u32 %rd9, %r1, 32768, %rd8;", k.row(x.gp, x.u[0], 8192u)),
      ROW("mad.wide.u32 %rd9, %r1, 4294967294, %rd8;", k.row(x.gp.as<F16>(), x.u[0], 0x7FFFFFFFu)),
      ROW("mul.wide.u32 %rd9, %r1, 1073741824;\nmad.lo.u64 %rd10, %rd9, 4, %rd8;",
          k.row(x.gp, x.u[0], 1u << 30)),  // the row's bytes overflow 32 bits: multiply first
      ROW("mul.wide.u32 %rd9, %r1, %r2;\nmad.lo.u64 %rd10, %rd9, 2, %rd8;",
          k.row(x.gp.as<BF16>(), x.u[0], x.u[1])),
      // kernel parameters: scalars, and pointers converted to global addresses
      ROW("ld.param.f32 %f4, [eps];  // eps", k.param<F32>("eps")),
      ROW("ld.param.u32 %r16, [n];  // n", k.param<U32>("n")),
      ROW("ld.param.s64 %rd9, [stride];  // stride", k.param<S64>("stride")),
      ROW("ld.param.b16 %rs10, [scale];  // scale", k.param<BF16>("scale")),
      ROW("ld.param.b32 %r16, [pair];  // pair", k.param<F16x2>("pair")),
      ROW("ld.param.f64 %fd4, [alpha];  // alpha", k.param<F64>("alpha")),
      ROW("ld.param.u64 %rd9, [x];  // x\ncvta.to.global.u64 %rd10, %rd9;  // x",
          k.param_ptr<F32>("x")),
      ROW("ld.param.u64 %rd9, [y];  // y\ncvta.to.global.u64 %rd10, %rd9;  // y\n"
          "ld.global.b16 %rs10, [%rd10+6];",
          k.ld(k.param_ptr<F16>("y") + 3)),
      // shared memory: a static array and the dynamic one, by symbol
      ROW("mov.u32 %r16, {k}_buf;", k.shared_array<F32>("buf", 64)),
      ROW("mov.u32 %r16, {k}_dyn;", k.shared_dynamic<F32>("dyn", 4096)),
      ROW("mov.u32 %r16, {k}_tile;\nld.shared.v4.f32 {%f4, %f5, %f6, %f7}, [%r16+16];",
          k.ld_v<4>(k.shared_array<F32>("tile", 256) + 4)),
      ROW("mov.u32 %r16, {k}_part;\nmad.lo.u32 %r17, %r1, 4, %r16;\nst.shared.f32 [%r17], %f1;",
          k.st(k.shared_array<F32>("part", 32) + x.u[0], x.a)),
      ROW("bar.sync 0;", k.bar_sync()),
      ROW("bar.sync 15;", k.bar_sync(15)),
      // programmatic dependent launch
      ROW_SM90("griddepcontrol.launch_dependents;", k.griddep_launch_dependents()),
      ROW_SM90("griddepcontrol.wait;", k.griddep_wait()),
      // asynchronous copies into shared memory
      ROW("cp.async.cg.shared.global [%r15+16], [%rd8+32], 16;",
          k.cp_async(x.sp + 4, x.gp + 8, 16)),
      ROW("cp.async.ca.shared.global [%r15+8], [%rd8], 8;", k.cp_async(x.sp + 2, x.gp, 8)),
      ROW("cp.async.ca.shared.global [%r15], [%rd8+4], 4, %r1;",
          k.cp_async_zfill(x.sp, x.gp + 1, 4, x.u[0])),
      ROW("cp.async.cg.shared.global [%r15], [%rd8], 16, 6;", k.cp_async_zfill(x.sp, x.gp, 16, 6u)),
      ROW("cp.async.commit_group;", k.cp_async_commit()),
      ROW("cp.async.wait_group 0;", k.cp_async_wait(0)),
      ROW("cp.async.wait_group 2;", k.cp_async_wait(2)),
      // L2 cache policies, and the accesses that take them
      ROW("createpolicy.fractional.L2::evict_last.b64 %rd9, 0f3F800000;",
          k.create_policy(L2Evict::Last)),
      ROW("createpolicy.fractional.L2::evict_normal.L2::evict_first.b64 %rd9, 0f3F000000;",
          k.create_policy(L2Evict::Normal, 0.5f, L2Evict::First)),
      ROW("createpolicy.fractional.L2::evict_first.L2::evict_unchanged.b64 %rd9, 0f3E800000;",
          k.create_policy(L2Evict::First, 0.25f, L2Evict::Unchanged)),
      ROW("ld.global.L1::evict_last.L2::cache_hint.f32 %f4, [%rd8], %rd6;",
          k.ld(x.gp, MemHints{.eviction = Eviction::L1EvictLast, .l2_policy = x.b64[0]})),
      ROW("ld.global.nc.L1::evict_first.L2::cache_hint.L2::128B.v4.f32 {%f4, %f5, %f6, %f7}, "
          "[%rd8+16], %rd7;",
          k.ld_v<4>(x.gp + 4, MemHints{.nc = true,
                                       .eviction = Eviction::L1EvictFirst,
                                       .l2_policy = x.b64[1],
                                       .l2_prefetch = 128})),
      ROW("ld.global.cs.L2::256B.f32 %f4, [%rd8];",
          k.ld(x.gp, MemHints{.cache = CacheOp::Cs, .l2_prefetch = 256})),
      ROW("ld.global.L2::64B.b32 %r16, [%rd8];",
          k.ld(x.gp.as<F16x2>(), MemHints{.l2_prefetch = 64})),
      ROW("st.global.L2::cache_hint.f32 [%rd8+8], %f1, %rd6;",
          k.st(x.gp + 2, x.a, MemHints{.l2_policy = x.b64[0]})),
      ROW("st.global.cs.L2::cache_hint.v2.f32 [%rd8], {%f1, %f2}, %rd6;",
          k.st_v<2>(x.gp, Vec<F32, 2>{x.a, x.b},
                    MemHints{.cache = CacheOp::Cs, .l2_policy = x.b64[0]})),
      ROW("cp.async.cg.shared.global.L2::cache_hint [%r15], [%rd8], 16, %rd6;",
          k.cp_async(x.sp, x.gp, 16, MemHints{.l2_policy = x.b64[0]})),
      ROW("cp.async.ca.shared.global.L2::cache_hint.L2::256B [%r15], [%rd8], 8, %r1, %rd7;",
          k.cp_async_zfill(x.sp, x.gp, 8, x.u[0],
                           MemHints{.l2_policy = x.b64[1], .l2_prefetch = 256})),
      ROW("cp.async.cg.shared.global.L2::128B [%r15], [%rd8], 16;",
          k.cp_async(x.sp, x.gp, 16, MemHints{.l2_prefetch = 128})),
      ROW("@%p1 ld.global.L2::cache_hint.f32 %f4, [%rd8], %rd6;",
          k.predicated(x.p[0], [&] { k.ld(x.gp, MemHints{.l2_policy = x.b64[0]}); })),
      // prefetches: a line into L1 or L2, no register
      ROW("prefetch.global.L1 [%rd8+16];", k.prefetch(x.gp + 4, PrefetchLevel::L1)),
      ROW("prefetch.global.L2 [%rd8];", k.prefetch(x.gp.as<F16x2>(), PrefetchLevel::L2)),
      ROW("prefetch.global.L2::evict_last [%rd8+-8];",
          k.prefetch(x.gp - 2, PrefetchLevel::L2EvictLast)),
      ROW("prefetch.global.L2::evict_normal [%rd8];",
          k.prefetch(x.gp, PrefetchLevel::L2EvictNormal)),
      ROW("@%p1 prefetch.global.L1 [%rd8];", k.prefetch_if(x.p[0], x.gp, PrefetchLevel::L1)),
  };
}

std::vector<Row> warp() {
  return {
      ROW("shfl.sync.bfly.b32 %f4, %f1, 16, 0x1F, 0xFFFFFFFF;", k.shfl_bfly(x.a, 16)),
      ROW("shfl.sync.bfly.b32 %f4, %f1, 4, 0x181F, 0xFFFFFFFF;", k.shfl_bfly(x.a, 4, 8)),
      ROW("shfl.sync.bfly.b32 %r16, %r1, 1, 0x1F1F, 0xFFFFFFFF;", k.shfl_bfly(x.u[0], 1, 1)),
      ROW("shfl.sync.down.b32 %r16, %r1, 1, 0x1F, 0xFFFFFFFF;", k.shfl_down(x.u[0], 1)),
      ROW("shfl.sync.down.b32 %f4, %f1, 2, 0x101F, 0xFFFFFFFF;", k.shfl_down(x.a, 2, 16)),
      ROW("shfl.sync.up.b32 %f4, %f1, 1, 0x0, 0xFFFFFFFF;", k.shfl_up(x.a, 1)),
      ROW("shfl.sync.up.b32 %r16, %r4, 8, 0x1000, 0xFFFFFFFF;", k.shfl_up(x.s[0], 8, 16)),
      ROW("shfl.sync.idx.b32 %f4, %f1, %r1, 0x1F, 0xFFFFFFFF;", k.shfl_idx(x.a, x.u[0])),
      ROW("shfl.sync.idx.b32 %r16, %r7, 0, 0x1C1F, 0xFFFFFFFF;", k.shfl_idx(x.h2[0], 0u, 4)),
      ROW("shfl.sync.bfly.b32 %r16, %r10, 1, 0x1F, 0xFFFF;",
          k.shfl(ShflMode::Bfly, x.bh2[0], 1u, 32, 0x0000FFFFu)),
      ROW("shfl.sync.down.b32 %r16, %r13, %r1, 0x1F, 0xFFFFFFFF;",
          k.shfl(ShflMode::Down, x.b32[0], x.u[0])),
      ROW("shfl.sync.bfly.b32 %f4, %f1, 16, 0x1F, 0xFFFFFFFF;\n"
          "add.f32 %f5, %f1, %f4;\n"
          "shfl.sync.bfly.b32 %f6, %f5, 8, 0x1F, 0xFFFFFFFF;\n"
          "add.f32 %f7, %f5, %f6;\n"
          "shfl.sync.bfly.b32 %f8, %f7, 4, 0x1F, 0xFFFFFFFF;\n"
          "add.f32 %f9, %f7, %f8;\n"
          "shfl.sync.bfly.b32 %f10, %f9, 2, 0x1F, 0xFFFFFFFF;\n"
          "add.f32 %f11, %f9, %f10;\n"
          "shfl.sync.bfly.b32 %f12, %f11, 1, 0x1F, 0xFFFFFFFF;\n"
          "add.f32 %f13, %f11, %f12;",
          warp_reduce_sum(k, x.a)),
      ROW("shfl.sync.bfly.b32 %f4, %f1, 4, 0x181F, 0xFFFFFFFF;\n"
          "max.f32 %f5, %f1, %f4;\n"
          "shfl.sync.bfly.b32 %f6, %f5, 2, 0x181F, 0xFFFFFFFF;\n"
          "max.f32 %f7, %f5, %f6;\n"
          "shfl.sync.bfly.b32 %f8, %f7, 1, 0x181F, 0xFFFFFFFF;\n"
          "max.f32 %f9, %f7, %f8;",
          warp_reduce_max(k, x.a, 8)),
  };
}

std::vector<Row> control_flow() {
  return {
      ROW("$L__top_0:\nbra $L__top_0;",
          {
            Label top = k.label("top");
            k.bind(top);
            k.bra(top);
          }),
      ROW("bra.uni $L__next_0;\n$L__next_0:",
          {
            Label next = k.label("next");
            k.bra(next, true);
            k.bind(next);
          }),
      ROW("@%p1 bra $L__skip_0;\nadd.f32 %f4, %f1, %f2;\n$L__skip_0:",
          {
            Label skip = k.label("skip");
            k.bra_if(x.p[0], skip);
            k.add(x.a, x.b);
            k.bind(skip);
          }),
      ROW("@!%p2 bra $L__L_0;\n$L__L_0:",
          {
            Label l = k.label();
            k.bra_if(x.p[1], l, true);
            k.bind(l);
          }),
      ROW("ret;", k.ret()),
      ROW("@!%p1 bra $L__endif_0;\nadd.f32 %f4, %f1, %f2;\n$L__endif_0:",
          k.if_(x.p[0], [&] { k.add(x.a, x.b); })),
      ROW("@!%p1 bra $L__else_0;\nadd.f32 %f4, %f1, %f2;\nbra $L__endif_1;\n$L__else_0:\n"
          "sub.f32 %f5, %f1, %f2;\n$L__endif_1:",
          k.if_else(
              x.p[0], [&] { k.add(x.a, x.b); }, [&] { k.sub(x.a, x.b); })),
      ROW("mov.u32 %r16, 0;\n"
          "$L__loop_0:\n"
          "setp.ge.u32 %p3, %r16, %r1;\n"
          "@%p3 bra $L__loop_end_1;\n"
          "mad.wide.u32 %rd9, %r16, 4, %rd8;\n"
          "st.global.f32 [%rd9], %f1;\n"
          "add.u32 %r16, %r16, 1;\n"
          "bra $L__loop_0;\n"
          "$L__loop_end_1:",
          k.for_range(0u, x.u[0], 1u, [&](Reg<U32> i) { k.st(k.index(x.gp, i), x.a); })),
      ROW("mov.u32 %r16, %r2;\n"
          "$L__loop_0:\n"
          "setp.ge.u32 %p3, %r16, 1024;\n"
          "@%p3 bra $L__loop_end_1;\n"
          "add.u32 %r16, %r16, %r3;\n"
          "bra $L__loop_0;\n"
          "$L__loop_end_1:",
          k.for_range(x.u[1], 1024u, x.u[2], [](Reg<U32>) {})),
      ROW("$L__while_0:\n"
          "setp.lt.u32 %p3, %r1, 100;\n"
          "@!%p3 bra $L__while_end_1;\n"
          "add.u32 %r1, %r1, %r2;\n"
          "bra $L__while_0;\n"
          "$L__while_end_1:",
          k.while_([&] { return k.setp(Cmp::Lt, x.u[0], 100u); },
                   [&] { k.add(x.u[0], x.u[0], x.u[1]); })),
  };
}

std::vector<Row> bits() {
  return {
      ROW("popc.b32 %r16, %r1;", k.popc(x.u[0])),
      ROW("popc.b64 %r16, %rd1;", k.popc(x.ud[0])),
      ROW("clz.b32 %r16, %r13;", k.clz(x.b32[0])),
      ROW("clz.b64 %r16, %rd6;", k.clz(x.b64[0])),
      ROW("brev.b32 %r16, %r4;", k.brev(x.s[0])),
      ROW("brev.b64 %rd9, %rd1;", k.brev(x.ud[0])),
      ROW("bfind.u32 %r16, %r1;", k.bfind(x.u[0])),
      ROW("bfind.s32 %r16, %r4;", k.bfind(x.s[0])),
      ROW("bfind.shiftamt.u64 %r16, %rd1;", k.bfind(x.ud[0], true)),
      ROW("bfind.shiftamt.s64 %r16, %rd4;", k.bfind(x.sd[0], true)),
      ROW("bfe.u32 %r16, %r1, 8, 4;", k.bfe(x.u[0], 8u, 4u)),
      ROW("bfe.s32 %r16, %r4, %r1, %r2;", k.bfe(x.s[0], x.u[0], x.u[1])),
      ROW("bfe.u64 %rd9, %rd1, %r1, 16;", k.bfe(x.ud[0], x.u[0], 16u)),
      ROW("bfe.s64 %rd9, %rd4, 40, 8;", k.bfe(x.sd[0], 40u, 8u)),
      ROW("bfi.b32 %r16, %r13, %r14, 4, 8;", k.bfi(x.b32[0], x.b32[1], 4u, 8u)),
      ROW("bfi.b32 %r16, %r1, 0, %r2, %r3;", k.bfi(x.u[0], 0u, x.u[1], x.u[2])),
      ROW("bfi.b64 %rd9, %rd6, %rd7, %r1, 12;", k.bfi(x.b64[0], x.b64[1], x.u[0], 12u)),
      ROW("prmt.b32 %r16, %r1, %r2, 12816;", k.prmt(x.u[0], x.u[1], 0x3210u)),
      ROW("prmt.b32 %r16, %r13, %r14, %r3;", k.prmt(x.b32[0], x.b32[1], x.u[2])),
      ROW("lop3.b32 %r16, %r1, %r2, %r3, 0xEA;", k.lop3(x.u[0], x.u[1], x.u[2], 0xEA)),
      ROW("lop3.b32 %r16, %r13, 0xFF, %r14, 0x96;", k.lop3(x.b32[0], 0xFFu, x.b32[1], 0x96)),
      ROW("shf.l.wrap.b32 %r16, %r1, %r2, %r3;", k.shf(Funnel::LeftWrap, x.u[0], x.u[1], x.u[2])),
      ROW("shf.l.clamp.b32 %r16, %r1, %r2, 8;", k.shf(Funnel::LeftClamp, x.u[0], x.u[1], 8u)),
      ROW("shf.r.wrap.b32 %r16, %r13, %r14, %r1;",
          k.shf(Funnel::RightWrap, x.b32[0], x.b32[1], x.u[0])),
      ROW("shf.r.clamp.b32 %r16, %r4, %r5, 40;", k.shf(Funnel::RightClamp, x.s[0], x.s[1], 40u)),
      ROW("dp4a.u32.u32 %r16, %r1, %r2, %r3;", k.dp4a(x.u[0], x.u[1], x.u[2])),
      ROW("dp4a.s32.u32 %r16, %r4, %r1, %r5;", k.dp4a(x.s[0], x.u[0], x.s[1])),
      ROW("dp4a.u32.s32 %r16, %r1, %r4, 0;", k.dp4a(x.u[0], x.s[0], 0)),
      ROW("dp4a.s32.s32 %r16, %r4, %r5, -7;", k.dp4a(x.s[0], x.s[1], -7)),
      ROW("dp2a.lo.u32.u32 %r16, %r1, %r2, %r3;", k.dp2a(x.u[0], x.u[1], x.u[2])),
      ROW("dp2a.hi.s32.u32 %r16, %r4, %r1, %r5;", k.dp2a(x.s[0], x.u[0], x.s[1], true)),
  };
}

std::vector<Row> warp_collectives() {
  return {
      ROW("vote.sync.all.pred %p3, %p1, 0xFFFFFFFF;", k.vote_all(x.p[0])),
      ROW("vote.sync.any.pred %p3, %p2, 0xFFFF;", k.vote_any(x.p[1], 0xFFFFu)),
      ROW("vote.sync.uni.pred %p3, %p1, %r13;", k.vote_uni(x.p[0], x.b32[0])),
      ROW("vote.sync.ballot.b32 %r16, %p1, 0xFFFFFFFF;", k.vote_ballot(x.p[0])),
      ROW("match.any.sync.b32 %r16, %r1, 0xFFFFFFFF;", k.match_any(x.u[0])),
      ROW("match.any.sync.b64 %r16, %rd1, %r13;", k.match_any(x.ud[0], x.b32[0])),
      ROW("match.all.sync.b32 %r16|%p3, %f1, 0xFFFFFFFF;", k.match_all(x.a)),
      ROW("match.all.sync.b64 %r16|%p3, %rd4, 0xFF;", k.match_all(x.sd[0], 0xFFu)),
      ROW("redux.sync.add.u32 %r16, %r1, 0xFFFFFFFF;", k.redux(ReduxOp::Add, x.u[0])),
      ROW("redux.sync.add.s32 %r16, %r4, 0xFFFFFFFF;", k.redux(ReduxOp::Add, x.s[0])),
      ROW("redux.sync.min.u32 %r16, %r1, %r13;", k.redux(ReduxOp::Min, x.u[0], x.b32[0])),
      ROW("redux.sync.min.s32 %r16, %r4, 0xFFFFFFFF;", k.redux(ReduxOp::Min, x.s[0])),
      ROW("redux.sync.max.u32 %r16, %r1, 0xFFFFFFFF;", k.redux(ReduxOp::Max, x.u[0])),
      ROW("redux.sync.max.s32 %r16, %r4, 0xFFFF0000;", k.redux(ReduxOp::Max, x.s[0], 0xFFFF0000u)),
      ROW("redux.sync.and.b32 %r16, %r1, 0xFFFFFFFF;", k.redux(ReduxOp::And, x.u[0])),
      ROW("redux.sync.or.b32 %r16, %r4, 0xFFFFFFFF;", k.redux(ReduxOp::Or, x.s[0])),
      ROW("redux.sync.xor.b32 %r16, %r13, 0xFFFFFFFF;", k.redux(ReduxOp::Xor, x.b32[0])),
      ROW("activemask.b32 %r16;", k.activemask()),
  };
}

std::vector<Row> scheduling() {
  return {
      ROW("bar.sync 0;", k.bar_sync()),
      ROW("bar.sync 1, 64;", k.bar_sync(1, 64)),
      ROW("bar.sync 15, 1024;", k.bar_sync(15, 1024)),
      ROW("bar.arrive 2, 128;", k.bar_arrive(2, 128)),
      ROW("nanosleep.u32 100;", k.nanosleep(100u)),
      ROW("nanosleep.u32 %r1;", k.nanosleep(x.u[0])),
      ROW("mov.u64 %rd9, %clock64;", k.clock64()),
      ROW("mov.u64 %rd9, %globaltimer;", k.globaltimer()),
  };
}

// The packed 16-bit float forms of every arithmetic family, each at its oldest target.
std::vector<Row> packed() {
  return {
      ROW("add.f16x2 %r16, %r7, %r8;", k.add(x.h2[0], x.h2[1])),
      ROW("add.rn.ftz.sat.f16x2 %r16, %r7, %r8;",
          k.add(x.h2[0], x.h2[1], MathMode{Precision::Exact, Rounding::Rn, true, true})),
      ROW_SM90("add.rn.bf16x2 %r16, %r10, %r11;", k.add(x.bh2[0], x.bh2[1], kRn)),
      ROW("sub.f16x2 %r16, %r7, %r8;", k.sub(x.h2[0], x.h2[1])),
      ROW("sub.rn.ftz.f16x2 %r16, %r7, %r8;",
          k.sub(x.h2[0], x.h2[1], MathMode{Precision::Exact, Rounding::Rn, true})),
      ROW_SM90("sub.bf16x2 %r16, %r10, %r11;", k.sub(x.bh2[0], x.bh2[1])),
      ROW("mul.f16x2 %r16, %r7, %r8;", k.mul(x.h2[0], x.h2[1])),
      ROW("mul.ftz.sat.f16x2 %r16, %r7, %r8;",
          k.mul(x.h2[0], x.h2[1], MathMode{.ftz = true, .sat = true})),
      ROW_SM90("mul.rn.bf16x2 %r16, %r10, %r11;", k.mul(x.bh2[0], x.bh2[1], kRn)),
      ROW("fma.rn.ftz.sat.f16x2 %r16, %r7, %r8, %r9;",
          k.fma(x.h2[0], x.h2[1], x.h2[2], MathMode{Precision::Exact, Rounding::Rn, true, true})),
      ROW("fma.rn.bf16x2 %r16, %r10, %r11, %r12;", k.fma(x.bh2[0], x.bh2[1], x.bh2[2])),
      ROW("min.f16x2 %r16, %r7, %r8;", k.min(x.h2[0], x.h2[1])),
      ROW("max.ftz.f16x2 %r16, %r7, %r8;", k.max(x.h2[0], x.h2[1], MathMode{.ftz = true})),
      ROW("min.bf16x2 %r16, %r10, %r11;", k.min(x.bh2[0], x.bh2[1])),
      ROW("max.bf16x2 %r16, %r10, %r11;", k.max(x.bh2[0], x.bh2[1])),
      ROW("neg.f16x2 %r16, %r7;", k.neg(x.h2[0])),
      ROW("neg.ftz.f16x2 %r16, %r7;", k.neg(x.h2[0], MathMode{.ftz = true})),
      ROW("neg.bf16x2 %r16, %r10;", k.neg(x.bh2[0])),
      ROW("abs.f16x2 %r16, %r7;", k.abs(x.h2[0])),
      ROW("abs.ftz.f16x2 %r16, %r7;", k.abs(x.h2[0], MathMode{.ftz = true})),
      ROW("abs.bf16x2 %r16, %r10;", k.abs(x.bh2[0])),
      ROW("neg.bf16 %rs10, %rs4;", k.neg(x.bh[0])),
      ROW("ex2.approx.f16x2 %r16, %r7;", k.ex2(x.h2[0])),
      ROW_SM90("ex2.approx.ftz.bf16x2 %r16, %r10;", k.ex2(x.bh2[0], kApproxFtz)),
  };
}

std::vector<Row> operators() {
  return {
      ROW("add.f32 %f4, %f1, %f2;", x.a + x.b),
      ROW("sub.f32 %f4, %f1, 0f3F800000;", x.a - 1.0f),
      ROW("mul.f32 %f4, %f1, %f2;", x.a * x.b),
      ROW("mul.lo.u32 %r16, %r1, 4;", x.u[0] * 4u),
      ROW("add.s64 %rd9, %rd4, -8;", x.sd[0] + -8),
      ROW("and.b32 %r16, %r1, 31;", x.u[0] & 31u),
      ROW("or.b32 %r16, %r1, %r2;", x.u[0] | x.u[1]),
      ROW("xor.b64 %rd9, %rd1, %rd2;", x.ud[0] ^ x.ud[1]),
      ROW("shl.b32 %r16, %r1, 2;", x.u[0] << 2u),
      ROW("shr.u32 %r16, %r1, 5;", x.u[0] >> 5u),
      ROW("shr.s32 %r16, %r4, 1;", x.s[0] >> 1u),
      ROW("setp.lt.f32 %p3, %f1, %f2;", x.a < x.b),
      ROW("setp.le.f32 %p3, %f1, 0f00000000;", x.a <= 0.0f),
      ROW("setp.gt.u32 %p3, %r1, 10;", x.u[0] > 10u),
      ROW("setp.ge.s32 %p3, %r4, %r5;", x.s[0] >= x.s[1]),
      ROW("setp.eq.u32 %p3, %r1, 0;", x.u[0] == 0u),
      ROW("setp.ne.u64 %p3, %rd1, %rd2;", x.ud[0] != x.ud[1]),
      ROW("mad.wide.u32 %rd9, %r1, 4, %rd8;", x.gp + x.u[0]),
      ROW("mad.lo.u32 %r16, %r1, 4, %r15;", x.sp + x.u[0]),
      ROW("and.pred %p3, %p1, %p2;", x.p[0] && x.p[1]),
      ROW("or.pred %p3, %p1, %p2;", x.p[0] || x.p[1]),
      ROW("not.pred %p3, %p1;", !x.p[0]),
  };
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

void check_table(const std::vector<Row>& table, const char* family) {
  for (Arch arch : test::kArches) {
    Module m(arch);
    for (std::size_t i = 0; i < table.size(); ++i) {
      const Row& row = table[i];
      Kernel& k = m.kernel(fmt::format("{}_{}", family, i));
      Fx fx(k);
      const std::string expected = replace_all(row.expected, "{k}", k.name());
      INFO(arch_name(arch) << ", " << family << " row " << i << ": " << expected);
      if (arch < row.min_arch) {
        CHECK_THAT(test::error_of([&] { row.emit(fx); }), Contains("kernel '" + k.name() + "'") &&
                                                              Contains("needs sm_90 or newer") &&
                                                              Contains("the module targets sm_80"));
        continue;
      }
      row.emit(fx);
      CHECK(test::body_text(k) == expected);
    }
    test::require_assembles(m);
  }
}

}  // namespace

TEST_CASE("mov with bit-exact immediates and special registers", "[dsl][instructions]") {
  check_table(moves(), "mov");
  check_table(specials(), "special");
}

TEST_CASE("arithmetic: add sub mul mad fma div rem min max abs neg", "[dsl][instructions]") {
  check_table(arithmetic(), "arith");
}

TEST_CASE("logic and shifts", "[dsl][instructions]") {
  check_table(logic(), "logic");
}

TEST_CASE("bits: popc clz brev bfind bfe bfi prmt lop3 shf dp4a dp2a", "[dsl][instructions]") {
  check_table(bits(), "bits");
}

TEST_CASE("warp collectives: vote match redux activemask", "[dsl][instructions]") {
  check_table(warp_collectives(), "collective");
}

TEST_CASE("scheduling: named barriers, nanosleep, clock64, globaltimer", "[dsl][instructions]") {
  check_table(scheduling(), "sched");
}

TEST_CASE("rcp sqrt rsqrt ex2 lg2 tanh sin cos copysign with explicit precision",
          "[dsl][instructions]") {
  check_table(special_functions(), "sfu");
}

TEST_CASE("packed f16x2 and bf16x2 arithmetic at its oldest target", "[dsl][instructions]") {
  check_table(packed(), "packed");
}

TEST_CASE("setp with every comparison and selp", "[dsl][instructions]") {
  check_table(comparisons(), "setp");
}

TEST_CASE("cvt between the types with their rounding", "[dsl][instructions]") {
  check_table(conversions(), "cvt");
}

TEST_CASE("ld and st: spaces and vectors and hints and predicated forms and atomics",
          "[dsl][instructions]") {
  check_table(memory(), "mem");
}

TEST_CASE("addresses and parameters and shared memory", "[dsl][instructions]") {
  check_table(addresses_and_params(), "addr");
}

TEST_CASE("warp shuffles and warp reductions", "[dsl][instructions]") {
  check_table(warp(), "warp");
}

TEST_CASE("labels and branches and structured control flow", "[dsl][instructions]") {
  check_table(control_flow(), "flow");
}

TEST_CASE("operators emit exactly one instruction each", "[dsl][instructions]") {
  check_table(operators(), "op");
}

// Every cvt pair the DSL can name either assembles or, where sm_80 lacks it, is refused when it
// is built, naming the target it needs.
TEST_CASE("every cvt pair assembles or is refused for the target", "[dsl][instructions]") {
  for (Arch arch : test::kArches) {
    Module m(arch);
    Kernel& k = m.kernel("cvt_pairs");
    Fx x(k);
    const auto from_all = [&](auto to_tag) {
      using To = decltype(to_tag);
      const auto one = [&](auto source) {
        const std::string message = [&]() -> std::string {
          try {
            k.cvt<To>(source);
          } catch (const Error& e) {
            return e.what();
          }
          return {};
        }();
        if (!message.empty()) {
          INFO(message);
          CHECK(arch == Arch::Sm80);
          CHECK_THAT(message, Contains("needs sm_90 or newer"));
        }
      };
      one(x.us[0]);
      one(x.u[0]);
      one(x.ud[0]);
      one(x.s[0]);
      one(x.sd[0]);
      one(x.h[0]);
      one(x.bh[0]);
      one(x.a);
      one(x.d[0]);
    };
    from_all(U16{});
    from_all(U32{});
    from_all(U64{});
    from_all(S32{});
    from_all(S64{});
    from_all(F16{});
    from_all(BF16{});
    from_all(F32{});
    from_all(F64{});
    CHECK(k.instructions().size() >= (arch == Arch::Sm90 ? 81u : 60u));
    test::require_assembles(m);
  }
}

// Hopper's mbarriers and bulk copies need PTX 8.0 for expect_tx, the bulk copy and the init fence:
// their own table, assembled for sm_90 at PTX 8.0.
TEST_CASE("mbarriers and bulk copies: exact lines, assembled for sm_90 at PTX 8.0",
          "[dsl][instructions]") {
  const std::vector<Row> table = {
      ROW("mbarrier.init.shared.b64 [%r15], 1;", k.mbarrier_init(x.sp.as<B64>(), 1u)),
      ROW("mbarrier.init.shared.b64 [%r15+8], %r1;", k.mbarrier_init(x.sp.as<B64>() + 1, x.u[0])),
      ROW("fence.mbarrier_init.release.cluster;", k.fence_mbarrier_init()),
      ROW("mbarrier.arrive.shared::cta.b64 _, [%r15];", k.mbarrier_arrive(x.sp.as<B64>())),
      ROW("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r15+16], 4096;",
          k.mbarrier_arrive_expect_tx(x.sp.as<B64>() + 2, 4096u)),
      ROW("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r15], %r2;",
          k.mbarrier_arrive_expect_tx(x.sp.as<B64>(), x.u[1])),
      ROW("$L__mbarrier_wait_0:\n"
          "mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r15], %r1;\n"
          "@!%p3 bra $L__mbarrier_wait_0;",
          k.mbarrier_wait(x.sp.as<B64>(), x.u[0])),
      ROW("$L__mbarrier_wait_0:\n"
          "mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r15+8], 1;\n"
          "@!%p3 bra $L__mbarrier_wait_0;",
          k.mbarrier_wait(x.sp.as<B64>() + 1, 1u)),
      ROW("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r15+16], "
          "[%rd8+32], 512, [%r15];",
          k.cp_async_bulk(x.sp + 4, x.gp + 8, 512u, x.sp.as<B64>())),
      ROW("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r15], [%rd8], "
          "%r3, [%r15+8];",
          k.cp_async_bulk(x.sp, x.gp, x.u[2], x.sp.as<B64>() + 1)),
  };
  Module m(Arch::Sm90, {8, 0});
  for (std::size_t i = 0; i < table.size(); ++i) {
    Kernel& k = m.kernel(fmt::format("tma_{}", i));
    Fx fx(k);
    INFO("row " << i << ": " << table[i].expected);
    table[i].emit(fx);
    CHECK(test::body_text(k) == table[i].expected);
  }
  test::require_assembles(m);
}

// elect.sync came with sm_90 and PTX 8.0: its rows assembled for sm_90 at PTX 8.0.
TEST_CASE("elect.sync: exact lines, assembled for sm_90 at PTX 8.0", "[dsl][instructions]") {
  const std::vector<Row> table = {
      ROW("elect.sync %r16|%p3, 0xFFFFFFFF;", k.elect_sync()),
      ROW("elect.sync %r16|%p3, %r13;", k.elect_sync(x.b32[0])),
  };
  Module m(Arch::Sm90, {8, 0});
  for (std::size_t i = 0; i < table.size(); ++i) {
    Kernel& k = m.kernel(fmt::format("elect_{}", i));
    Fx fx(k);
    INFO("row " << i << ": " << table[i].expected);
    table[i].emit(fx);
    CHECK(test::body_text(k) == table[i].expected);
  }
  test::require_assembles(m);
}

namespace {

// Atomics and fences: every operation on its types, both spaces, the orders and scopes.
std::vector<Row> atomics() {
  constexpr AtomOrder kCtaRelaxed{MemSem::Relaxed, Scope::Cta};
  return {
      ROW("atom.global.add.s32 %r16, [%rd8], %r4;", k.atom(AtomOp::Add, x.gp.as<S32>(), x.s[0])),
      ROW("atom.shared.add.u32 %r16, [%r15+4], 1;", k.atom(AtomOp::Add, x.sp.as<U32>() + 1, 1u)),
      ROW("atom.global.add.u64 %rd9, [%rd8], %rd1;", k.atom(AtomOp::Add, x.gp.as<U64>(), x.ud[0])),
      ROW("atom.shared.add.f32 %f4, [%r15], %f1;", k.atom(AtomOp::Add, x.sp, x.a)),
      ROW("atom.global.add.f64 %fd4, [%rd8], %fd1;", k.atom(AtomOp::Add, x.gp.as<F64>(), x.d[0])),
      ROW("atom.global.add.noftz.f16x2 %r16, [%rd8], %r7;",
          k.atom(AtomOp::Add, x.gp.as<F16x2>(), x.h2[0])),
      ROW("atom.shared.add.noftz.f16x2 %r16, [%r15], %r7;",
          k.atom(AtomOp::Add, x.sp.as<F16x2>(), x.h2[0])),
      ROW_SM90("atom.global.add.noftz.bf16x2 %r16, [%rd8], %r10;",
               k.atom(AtomOp::Add, x.gp.as<BF16x2>(), x.bh2[0])),
      ROW("red.shared.add.noftz.f16x2 [%r15], %r7;", k.red(AtomOp::Add, x.sp.as<F16x2>(), x.h2[0])),
      ROW_SM90("red.global.add.noftz.bf16x2 [%rd8], %r10;",
               k.red(AtomOp::Add, x.gp.as<BF16x2>(), x.bh2[0])),
      ROW("red.global.add.u32 [%rd8], %r1;", k.red(AtomOp::Add, x.gp.as<U32>(), x.u[0])),
      ROW("atom.global.min.u32 %r16, [%rd8], %r1;", k.atom(AtomOp::Min, x.gp.as<U32>(), x.u[0])),
      ROW("atom.shared.min.s32 %r16, [%r15], %r4;", k.atom(AtomOp::Min, x.sp.as<S32>(), x.s[0])),
      ROW("atom.global.max.u64 %rd9, [%rd8], %rd1;", k.atom(AtomOp::Max, x.gp.as<U64>(), x.ud[0])),
      ROW("atom.global.max.s64 %rd9, [%rd8], %rd4;", k.atom(AtomOp::Max, x.gp.as<S64>(), x.sd[0])),
      ROW("red.shared.max.s32 [%r15], -3;", k.red(AtomOp::Max, x.sp.as<S32>(), -3)),
      ROW("atom.global.and.b32 %r16, [%rd8], %r1;", k.atom(AtomOp::And, x.gp.as<U32>(), x.u[0])),
      ROW("atom.shared.or.b32 %r16, [%r15], %r13;", k.atom(AtomOp::Or, x.sp.as<B32>(), x.b32[0])),
      ROW("atom.global.xor.b64 %rd9, [%rd8], %rd6;", k.atom(AtomOp::Xor, x.gp.as<B64>(), x.b64[0])),
      ROW("red.global.or.b32 [%rd8], 255;", k.red(AtomOp::Or, x.gp.as<U32>(), 255u)),
      ROW("atom.global.exch.b32 %r16, [%rd8], %r1;", k.atom(AtomOp::Exch, x.gp.as<U32>(), x.u[0])),
      ROW("atom.shared.exch.b64 %rd9, [%r15], %rd1;",
          k.atom(AtomOp::Exch, x.sp.as<U64>(), x.ud[0])),
      ROW("atom.global.cas.b32 %r16, [%rd8], %r1, %r2;",
          k.atom_cas(x.gp.as<U32>(), x.u[0], x.u[1])),
      ROW("atom.shared.cas.b64 %rd9, [%r15+8], %rd1, 0;",
          k.atom_cas(x.sp.as<U64>() + 1, x.ud[0], std::uint64_t{0})),
      ROW("atom.shared.inc.u32 %r16, [%r15], 15;", k.atom(AtomOp::Inc, x.sp.as<U32>(), 15u)),
      ROW("atom.global.dec.u32 %r16, [%rd8], %r1;", k.atom(AtomOp::Dec, x.gp.as<U32>(), x.u[0])),
      ROW("red.global.dec.u32 [%rd8], 9;", k.red(AtomOp::Dec, x.gp.as<U32>(), 9u)),
      // orders and scopes
      ROW("atom.relaxed.cta.shared.add.u32 %r16, [%r15], %r1;",
          k.atom(AtomOp::Add, x.sp.as<U32>(), x.u[0], kCtaRelaxed)),
      ROW("atom.acquire.gpu.global.add.u32 %r16, [%rd8], %r1;",
          k.atom(AtomOp::Add, x.gp.as<U32>(), x.u[0], {MemSem::Acquire, Scope::Gpu})),
      ROW("atom.release.sys.global.exch.b32 %r16, [%rd8], %r1;",
          k.atom(AtomOp::Exch, x.gp.as<U32>(), x.u[0], {MemSem::Release, Scope::Sys})),
      ROW("atom.acq_rel.global.cas.b32 %r16, [%rd8], %r1, %r2;",
          k.atom_cas(x.gp.as<U32>(), x.u[0], x.u[1], {MemSem::AcqRel})),
      ROW("atom.sys.global.add.f32 %f4, [%rd8], %f1;",
          k.atom(AtomOp::Add, x.gp, x.a, {.scope = Scope::Sys})),
      ROW_SM90("atom.acq_rel.cluster.global.add.u32 %r16, [%rd8], %r1;",
               k.atom(AtomOp::Add, x.gp.as<U32>(), x.u[0], {MemSem::AcqRel, Scope::Cluster})),
      ROW("red.release.gpu.global.add.u32 [%rd8], %r1;",
          k.red(AtomOp::Add, x.gp.as<U32>(), x.u[0], {MemSem::Release, Scope::Gpu})),
      ROW("red.relaxed.cta.shared.add.u32 [%r15], 1;",
          k.red(AtomOp::Add, x.sp.as<U32>(), 1u, kCtaRelaxed)),
      ROW_SM90("mapa.shared::cluster.u32 %r16, %r15, 1;\n"
               "atom.shared::cluster.add.u32 %r17, [%r16], %r1;",
               k.atom(AtomOp::Add, k.mapa(x.sp.as<U32>(), 1u), x.u[0])),
      // fences
      ROW("fence.sc.cta;", k.fence(MemSem::Sc, Scope::Cta)),
      ROW("fence.sc.gpu;", k.fence(MemSem::Sc, Scope::Gpu)),
      ROW("fence.sc.sys;", k.fence(MemSem::Sc, Scope::Sys)),
      ROW("fence.acq_rel.cta;", k.fence(MemSem::AcqRel, Scope::Cta)),
      ROW("fence.acq_rel.gpu;", k.fence(MemSem::AcqRel, Scope::Gpu)),
      ROW("fence.acq_rel.sys;", k.fence(MemSem::AcqRel, Scope::Sys)),
      ROW_SM90("fence.sc.cluster;", k.fence(MemSem::Sc, Scope::Cluster)),
      ROW_SM90("fence.acq_rel.cluster;", k.fence_cluster()),
  };
}

}  // namespace

TEST_CASE("atomics and fences: atom red fence in every operation, space and order",
          "[dsl][instructions]") {
  check_table(atomics(), "atomics");
}

// setmaxnreg exists on sm_90a only: its rows assembled for sm_90a at PTX 8.0.
TEST_CASE("setmaxnreg: exact lines, assembled for sm_90a at PTX 8.0", "[dsl][instructions]") {
  const std::vector<Row> table = {
      ROW("setmaxnreg.inc.sync.aligned.u32 232;", k.setmaxnreg_inc(232)),
      ROW("setmaxnreg.dec.sync.aligned.u32 40;", k.setmaxnreg_dec(40)),
  };
  Module m(Arch::Sm90a, {8, 0});
  for (std::size_t i = 0; i < table.size(); ++i) {
    Kernel& k = m.kernel(fmt::format("setmaxnreg_{}", i));
    Fx fx(k);
    INFO("row " << i << ": " << table[i].expected);
    table[i].emit(fx);
    CHECK(test::body_text(k) == table[i].expected);
  }
  test::require_assembles(m);
}

namespace {

// An mma row's fragments, made in this order: A %r16..%r19, B %r20 %r21, C %f4..%f7 (f32) or
// %r22..%r25 (s32); the result D is next: %f8..%f11 or %r26..%r29.
template <MmaInputTag A, MmaInputTag B = A>
struct Frags {
  MmaA<A> a;
  MmaB<B> b;
  MmaAcc<MmaAccOf<A>> c;
};
template <MmaInputTag A, MmaInputTag B = A>
Frags<A, B> frags(Kernel& k) {
  return {MmaA<A>{regs<B32, 4>(k)}, MmaB<B>{regs<B32, 2>(k)},
          MmaAcc<MmaAccOf<A>>{regs<MmaAccOf<A>, 4>(k)}};
}

template <MmaInputTag A, MmaInputTag B = A>
void mma_of(Kernel& k) {
  const Frags<A, B> f = frags<A, B>(k);
  k.mma(f.a, f.b, f.c);
}

// The rows of one target and PTX version, in one module assembled by ptxas.
void check_rows_at(const std::vector<Row>& table, Arch arch, PtxVersion version,
                   const char* family) {
  Module m(arch, version);
  for (std::size_t i = 0; i < table.size(); ++i) {
    Kernel& k = m.kernel(fmt::format("{}_{}", family, i));
    Fx fx(k);
    INFO(arch_name(arch) << ", " << family << " row " << i << ": " << table[i].expected);
    table[i].emit(fx);
    CHECK(test::body_text(k) == table[i].expected);
  }
  test::require_assembles(m);
}

constexpr const char* kF32Frags =
    "{%f8, %f9, %f10, %f11}, {%r16, %r17, %r18, %r19}, {%r20, %r21}, {%f4, %f5, %f6, %f7};";
constexpr const char* kS32Frags =
    "{%r26, %r27, %r28, %r29}, {%r16, %r17, %r18, %r19}, {%r20, %r21}, {%r22, %r23, %r24, %r25};";

std::string line(const char* mnemonic, const char* operands) {
  return fmt::format("{} {}", mnemonic, operands);
}

}  // namespace

TEST_CASE("tensor cores: mma.sync and ldmatrix at sm_80, stmatrix at sm_90, FP8 mma at sm_89",
          "[dsl][instructions]") {
  const std::vector<Row> sm80 = {
      Row{line("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", kF32Frags),
          [](Fx& x) { mma_of<F16>(x.k); }},
      Row{line("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", kF32Frags),
          [](Fx& x) { mma_of<BF16>(x.k); }},
      Row{line("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", kF32Frags),
          [](Fx& x) { mma_of<TF32>(x.k); }},
      Row{line("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", kS32Frags),
          [](Fx& x) { mma_of<S8>(x.k); }},
      Row{line("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32", kS32Frags),
          [](Fx& x) { mma_of<U8, S8>(x.k); }},
      Row{line("mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32", kS32Frags),
          [](Fx& x) {
            const Frags<S8, U8> f = frags<S8, U8>(x.k);
            x.k.mma_satfinite(f.a, f.b, f.c);
          }},
      Row{"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f4, %f5, %f6, %f7}, {%r16, "
          "%r17, %r18, %r19}, {%r20, %r21}, {%f4, %f5, %f6, %f7};",
          [](Fx& x) {
            Frags<BF16> f = frags<BF16>(x.k);
            x.k.mma_accumulate(f.c, f.a, f.b);
          }},
      ROW("mov.f32 %f4, 0f00000000;\nmov.f32 %f5, 0f00000000;\nmov.f32 %f6, 0f00000000;\n"
          "mov.f32 %f7, 0f00000000;",
          k.mma_zero<F32>()),
      ROW("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r16}, [%r15];",
          k.ldmatrix<1>(x.sp.as<F16>())),
      ROW("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r16, %r17}, [%r15+32];",
          k.ldmatrix_trans<2>(x.sp.as<BF16>() + 16)),
      ROW("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r16, %r17, %r18, %r19}, [%r15+64];",
          k.ldmatrix<4>(x.sp.as<B16>() + 32)),
      ROW("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%r16, %r17, %r18, %r19}, [%r15];",
          k.ldmatrix_trans<4>(x.sp.as<F16>())),
  };
  check_rows_at(sm80, Arch::Sm80, {7, 8}, "tc80");
  check_rows_at(sm80, Arch::Sm90, {7, 8}, "tc90");
  const std::vector<Row> sm90 = {
      ROW("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%r15], {%r13};",
          k.stmatrix<1>(x.sp.as<F16>(), Vec<B32, 1>{x.b32[0]})),
      ROW("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%r15+16], {%r13, %r14};",
          k.stmatrix_trans<2>(x.sp.as<BF16>() + 8, Vec<B32, 2>{x.b32[0], x.b32[1]})),
      ROW("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r15], {%r13, %r14, %r13, %r14};",
          k.stmatrix<4>(x.sp.as<F16>(), Vec<B32, 4>{x.b32[0], x.b32[1], x.b32[0], x.b32[1]})),
  };
  check_rows_at(sm90, Arch::Sm90, {7, 8}, "st90");
  const std::vector<Row> fp8 = {
      Row{line("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", kF32Frags),
          [](Fx& x) { mma_of<E4M3>(x.k); }},
      Row{line("mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e4m3.f32", kF32Frags),
          [](Fx& x) { mma_of<E5M2, E4M3>(x.k); }},
      Row{line("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32", kF32Frags),
          [](Fx& x) { mma_of<E4M3, E5M2>(x.k); }},
  };
  check_rows_at(fp8, Arch::Sm89, {8, 4}, "fp8_89");
  check_rows_at(fp8, Arch::Sm90, {8, 4}, "fp8_90");
}

// wgmma's ordering instructions exist on sm_90a only: assembled for it at PTX 8.0, with the
// matrix descriptor a kernel builds.
TEST_CASE("wgmma fence, commit_group, wait_group and a matrix descriptor, assembled for sm_90a",
          "[dsl][instructions]") {
  const std::vector<Row> table = {
      ROW("wgmma.fence.sync.aligned;", k.wgmma_fence()),
      ROW("wgmma.commit_group.sync.aligned;", k.wgmma_commit_group()),
      ROW("wgmma.wait_group.sync.aligned 1;", k.wgmma_wait_group(1)),
      ROW("and.b32 %r16, %r15, 262143;\nshr.u32 %r17, %r16, 4;\ncvt.u64.u32 %rd9, %r17;\n"
          "or.b64 %rd10, %rd9, 4611686293305819136;",  // 0x4000004000080000
          k.matrix_descriptor(x.sp, MatrixLayout{128, 1024, Swizzle::B128})),
      ROW("add.u32 %r16, %r15, 64;\nand.b32 %r17, %r16, 262143;\nshr.u32 %r18, %r17, 4;\n"
          "cvt.u64.u32 %rd9, %r18;\nor.b64 %rd10, %rd9, 68719542272;",  // 0x1000010000
          k.matrix_descriptor(x.sp + 16, MatrixLayout{16, 256, Swizzle::None})),
  };
  check_rows_at(table, Arch::Sm90a, {8, 0}, "wgmma");
}
