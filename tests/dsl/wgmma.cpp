// wgmma.mma_async in the DSL: the exact line of each form (A from a descriptor or registers,
// scale-d as an immediate or a predicate, negation and MN-major reads), every N of m64nNk16
// assembled by ptxas for sm_90a, and the forms the types or the checks refuse.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <functional>
#include <string>
#include <utility>

#include "ptxdsl/dsl.hpp"
#include "support.hpp"

using namespace ptxdsl;
using Catch::Matchers::Contains;

namespace {

// The DSL's types refuse what wgmma.mma_async does not multiply.
static_assert(WgmmaN<8> && WgmmaN<136> && WgmmaN<256>);
static_assert(!WgmmaN<0> && !WgmmaN<12> && !WgmmaN<264>);
static_assert(WgmmaPair<BF16, BF16> && WgmmaPair<E4M3, E5M2> && WgmmaPair<TF32, TF32>);
static_assert(!WgmmaPair<F16, BF16> && !WgmmaPair<BF16, E4M3>);
static_assert(!WgmmaInputTag<S8> && !WgmmaInputTag<U8>);

// A kernel whose only registers are the accumulator (%f1..), the descriptors (%rd1, %rd2), A's
// fragment (%r1..%r4) and a predicate (%p1), so that lines are known exactly.
struct Operands {
  explicit Operands(Kernel& kernel) : k(kernel) {}
  Kernel& k;
  WgmmaAcc<8> acc = k.wgmma_acc<8>();
  MatrixDescriptor a{k.reg<U64>()}, b{k.reg<U64>()};
  Pred p = k.reg<PredT>();
  MmaA<F16> a16{{k.reg<B32>(), k.reg<B32>(), k.reg<B32>(), k.reg<B32>()}};
};

std::string emitted(Module& m, const std::string& name, const std::function<void(Operands&)>& f) {
  Kernel& k = m.kernel(name);
  Operands o(k);
  f(o);
  return test::body_text(k);
}

}  // namespace

TEST_CASE("wgmma.mma_async: each form's line, assembled for sm_90a", "[dsl][wgmma]") {
  Module m(Arch::Sm90a, {8, 0});
  const std::string d = "{%f1, %f2, %f3, %f4}";
  const std::vector<std::pair<std::string, std::function<void(Operands&)>>> rows = {
      {"wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 " + d + ", %rd1, %rd2, 1, 1, 1, 0, 0;",
       [](Operands& o) { o.k.wgmma_mma_async<BF16>(o.acc, o.a, o.b); }},
      {"wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 " + d + ", %rd1, %rd2, 0, -1, 1, 1, 0;",
       [](Operands& o) {
         o.k.wgmma_mma_async<F16>(o.acc, o.a, o.b,
                                  {.accumulate = false, .negate_a = true, .transpose_a = true});
       }},
      {"wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 " + d +
           ", %rd1, %rd2, %p1, 1, -1, 0, 1;",
       [](Operands& o) {
         o.k.wgmma_mma_async<BF16>(o.acc, o.a, o.b,
                                   {.accumulate = o.p, .negate_b = true, .transpose_b = true});
       }},
      {"wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 " + d +
           ", {%r1, %r2, %r3, %r4}, %rd2, 1, 1, 1, 1;",
       [](Operands& o) { o.k.wgmma_mma_async(o.acc, o.a16, o.b, {.transpose_b = true}); }},
      {"wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e5m2 " + d + ", %rd1, %rd2, 1, 1, 1;",
       [](Operands& o) { o.k.wgmma_mma_async<E4M3, E5M2>(o.acc, o.a, o.b); }},
      {"wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 " + d + ", %rd1, %rd2, 0, 1, -1;",
       [](Operands& o) {
         o.k.wgmma_mma_async<TF32>(o.acc, o.a, o.b, {.accumulate = false, .negate_b = true});
       }},
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    INFO("row " << i);
    CHECK(emitted(m, fmt::format("form{}", i), rows[i].second) == rows[i].first);
  }
  {  // E5M2 A in registers: four .b32 of four elements each.
    Kernel& k = m.kernel("fp8_registers");
    WgmmaAcc<16> acc = k.wgmma_acc<16>();
    const MmaA<E5M2> a{{k.reg<B32>(), k.reg<B32>(), k.reg<B32>(), k.reg<B32>()}};
    k.wgmma_mma_async<E5M2, E4M3>(acc, a, MatrixDescriptor{k.reg<U64>()});
    CHECK_THAT(test::body_text(k), Contains("m64n16k32.f32.e5m2.e4m3 {%f1, %f2, %f3, %f4, %f5, "
                                            "%f6, %f7, %f8}, {%r1, %r2, %r3, %r4}, %rd1, 1, 1, "
                                            "1;"));
  }
  test::require_assembles(m);
}

