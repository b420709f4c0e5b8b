// The 8-bit integers, FP8, FP4 and ue8m0 scales: one exact line per form (loads and stores,
// scalar and vector, moves, cvt with every rounding, the packed conversions), each table assembled
// by ptxas at its least target and PTX version, and refused on an older target naming the
// instruction and the target it needs.
#include <fmt/format.h>

#include <functional>
#include <string>
#include <vector>

#include "support.hpp"

using namespace ptxdsl;
using Catch::Matchers::Contains;

namespace {

// The registers every row may read, made in this order so that their names are fixed:
//   f32  a b        %f1 %f2          u8 byte    %rs1    s8 sbyte   %rs2
//   e4m3x2 e4       %rs3             e5m2x2 e5  %rs4    ue8m0x2 sc %rs5
//   f16x2 h2        %r1              shared u8 pointer  base %r2   s32 s  %r3
//   global u8, e4m3, e4m3x2, e2m1x2 pointers: bases %rd1 %rd2 %rd3 %rd4
//   e2m1x2 fp4      %rc1             pred p     %p1
// A row's first new register is %f3, %rs6, %r4, %rd5, %rc2.
struct Fx {
  explicit Fx(Kernel& kernel) : k(kernel) {}
  Kernel& k;
  Reg<F32> a = k.reg<F32>(), b = k.reg<F32>();
  Reg<U8> byte = k.reg<U8>();
  Reg<S8> sbyte = k.reg<S8>();
  Reg<E4M3x2> e4 = k.reg<E4M3x2>();
  Reg<E5M2x2> e5 = k.reg<E5M2x2>();
  Reg<UE8M0x2> sc = k.reg<UE8M0x2>();
  Reg<F16x2> h2 = k.reg<F16x2>();
  SharedPtr<U8> su8{k.reg<U32>(), 0};
  Reg<S32> s = k.reg<S32>();
  GlobalPtr<U8> gu8{k.reg<U64>(), 0};
  GlobalPtr<E4M3> ge4{k.reg<U64>(), 0};
  GlobalPtr<E4M3x2> ge4x2{k.reg<U64>(), 0};
  GlobalPtr<E2M1x2> gfp4{k.reg<U64>(), 0};
  Reg<E2M1x2> fp4 = k.reg<E2M1x2>();
  Pred p = k.reg<PredT>();
};

struct Row {
  std::string expected;
  std::function<void(Fx&)> emit;
};

#define ROW(expected, ...)              \
  Row {                                 \
    expected, [](Fx& x) {               \
      [[maybe_unused]] Kernel& k = x.k; \
      __VA_ARGS__;                      \
    }                                   \
  }

std::vector<Row> bytes() {
  return {
      ROW("ld.global.u8 %rs6, [%rd1];", k.ld(x.gu8)),
      ROW("ld.global.s8 %rs6, [%rd1+3];", k.ld(x.gu8.as<S8>() + 3)),
      ROW("ld.global.nc.v4.u8 {%rs6, %rs7, %rs8, %rs9}, [%rd1+4];", k.ld_v<4>(x.gu8 + 4, kNc)),
      ROW("ld.global.v2.s8 {%rs6, %rs7}, [%rd1];", k.ld_v<2>(x.gu8.as<S8>())),
      ROW("st.global.u8 [%rd1+1], %rs1;", k.st(x.gu8 + 1, x.byte)),
      ROW("st.global.u8 [%rd1], 200;", k.st(x.gu8, 200)),
      ROW("st.global.v2.s8 [%rd1+2], {%rs2, %rs2};",
          k.st_v<2>(x.gu8.as<S8>() + 2, Vec<S8, 2>{x.sbyte, x.sbyte})),
      ROW("ld.shared.u8 %rs6, [%r2+7];", k.ld(x.su8 + 7)),
      ROW("st.shared.u8 [%r2], %rs1;", k.st(x.su8, x.byte)),
      ROW("mov.b16 %rs6, %rs1;", k.mov(x.byte)),
      ROW("mov.b16 %rs6, 255;", k.mov<U8>(255)),
      ROW("selp.b16 %rs6, %rs1, 0, %p1;", k.selp(x.byte, 0, x.p)),
      ROW("mov.b16 %rs6, 0;\n@%p1 ld.global.u8 %rs6, [%rd1];", k.ld_if(x.p, x.gu8, 0)),
      ROW("cvt.rni.sat.s8.f32 %rs6, %f1;", k.cvt<S8>(x.a, Rounding::Rni, false, true)),
      ROW("cvt.rzi.s8.f32 %rs6, %f1;", k.cvt<S8>(x.a)),
      ROW("cvt.rmi.sat.u8.f32 %rs6, %f1;", k.cvt<U8>(x.a, Rounding::Rmi, false, true)),
      ROW("cvt.rpi.ftz.sat.u8.f32 %rs6, %f1;", k.cvt<U8>(x.a, Rounding::Rpi, true, true)),
      ROW("cvt.u32.u8 %r4, %rs1;", k.cvt<U32>(x.byte)),
      ROW("cvt.s32.s8 %r4, %rs2;", k.cvt<S32>(x.sbyte)),
      ROW("cvt.sat.u8.s32 %rs6, %r3;", k.cvt<U8>(x.s, Rounding::None, false, true)),
      ROW("cvt.rn.f32.u8 %f3, %rs1;", k.cvt<F32>(x.byte)),
      ROW("cvt.rn.f32.s8 %f3, %rs2;", k.cvt<F32>(x.sbyte)),
      // Scalar FP8 elements are bytes: ld.b8 and st.b8, split from their pair.
      ROW("ld.global.b8 %rs6, [%rd2+1];", k.ld(x.ge4 + 1)),
      ROW("mov.b16 %rs6, 0;\n@%p1 ld.global.b8 %rs6, [%rd2+3];",
          k.ld_if(x.p, x.ge4.as<B8>() + 3, 0u)),
      ROW("ld.global.b16 %rs6, [%rd3+2];", k.ld(x.ge4x2 + 1)),
      ROW("st.global.b16 [%rd3], %rs3;", k.st(x.ge4x2, x.e4)),
      ROW("mov.b16 %rs6, %rs3;\nshr.u16 %rs7, %rs3, 8;\nst.global.b8 [%rd2+5], %rs7;",
          k.st(x.ge4 + 5, k.split_bytes<E4M3>(x.e4)[1])),
  };
}

std::vector<Row> fp8() {
  return {
      ROW("cvt.rn.satfinite.e4m3x2.f32 %rs6, %f2, %f1;", k.cvt_pack<E4M3x2>(x.a, x.b)),
      ROW("cvt.rn.satfinite.e5m2x2.f32 %rs6, %f1, %f2;", k.cvt_pack<E5M2x2>(x.b, x.a)),
      ROW("cvt.rn.f16x2.e4m3x2 %r4, %rs3;", k.cvt_unpack(x.e4)),
      ROW("cvt.rn.f16x2.e5m2x2 %r4, %rs4;", k.cvt_unpack(x.e5)),
      ROW("cvt.rn.satfinite.e4m3x2.f16x2 %rs6, %r1;", k.cvt_pack<E4M3x2>(x.h2)),
      ROW("cvt.rn.satfinite.e5m2x2.f16x2 %rs6, %r1;", k.cvt_pack<E5M2x2>(x.h2)),
  };
}

std::vector<Row> fp4() {
  return {
      ROW("cvt.rn.satfinite.e2m1x2.f32 %rc2, %f2, %f1;", k.cvt_pack<E2M1x2>(x.a, x.b)),
      ROW("cvt.rn.f16x2.e2m1x2 %r4, %rc1;", k.cvt_unpack(x.fp4)),
      ROW("st.global.b8 [%rd4+3], %rc1;", k.st(x.gfp4 + 3, x.fp4)),
      ROW("ld.global.b8 %rc2, [%rd4];", k.ld(x.gfp4)),
      ROW("cvt.rz.satfinite.ue8m0x2.f32 %rs6, %f2, %f1;", k.cvt_pack<UE8M0x2>(x.a, x.b)),
      ROW("cvt.rp.ue8m0x2.f32 %rs6, %f2, %f1;", k.cvt_pack<UE8M0x2>(x.a, x.b, Rounding::Rp, false)),
      ROW("cvt.rn.bf16x2.ue8m0x2 %r4, %rs5;", k.cvt_unpack(x.sc)),
  };
}

// The rows of `table` in kernels of one module, each checked line for line.
void build_rows(Module& m, const std::vector<Row>& table, const char* family) {
  for (std::size_t i = 0; i < table.size(); ++i) {
    Kernel& k = m.kernel(fmt::format("{}_{}", family, i));
    Fx fx(k);
    INFO(family << " row " << i << ": " << table[i].expected);
    table[i].emit(fx);
    CHECK(test::body_text(k, k.instructions().size() - test::count(table[i].expected, "\n") - 1) ==
          table[i].expected);
  }
}

// Every row of `table` is refused on `arch`, naming its instruction and the target it needs.
void check_refused(const std::vector<Row>& table, Arch arch, PtxVersion version,
                   const std::string& needs) {
  Module m(arch, version);
  for (std::size_t i = 0; i < table.size(); ++i) {
    Kernel& k = m.kernel(fmt::format("old_{}", i));
    Fx fx(k);
    const std::string message = test::error_of([&] { table[i].emit(fx); });
    INFO(table[i].expected);
    const std::string instruction = table[i].expected.substr(0, table[i].expected.find(' '));
    if (message.find(instruction) == std::string::npos) {
      // A row of several lines fails at its converting instruction.
      CHECK_THAT(message, Contains("cvt"));
    }
    CHECK_THAT(message, Contains(needs) && Contains(std::string(arch_name(arch))));
  }
}

}  // namespace

TEST_CASE("u8/s8 loads, stores, moves and cvt: exact lines, assembled for sm_80",
          "[dsl][instructions][narrow]") {
  const std::vector<Row> table = bytes();
  for (Arch arch : test::kArches) {
    Module m(arch, min_ptx_version(arch));
    build_rows(m, table, "bytes");
    test::require_assembles(m);
  }
}

TEST_CASE("FP8 conversions: exact lines, assembled for sm_90 at PTX 7.8, refused on sm_80",
          "[dsl][instructions][narrow]") {
  Module m(Arch::Sm90, {7, 8});
  build_rows(m, fp8(), "fp8");
  test::require_assembles(m);
  check_refused(fp8(), Arch::Sm80, {7, 8}, "needs sm_90 or newer");
  // sm_89 has them only from PTX 8.1, which the table cannot say beside sm_90's 7.8.
  check_refused(fp8(), Arch::Sm89, {8, 1}, "needs sm_90 or newer");
}

TEST_CASE(
    "FP4 and ue8m0 conversions: exact lines, assembled for sm_100a at PTX 8.6, refused elsewhere",
    "[dsl][instructions][narrow]") {
  Module m(Arch::Sm100a, {8, 6});
  build_rows(m, fp4(), "fp4");
  test::require_assembles(m);
  std::vector<Row> converts = fp4();
  converts.erase(converts.begin() + 2, converts.begin() + 4);  // the loads and stores need sm_80
  // sm_100a's own: not on sm_90, nor on sm_100, the family's portable target.
  check_refused(converts, Arch::Sm90, {8, 6}, "needs sm_100a; the module targets sm_90");
  check_refused(converts, Arch::Sm100, {8, 6}, "needs sm_100a; the module targets sm_100");
}