// Every N of m64nNk16: a fence, one product, its commit and wait, and D stored so that ptxas keeps
// it.
template <int N>
void product_of_n(Module& m) {
  Kernel& k = m.kernel(fmt::format("n{}", N));
  const GlobalPtr<F32> out = k.param_ptr<F32>("out");
  const SharedPtr<BF16> tile = k.shared_array<BF16>("tile", 64 * 16 + N * 16, 1024);
  WgmmaAcc<N> acc = k.wgmma_acc<N>();
  const MatrixDescriptor a = k.matrix_descriptor(tile, {16, 1024, Swizzle::B32});
  const MatrixDescriptor b = k.matrix_descriptor(tile + 64 * 16, {16, 1024, Swizzle::B32});
  k.wgmma_fence();
  k.wgmma_mma_async<BF16>(acc, a, b, {.accumulate = false});
  k.wgmma_commit_group();
  k.wgmma_wait_group(0);
  for (std::size_t i = 0; i < acc.regs.size(); ++i) k.st(out + static_cast<int>(i), acc.regs[i]);
  const std::string line = test::body_text(k);
  CHECK_THAT(line,
             Contains(fmt::format("wgmma.mma_async.sync.aligned.m64n{}k16.f32.bf16.bf16 ", N)) &&
                 Contains(fmt::format("%f{}}}", N / 2)));
}

template <int... Ns>
void products_of(Module& m, std::integer_sequence<int, Ns...>) {
  (product_of_n<8 * (Ns + 1)>(m), ...);
}

TEST_CASE("wgmma.mma_async m64nNk16 for every N from 8 to 256, assembled for sm_90a",
          "[dsl][wgmma][ptxas]") {
  Module m(Arch::Sm90a, {8, 0});
  products_of(m, std::make_integer_sequence<int, 32>{});
  test::require_assembles(m);
}

// (sm_90a itself needs PTX 8.0, which Module checks.)
TEST_CASE("wgmma.mma_async needs sm_90a; MN-major reads are f16/bf16 from shared memory",
          "[dsl][wgmma][misuse]") {
  {
    Module m(Arch::Sm90, {8, 0});
    Kernel& k = m.kernel("k");
    Operands o(k);
    CHECK_THAT(test::error_of([&] { k.wgmma_mma_async<BF16>(o.acc, o.a, o.b); }),
               Contains("kernel 'k'") && Contains("wgmma.mma_async.sync.aligned.m64n8k16") &&
                   Contains("needs sm_90a; the module targets sm_90"));
  }
  Module m(Arch::Sm90a, {8, 0});
  Kernel& k = m.kernel("k");
  Operands o(k);
  CHECK_THAT(test::error_of([&] { k.wgmma_mma_async(o.acc, o.a16, o.b, {.transpose_a = true}); }),
             Contains("A is read MN-major (transpose_a) only from shared memory, and only f16 or "
                      "bf16"));
  CHECK_THAT(
      test::error_of([&] { k.wgmma_mma_async<E4M3>(o.acc, o.a, o.b, {.transpose_b = true}); }),
      Contains("B is read MN-major (transpose_b) only for f16 or bf16"));
}
