// Misuse the types cannot catch throws ptxdsl::Error naming the kernel, the instruction and the
// problem. Each check reads the message: all three must be in it.
#include <fmt/format.h>

#include <limits>
#include <tuple>
#include <vector>

#include "support.hpp"

using namespace ptxdsl;
using Catch::Matchers::Contains;
using test::error_of;

// `expr` must throw ptxdsl::Error whose message holds the kernel's name, `what` (the instruction or
// the construct) and `problem`.
#define CHECK_MISUSE(expr, kernel, what, problem)                                           \
  CHECK_THAT(error_of([&] { expr; }), Contains(std::string("kernel '") + (kernel) + "'") && \
                                          Contains(what) && Contains(problem))

namespace {

struct Scratch {
  Module m{Arch::Sm90};
  Kernel& k = m.kernel("k");
  Reg<F32> f = k.reg<F32>();
  Reg<U32> u = k.reg<U32>();
  Pred p = k.reg<PredT>();
  GlobalPtr<F32> g{k.reg<U64>(), 0};
  SharedPtr<F32> s{k.reg<U32>(), 0};
};

}  // namespace

TEST_CASE("an unbound label fails at finalize naming the branch", "[dsl][misuse]") {
  Scratch x;
  Label skip = x.k.label("skip");
  x.k.bra_if(x.p, skip);
  CHECK_MISUSE(x.k.finalize(), "k", "instruction 'bra'", "label '$L__skip_0' is never bound");
  CHECK_MISUSE(x.m.emit(), "k", "instruction 'bra'", "is never bound");

  Scratch y;
  Label top = y.k.label("top");
  y.k.bra(top, true);
  CHECK_MISUSE(y.k.finalize(), "k", "instruction 'bra.uni'", "label '$L__top_0' is never bound");
}

TEST_CASE("labels bound twice or of another kernel or never created", "[dsl][misuse]") {
  Scratch x;
  Label l = x.k.label("again");
  x.k.bind(l);
  CHECK_MISUSE(x.k.bind(l), "k", "label '$L__again_0'", "is bound twice");
  Kernel& other = x.m.kernel("other");
  Label theirs = other.label("theirs");
  CHECK_MISUSE(x.k.bra(theirs), "k", "instruction 'bra'", "branches to a label of kernel 'other'");
  CHECK_MISUSE(x.k.bind(theirs), "k", "label", "belongs to kernel 'other'");
  CHECK_MISUSE(x.k.bra_if(x.p, theirs), "k", "instruction 'bra'", "label of another kernel");
  CHECK_MISUSE(x.k.bra(Label{}), "k", "instruction 'bra'", "never created");
  CHECK_MISUSE(x.k.bind(Label{}), "k", "label", "was never created");
}

TEST_CASE("a register of another kernel is refused where it is used", "[dsl][misuse]") {
  Module m(Arch::Sm90);
  Kernel& a = m.kernel("a");
  Kernel& b = m.kernel("b");
  Reg<F32> fa = a.reg<F32>();
  Reg<F32> fb = b.reg<F32>();
  CHECK_MISUSE(b.add(fb, fa), "b", "instruction 'add.f32'", "uses a register of kernel 'a'");
  CHECK_MISUSE(fb + fa, "b", "instruction 'add.f32'", "uses a register of kernel 'a'");
  CHECK_MISUSE(b.mov(fa, fb), "b", "instruction 'mov.f32'", "uses a register of kernel 'a'");
  GlobalPtr<F32> pa{a.reg<U64>(), 0};
  CHECK_MISUSE(b.ld(pa), "b", "instruction 'ld.global.f32'", "uses a register of kernel 'a'");
  CHECK_MISUSE(b.st(pa + 1, fb), "b", "instruction 'st.global.f32'",
               "uses a register of kernel 'a'");
  CHECK_MISUSE(b.ld_v<4>(pa, kNc), "b", "instruction 'ld.global.nc.v4.f32'",
               "uses a register of kernel 'a'");
  Pred pred_a = a.reg<PredT>();
  CHECK_MISUSE(b.predicated(pred_a, [] {}), "b", "predicated block",
               "guard register of kernel 'a'");
  CHECK_MISUSE(b.selp(fb, fb, pred_a), "b", "instruction 'selp.f32'",
               "uses a register of kernel 'a'");
  CHECK_MISUSE(b.shfl_bfly(fa, 1), "b", "instruction 'shfl.sync.bfly.b32'",
               "uses a register of kernel 'a'");
  // The failed instructions left nothing behind: b's next instruction is checked on its own.
  b.add(fb, fb);
  CHECK(b.instructions().size() == 1);
}

// A kernel's address can be reused by a kernel made after it is destroyed; its id cannot. A
// register kept past its kernel must be refused, not printed as `%f6` into a kernel with `%f<3>`.
TEST_CASE("a register of a destroyed kernel is refused, even at a reused address",
          "[dsl][misuse]") {
  Reg<F32> stale;
  Label stale_label;
  {
    Module gone(Arch::Sm90);
    Kernel& k = gone.kernel("k");
    for (int i = 0; i < 6; ++i) stale = k.reg<F32>();
    stale_label = k.label("l");
  }
  Module m(Arch::Sm90);
  Kernel& k = m.kernel("k");
  const Reg<F32> f = k.reg<F32>();
  const std::string destroyed = "uses a register of another kernel, destroyed since";
  // The kernel's storage not reused: its pointer is never followed.
  CHECK_MISUSE(k.add(f, stale), "k", "instruction 'add.f32'", destroyed);
  CHECK_MISUSE(f + stale, "k", "instruction 'add.f32'", destroyed);
  CHECK_THAT(error_of([&] { (void)(stale + 1.0f); }),
             Contains("operator +") && Contains("another kernel, destroyed since"));
  // Reused: the same address, another kernel.
  Reg<F32> reused = stale;
  reused.kernel = &k;
  CHECK_MISUSE(k.add(f, reused), "k", "instruction 'add.f32'", destroyed);
  CHECK_MISUSE(reused * f, "k", "instruction 'mul.f32'", destroyed);
  CHECK_MISUSE(k.mov(reused, f), "k", "instruction 'mov.f32'", destroyed);
  CHECK_MISUSE(k.st(GlobalPtr<F32>{k.reg<U64>(), 0}, reused), "k", "instruction 'st.global.f32'",
               destroyed);
  Pred reused_pred{&k, stale.id, stale.kernel_id};
  CHECK_MISUSE(k.predicated(reused_pred, [] {}), "k", "predicated block",
               "guard register of another kernel, destroyed since");
  Label reused_label = stale_label;
  reused_label.kernel = &k;
  CHECK_MISUSE(k.bra(reused_label), "k", "instruction 'bra'",
               "branches to a label of another kernel, destroyed since");
  CHECK_MISUSE(k.bind(reused_label), "k", "label", "belongs to another kernel, destroyed since");
  k.add(f, f, f);
  const std::string ptx = m.emit();
  CHECK_THAT(ptx, Contains("add.f32 %f1, %f1, %f1;") && !Contains("%f6"));
}

// Two modules may each have a kernel 'k': the message says which module the register is of.
TEST_CASE("a register of a same-named kernel of another module names the modules",
          "[dsl][misuse]") {
  Module first(Arch::Sm90);
  Module second(Arch::Sm90);
  REQUIRE(first.id() != second.id());
  Kernel& a = first.kernel("k");
  Kernel& b = second.kernel("k");
  const Reg<F32> fa = a.reg<F32>();
  const Reg<F32> fb = b.reg<F32>();
  const std::string whose = fmt::format(
      "uses a register of kernel 'k' of another module (module id {}; this kernel's is {})",
      first.id(), second.id());
  CHECK_MISUSE(b.add(fb, fa), "k", "instruction 'add.f32'", whose);
  CHECK_MISUSE(fb - fa, "k", "instruction 'sub.f32'", whose);
  CHECK_MISUSE(
      b.bra(a.label("theirs")), "k", "instruction 'bra'",
      fmt::format("branches to a label of kernel 'k' of another module (module id {}", first.id()));
}

TEST_CASE("a default-constructed Reg is refused by the instruction that uses it", "[dsl][misuse]") {
  Scratch x;
  const std::string never = "uses a register that was never created (a default Reg)";
  CHECK_MISUSE(x.k.add(Reg<F32>{}, 1.0f), "k", "instruction 'add.f32'", never);
  CHECK_MISUSE(x.k.add(x.f, Reg<F32>{}), "k", "instruction 'add.f32'", never);
  CHECK_MISUSE(x.k.ld(GlobalPtr<F32>{}), "k", "instruction 'ld.global.f32'", never);
  CHECK_MISUSE(x.k.st(x.g, Reg<F32>{}), "k", "instruction 'st.global.f32'", never);
  CHECK_MISUSE(Reg<F32>{} * x.f, "k", "instruction 'mul.f32'", never);
  CHECK_MISUSE(x.k.cvt<F16>(Reg<F32>{}), "k", "instruction 'cvt.rn.f16.f32'", never);
  CHECK_MISUSE(x.k.predicated(Pred{}, [] {}), "k", "predicated block", "never created");
  // With no kernel on either side there is no kernel to name; the operator says so.
  CHECK_THAT(error_of([] { (void)(Reg<F32>{} + Reg<F32>{}); }),
             Contains("operator +") && Contains("default-constructed Reg"));
}

TEST_CASE("nothing is emitted into a finalized kernel", "[dsl][misuse]") {
  Scratch x;
  x.k.finalize();
  const std::string after = "emitted after the kernel was finalized";
  CHECK_MISUSE(x.k.add(x.f, x.f), "k", "instruction 'add.f32'", after);
  CHECK_MISUSE(x.k.ld_v<4>(x.g), "k", "instruction 'ld.global.v4.f32'", after);
  CHECK_MISUSE(x.k.tid_x(), "k", "instruction 'mov.u32 %tid.x'", after);
  CHECK_MISUSE(x.k.bar_sync(), "k", "instruction 'bar.sync'", after);
  CHECK_MISUSE(x.k.ret(), "k", "instruction 'ret'", after);
  CHECK_MISUSE(x.k.bind(x.k.label("late")), "k", "label '$L__late_0'", after);
  CHECK_MISUSE(x.k.param<F32>("late"), "k", "parameter 'late'", "declared after finalize");
  CHECK_MISUSE(x.k.shared_array<F32>("late", 4), "k", "shared array 'late'",
               "declared after finalize");
  CHECK_MISUSE(x.k.require_threads(128), "k", "require_threads", "called after finalize");
  CHECK_MISUSE(x.k.max_threads(128), "k", "max_threads", "called after finalize");
  CHECK(x.k.params().empty());
  CHECK(x.k.shared().empty());
  // Finalizing again, or emitting the module, is fine and changes nothing.
  const std::size_t n = x.k.instructions().size();
  x.k.finalize();
  (void)x.m.emit();
  CHECK(x.k.instructions().size() == n);
}

TEST_CASE("vector width must be 2 or 4", "[dsl][misuse]") {
  Scratch x;
  CHECK_MISUSE(x.k.ld_vec(x.g, 3), "k", "instruction 'ld.global.v3.f32'",
               "vector width must be 2 or 4, got 3");
  CHECK_MISUSE(x.k.ld_vec(x.g, 1), "k", "instruction 'ld.global.f32'",
               "vector width must be 2 or 4, got 1");
  CHECK_MISUSE(x.k.ld_vec(x.s, 8), "k", "instruction 'ld.shared.v8.f32'",
               "vector width must be 2 or 4, got 8");
  const std::vector<Reg<F32>> three{x.f, x.f, x.f};
  CHECK_MISUSE(x.k.st_vec(x.g, three), "k", "instruction 'st.global.v3.f32'",
               "vector width must be 2 or 4, got 3");
  // More than 16 bytes in one access.
  CHECK_MISUSE(x.k.ld_v<4>(x.g.as<F64>()), "k", "instruction 'ld.global.v4.f64'",
               "one access moves at most 16 bytes, got 32");
  CHECK(x.k.instructions().empty());
}

TEST_CASE("a constant offset must be aligned to the access", "[dsl][misuse]") {
  Scratch x;
  CHECK_MISUSE(x.k.ld_v<4>(x.g + 2, kNc), "k", "instruction 'ld.global.nc.v4.f32'",
               "constant offset 8 is not a multiple of the 16-byte access size");
  CHECK_MISUSE(x.k.st_v<2>(x.s + 1, Vec<F32, 2>{x.f, x.f}), "k", "instruction 'st.shared.v2.f32'",
               "constant offset 4 is not a multiple of the 8-byte access size");
  CHECK_MISUSE(x.k.ld_v_if<4>(x.p, x.g - 1, 0.0f), "k", "instruction 'ld.global.v4.f32'",
               "constant offset -4 is not a multiple of the 16-byte access size");
  CHECK_MISUSE(x.k.ld((x.g.as<F16>() + 1).as<F32>()), "k", "instruction 'ld.global.f32'",
               "constant offset 2 is not a multiple of the 4-byte access size");
}

TEST_CASE("cp.async sizes and offsets are checked", "[dsl][misuse]") {
  Scratch x;
  CHECK_MISUSE(x.k.cp_async(x.s, x.g, 2), "k", "instruction 'cp.async.ca.shared.global'",
               "copy size must be 4, 8 or 16 bytes, got 2");
  CHECK_MISUSE(x.k.cp_async(x.s + 2, x.g, 16), "k", "instruction 'cp.async.cg.shared.global'",
               "constant offset 8 is not a multiple of the 16-byte copy size");
  CHECK_MISUSE(x.k.cp_async(x.s, x.g + 1, 8), "k", "instruction 'cp.async.ca.shared.global'",
               "constant offset 4 is not a multiple of the 8-byte copy size");
  CHECK_MISUSE(x.k.cp_async_zfill(x.s, x.g, 8, 12u), "k", "instruction 'cp.async.ca.shared.global'",
               "source size 12 exceeds the 8-byte copy size");
}

TEST_CASE("predicated blocks do not nest or hold control flow", "[dsl][misuse]") {
  Scratch x;
  CHECK_MISUSE(x.k.predicated(x.p, [&] { x.k.predicated(x.p, [] {}); }), "k", "predicated block",
               "predicated blocks do not nest");
  CHECK_MISUSE(x.k.predicated(x.p, [&] { x.k.if_(x.p, [] {}); }), "k", "instruction 'bra'",
               "control flow inside a predicated block");
  CHECK_MISUSE(x.k.predicated(x.p, [&] { x.k.bind(x.k.label("in")); }), "k", "label '$L__in_",
               "control flow inside a predicated block");
  CHECK_MISUSE(x.k.predicated(x.p, [&] { x.k.for_range(0u, 4u, 1u, [](Reg<U32>) {}); }), "k",
               "label", "control flow inside a predicated block");
  // After a failure inside a block the kernel is unguarded again.
  x.k.add(x.f, x.f);
  CHECK_FALSE(x.k.instructions().back().guarded);
}

TEST_CASE("names must be PTX identifiers and unique", "[dsl][misuse]") {
  Module m(Arch::Sm90);
  CHECK_THAT(error_of([&] { m.kernel("1st"); }),
             Contains("kernel name '1st' is not a PTX identifier"));
  CHECK_THAT(error_of([&] { m.kernel("rms norm"); }),
             Contains("kernel name 'rms norm' is not a PTX identifier"));
  CHECK_THAT(error_of([&] { m.kernel(""); }), Contains("kernel name '' is not a PTX identifier"));
  Kernel& k = m.kernel("k");
  CHECK_THAT(error_of([&] { m.kernel("k"); }), Contains("kernel 'k' is defined twice"));
  CHECK_MISUSE(k.param<F32>("a-b"), "k", "parameter", "name 'a-b' is not a PTX identifier");
  CHECK_MISUSE(k.param_ptr<F32>("9x"), "k", "parameter", "name '9x' is not a PTX identifier");
  k.param<F32>("eps");
  CHECK_MISUSE(k.param<F32>("eps"), "k", "parameter", "'eps' is declared twice");
  CHECK_MISUSE(k.param_ptr<F16>("eps"), "k", "parameter", "'eps' is declared twice");
  CHECK_MISUSE(k.shared_array<F32>("x.y", 4), "k", "shared array",
               "name 'x.y' is not a PTX identifier");
  k.shared_array<F32>("buf", 4);
  CHECK_MISUSE(k.shared_array<F32>("buf", 4), "k", "shared array", "'buf' is declared twice");
  CHECK_MISUSE(k.shared_array<F32>("empty", 0), "k", "shared array", "'empty' has 0 bytes");
  CHECK_MISUSE(k.shared_array<F32>("odd", 4, 3), "k", "shared array",
               "alignment must be a power of two, got 3");
  k.shared_dynamic<F32>("dyn", 1024);
  CHECK_MISUSE(k.shared_dynamic<F32>("dyn2", 1024), "k", "shared array",
               "a kernel has one dynamic shared array");
  CHECK_MISUSE(k.label("bad-hint"), "k", "label", "hint 'bad-hint' is not a PTX identifier");
  CHECK_MISUSE(k.label(""), "k", "label", "hint '' is not a PTX identifier");
  CHECK_THAT(error_of([&] { (void)m.find("missing"); }),
             Contains("the module has no kernel 'missing'"));
  CHECK_THAT(error_of([&] { m.kernel("WARP_SZ"); }),
             Contains("kernel name 'WARP_SZ' is a predefined PTX constant"));
  CHECK_MISUSE(k.param<U32>("WARP_SZ"), "k", "parameter", "is a predefined PTX constant");
  // A parameter may not hide one of the kernel's shared arrays, nor the other way round.
  CHECK_MISUSE(k.param<U32>("k_buf"), "k", "parameter", "'k_buf' is a shared array's symbol");
  Kernel& j = m.kernel("j");
  j.param<U32>("j_tile");
  CHECK_MISUSE(j.shared_array<F32>("tile", 4), "j", "shared array",
               "'tile' has the symbol 'j_tile', a parameter's name");
}

TEST_CASE("shared symbols must be unique across the module", "[dsl][misuse]") {
  Module m(Arch::Sm90);
  m.kernel("a_b").shared_array<F32>("c", 4);
  m.kernel("a").shared_array<F32>("b_c", 4);  // also a_b_c
  CHECK_MISUSE(m.emit(), "a", "shared array",
               "its symbol 'a_b_c' is also a shared array of kernel 'a_b'; rename one");
  Module n(Arch::Sm90);
  n.kernel("x").shared_array<F32>("y", 4);  // x_y
  n.kernel("x_y");
  CHECK_MISUSE(n.emit(), "x", "shared array", "its symbol 'x_y' is also kernel 'x_y'");
}

TEST_CASE("a loop with a constant step of 0 is refused", "[dsl][misuse]") {
  Scratch x;
  CHECK_MISUSE(x.k.for_range(0u, x.u, 0u, [](Reg<U32>) {}), "k", "for_range",
               "a step of 0 never ends the loop");
  CHECK(x.k.instructions().empty());
}

TEST_CASE("PTX version and target must agree", "[dsl][misuse]") {
  CHECK_THAT(error_of([] {
               Module m(Arch::Sm90, {7, 0});
             }),
             Contains("sm_90 needs PTX 7.8 or newer, got 7.0"));
  CHECK_THAT(error_of([] {
               Module m(Arch::Sm100, {8, 0});
             }),
             Contains("sm_100 needs PTX 8.6 or newer, got 8.0"));
  CHECK_THAT(error_of([] {
               Module m(Arch::Sm80, {9, 1});
             }),
             Contains("PTX version must be in [7.0, 9.0], got 9.1"));
  CHECK_THAT(error_of([] {
               Module m(Arch::Sm80, {6, 4});
             }),
             Contains("PTX version must be in [7.0, 9.0], got 6.4"));
  for (const char* bad : {"9.1", "7", "7.", ".8", "x.y", "10.0", "7.10", "", "4294967303.0",
                          "7.4294967304", "-7.8", "7.-8"}) {
    INFO(bad);
    CHECK_THAT(error_of([&] { parse_ptx_version(bad); }),
               Contains("PTX version must be MAJOR.MINOR in [7.0, 9.0]"));
  }
  CHECK_THAT(
      error_of([] { parse_arch("sm_75"); }),
      Contains("arch must be one of sm_80, sm_89, sm_90, sm_90a, sm_100, sm_100a, got 'sm_75'"));
  CHECK_THAT(error_of([] { parse_arch("SM_90"); }), Contains("got 'SM_90'"));

  // An instruction the target lacks, or the PTX version cannot spell, names both.
  Module sm80(Arch::Sm80);
  Kernel& k = sm80.kernel("k80");
  Reg<BF16> bh = k.reg<BF16>();
  CHECK_MISUSE(k.add(bh, bh), "k80", "instruction 'add.bf16'",
               "needs sm_90 or newer; the module targets sm_80");
  CHECK_MISUSE(k.setp(Cmp::Lt, bh, bh), "k80", "instruction 'setp.lt.bf16'",
               "needs sm_90 or newer");
  CHECK_MISUSE(k.cvt<F16>(bh), "k80", "instruction 'cvt.rn.f16.bf16'", "needs sm_90 or newer");
  Module old(Arch::Sm80, {7, 0});
  Kernel& ko = old.kernel("k70");
  GlobalPtr<F32> g{ko.reg<U64>(), 0};
  CHECK_MISUSE(ko.ld(g, kNcNoAllocate), "k70", "instruction 'ld.global.nc.L1::no_allocate.f32'",
               "needs PTX 7.4 or newer; the module is PTX 7.0");
  CHECK_MISUSE(ko.cvt<F32>(ko.reg<BF16>()), "k70", "instruction 'cvt.f32.bf16'",
               "needs PTX 7.1 or newer; the module is PTX 7.0");
}

TEST_CASE("shuffle widths and reduction groups must be powers of two", "[dsl][misuse]") {
  Scratch x;
  const std::string problem = "segment width must be a power of two in [1, 32], got ";
  CHECK_MISUSE(x.k.shfl_bfly(x.f, 1, 3), "k", "instruction 'shfl.sync.bfly.b32'", problem + "3");
  CHECK_MISUSE(x.k.shfl_down(x.u, 1, 0), "k", "instruction 'shfl.sync.down.b32'", problem + "0");
  CHECK_MISUSE(x.k.shfl_up(x.f, 1, 64), "k", "instruction 'shfl.sync.up.b32'", problem + "64");
  CHECK_MISUSE(x.k.shfl_idx(x.f, 0u, 24), "k", "instruction 'shfl.sync.idx.b32'", problem + "24");
  CHECK_MISUSE(warp_reduce_sum(x.k, x.f, 12), "k", "warp_reduce",
               "width must be a power of two in [1, 32], got 12");
  const Reg<F32> values[] = {x.f};
  CHECK_MISUSE(group_reduce(x.k, values, ReduceOp::Sum, 48, 256, x.u, x.s), "k", "group_reduce",
               "got 48");
  CHECK_MISUSE(group_reduce(x.k, values, ReduceOp::Sum, 96, 128, x.u, x.s), "k", "group_reduce",
               "dividing the block (128), got 96");
  CHECK(x.k.instructions().empty());
}

TEST_CASE("barriers and block sizes are range-checked", "[dsl][misuse]") {
  Scratch x;
  CHECK_MISUSE(x.k.bar_sync(16), "k", "instruction 'bar.sync'",
               "barrier id must be in [0, 15], got 16");
  CHECK_MISUSE(x.k.require_threads(0), "k", "require_threads",
               "block size must be in [1, 1024], got 0");
  CHECK_MISUSE(x.k.max_threads(2048), "k", "max_threads",
               "block size must be in [1, 1024], got 2048");
}

TEST_CASE("precision and rounding modifiers must exist for the form", "[dsl][misuse]") {
  Scratch x;
  Kernel& k = x.k;
  Reg<F64> d = k.reg<F64>();
  Reg<F16> h = k.reg<F16>();
  Reg<BF16> bh = k.reg<BF16>();
  Reg<S32> s = k.reg<S32>();
  CHECK_MISUSE(k.rsqrt(x.f, kRn), "k", "instruction 'rsqrt.rn.f32'",
               "has only the .approx form (MathMode kApprox)");
  CHECK_MISUSE(k.ex2(x.f, kDefault), "k", "instruction 'ex2.f32'", "has only the .approx form");
  CHECK_MISUSE(k.lg2(x.f, kRz), "k", "instruction 'lg2.rz.f32'", "has only the .approx form");
  CHECK_MISUSE(k.add(x.f, x.f, kApprox), "k", "instruction 'add.approx.f32'",
               "has no .approx form");
  CHECK_MISUSE(k.sqrt(d, kApprox), "k", "instruction 'sqrt.approx.f64'", "has no .approx form");
  CHECK_MISUSE(k.div(d, d, kFull), "k", "instruction 'div.full.f64'",
               ".full exists for div.f32 only");
  CHECK_MISUSE(k.div(x.f, x.f, MathMode{Precision::Approx, Rounding::Rn}), "k",
               "instruction 'div.approx.f32'", "choose .approx/.full or a rounding mode, not both");
  CHECK_MISUSE(k.rcp(d, kApprox), "k", "instruction 'rcp.approx.f64'",
               "rcp.approx.f64 needs .ftz (MathMode kApproxFtz)");
  CHECK_MISUSE(k.min(x.f, x.f, kRn), "k", "instruction 'min.rn.f32'", "takes no rounding mode");
  CHECK_MISUSE(k.add(x.f, x.f, MathMode{Precision::Exact, Rounding::Rni}), "k",
               "instruction 'add.rni.f32'", "integer rounding modes");
  CHECK_MISUSE(k.add(h, h, kRz), "k", "instruction 'add.rz.f16'",
               "the 16-bit float forms round to nearest (.rn) only");
  CHECK_MISUSE(k.add(d, d, MathMode{.ftz = true}), "k", "instruction 'add.ftz.f64'",
               ".ftz does not apply to this form");
  CHECK_MISUSE(k.fma(bh, bh, bh, MathMode{Precision::Exact, Rounding::Rn, true}), "k",
               "instruction 'fma.rn.ftz.bf16'", ".ftz does not apply to this form");
  CHECK_MISUSE(k.ex2(k.reg<BF16>()), "k", "instruction 'ex2.approx.bf16'",
               "ex2.approx.bf16 needs .ftz (MathMode kApproxFtz)");
  CHECK_MISUSE(k.ex2(h, kApproxFtz), "k", "instruction 'ex2.approx.ftz.f16'",
               ".ftz does not apply to this form");
  CHECK_MISUSE(k.min(x.f, x.f, MathMode{.sat = true}), "k", "instruction 'min.sat.f32'",
               ".sat applies to add, sub, mul and fma on f32 and f16 only");
  CHECK_MISUSE(k.add(x.u, x.u, MathMode{.sat = true}), "k", "instruction 'add.sat.u32'",
               ".sat applies to add.s32 and sub.s32");
  CHECK_MISUSE(k.mul(s, s, MathMode{.sat = true}), "k", "instruction 'mul.lo.sat.s32'",
               ".sat applies to add.s32 and sub.s32");
  CHECK_MISUSE(k.add(x.u, 1u, kRn), "k", "instruction 'add.u32'",
               "rounding modes and .approx/.full apply to floating-point types only");
  CHECK_MISUSE(k.min(s, s, MathMode{.ftz = true}), "k", "instruction 'min.s32'",
               ".ftz applies to floating-point types only");
  CHECK(k.instructions().empty());
}

TEST_CASE("16-bit float immediates only move data", "[dsl][misuse]") {
  Scratch x;
  Kernel& k = x.k;
  Reg<F16> h = k.reg<F16>();
  const std::string problem = "16-bit float immediates are not operands of arithmetic";
  CHECK_MISUSE(k.add(h, 1.0f), "k", "instruction 'add.f16'", problem);
  CHECK_MISUSE(k.fma(h, h, 0.5f), "k", "instruction 'fma.rn.f16'", problem);
  CHECK_MISUSE(k.setp(Cmp::Lt, h, 0.0f), "k", "instruction 'setp.lt.f16'", problem);
  CHECK_MISUSE(k.max(k.reg<BF16>(), 0.0f), "k", "instruction 'max.bf16'", problem);
  CHECK_MISUSE(k.add(k.reg<F16x2>(), 0x3C003C00u), "k", "instruction 'add.f16x2'", problem);
  CHECK(k.instructions().empty());
  // mov, selp and st take them.
  k.add(h, k.mov<F16>(1.0f));
  k.selp<F16>(h, 0.0f, x.p);
  k.st(x.g.as<F16>(), 0.0f);
  CHECK(k.instructions().size() == 4);
}

TEST_CASE("setp comparisons must fit the type", "[dsl][misuse]") {
  Scratch x;
  Kernel& k = x.k;
  CHECK_MISUSE(k.setp(Cmp::Lo, x.f, x.f), "k", "instruction 'setp.lo.f32'",
               "floats compare with eq, ne, lt, le, gt, ge, equ, neu");
  CHECK_MISUSE(k.setp(Cmp::Lo, k.reg<S32>(), 0), "k", "instruction 'setp.lo.s32'",
               "signed integers compare with eq, ne, lt, le, gt and ge");
  CHECK_MISUSE(k.setp(Cmp::Equ, x.u, 0u), "k", "instruction 'setp.equ.u32'",
               "unsigned integers compare with eq, ne, lt, le, gt, ge, lo, ls, hi and hs");
  CHECK_MISUSE(k.setp(Cmp::Lt, k.reg<B32>(), 0u), "k", "instruction 'setp.lt.b32'",
               "bit types compare with eq and ne only");
  CHECK_MISUSE(k.setp(Cmp::Lt, k.reg<F64>(), 0.0, true), "k", "instruction 'setp.lt.ftz.f64'",
               ".ftz applies to setp on f32 and f16 only");
  CHECK(k.instructions().empty());
}

TEST_CASE("cvt rounding must fit the conversion", "[dsl][misuse]") {
  Scratch x;
  Kernel& k = x.k;
  Reg<S32> s = k.reg<S32>();
  Reg<F64> d = k.reg<F64>();
  CHECK_MISUSE(k.cvt<S32>(x.f, Rounding::Rn), "k", "instruction 'cvt.rn.s32.f32'",
               "a float-to-integer cvt needs .rni, .rzi, .rmi or .rpi");
  CHECK_MISUSE(k.cvt<F32>(s, Rounding::Rzi), "k", "instruction 'cvt.rzi.f32.s32'",
               "an integer-to-float cvt needs .rn, .rz, .rm or .rp");
  CHECK_MISUSE(k.cvt<F64>(x.f, Rounding::Rn), "k", "instruction 'cvt.rn.f64.f32'",
               "a widening float cvt is exact and takes no rounding mode");
  CHECK_MISUSE(k.cvt<F32>(d, Rounding::Rni), "k", "instruction 'cvt.rni.f32.f64'",
               "a narrowing float cvt needs .rn, .rz, .rm or .rp");
  CHECK_MISUSE(k.cvt<F32>(x.f, Rounding::Rn), "k", "instruction 'cvt.rn.f32.f32'",
               "a cvt between equal float types rounds to an integer");
  CHECK_MISUSE(k.cvt<U32>(k.reg<U64>(), Rounding::Rn), "k", "instruction 'cvt.rn.u32.u64'",
               "an integer-to-integer cvt takes no rounding mode");
  CHECK_MISUSE(k.cvt<S32>(d, Rounding::Rzi, true), "k", "instruction 'cvt.rzi.ftz.s32.f64'",
               ".ftz applies to cvt with an f32 source or destination only");
  CHECK_MISUSE(k.cvt_pack<F16x2>(x.f, x.f, Rounding::Rm), "k", "instruction 'cvt.rm.f16x2.f32'",
               "a cvt to a 16-bit float pair rounds with .rn or .rz");
  CHECK(k.instructions().empty());
}

TEST_CASE("cache hints must exist for the access", "[dsl][misuse]") {
  Scratch x;
  Kernel& k = x.k;
  CHECK_MISUSE(k.ld(x.g, MemHints{.cache = CacheOp::Wb}), "k", "instruction 'ld.global.wb.f32'",
               "loads take the cache operators .ca, .cg, .cs, .lu and .cv");
  CHECK_MISUSE(k.st(x.g, x.f, MemHints{.cache = CacheOp::Ca}), "k",
               "instruction 'st.global.ca.f32'", "stores take the cache operators .wb, .cg, .cs");
  CHECK_MISUSE(k.ld(x.g, MemHints{.cache = CacheOp::Cs, .eviction = Eviction::L1NoAllocate}), "k",
               "instruction 'ld.global.cs.L1::no_allocate.f32'",
               "a cache operator and an L1 eviction priority do not combine");
  CHECK_MISUSE(k.ld(x.s, kNoAllocate), "k", "instruction 'ld.shared.L1::no_allocate.f32'",
               "L1 eviction priorities apply to global memory only");
  CHECK_MISUSE(k.ld(x.s, kNc), "k", "instruction 'ld.shared.nc.f32'",
               ".nc applies to global loads only");
  CHECK_MISUSE(k.st(x.g, x.f, kNc), "k", "instruction 'st.global.nc.f32'",
               ".nc applies to global loads only");
  CHECK(k.instructions().empty());
}

TEST_CASE("L2 cache policies and hints are checked", "[dsl][misuse]") {
  Scratch x;
  Kernel& k = x.k;
  const Reg<B64> policy = k.create_policy(L2Evict::Last);
  CHECK(k.instructions().size() == 1u);
  CHECK_MISUSE(k.ld(x.s, MemHints{.l2_policy = policy}), "k",
               "instruction 'ld.shared.L2::cache_hint.f32'",
               "L2 cache hints apply to global memory only");
  CHECK_MISUSE(k.st(x.g, x.f, MemHints{.l2_prefetch = 128}), "k",
               "instruction 'st.global.L2::128B.f32'", "an L2 prefetch size applies to loads only");
  CHECK_MISUSE(k.ld(x.g, MemHints{.l2_prefetch = 100}), "k", "instruction 'ld.global.L2::100B.f32'",
               "the L2 prefetch size must be 64, 128 or 256 bytes, got 100");
  CHECK_MISUSE(k.create_policy(L2Evict::First, 0.0f), "k",
               "instruction 'createpolicy.fractional.L2::evict_first.b64'",
               "the fraction must be in (0, 1], got 0");
  CHECK_MISUSE(k.create_policy(L2Evict::Last, 1.5f), "k", "instruction 'createpolicy.fractional",
               "the fraction must be in (0, 1], got 1.5");
  CHECK_MISUSE(k.create_policy(L2Evict::Last, 1.0f, L2Evict::Last), "k",
               "instruction 'createpolicy.fractional.L2::evict_last.L2::evict_last.b64'",
               "the secondary priority must be evict_first or evict_unchanged");
  CHECK_MISUSE(k.cp_async(x.s, x.g, 16, kNc), "k", "instruction 'cp.async.cg.shared.global'",
               "a cp.async takes only L2 hints (l2_policy, l2_prefetch)");
  CHECK_MISUSE(k.cp_async(x.s, x.g, 16, MemHints{.l2_prefetch = 32}), "k",
               "instruction 'cp.async.cg.shared.global.L2::32B'",
               "the L2 prefetch size must be 64, 128 or 256 bytes, got 32");
  // A policy of another kernel is not this kernel's register.
  Kernel& other = x.m.kernel("other");
  CHECK_THAT(error_of([&] {
               other.ld(GlobalPtr<F32>{other.reg<U64>(), 0}, MemHints{.l2_policy = policy});
             }),
             Contains("kernel 'other'"));
  CHECK(k.instructions().size() == 1u);
  // PTX 7.4 at least.
  Module old(Arch::Sm80, PtxVersion{7, 3});
  Kernel& o = old.kernel("o");
  CHECK_MISUSE(o.create_policy(L2Evict::Last), "o", "instruction 'createpolicy.fractional",
               "needs PTX 7.4 or newer; the module is PTX 7.3");
  CHECK_MISUSE(o.ld(GlobalPtr<F32>{o.reg<U64>(), 0}, MemHints{.l2_prefetch = 64}), "o",
               "instruction 'ld.global.L2::64B.f32'", "needs PTX 7.4 or newer");
  CHECK_MISUSE(o.prefetch(GlobalPtr<F32>{o.reg<U64>(), 0}, PrefetchLevel::L2EvictLast), "o",
               "instruction 'prefetch.global.L2::evict_last'", "needs PTX 7.4 or newer");
  // Without an eviction priority, any version.
  o.prefetch(GlobalPtr<F32>{o.reg<U64>(), 0}, PrefetchLevel::L2);
}

TEST_CASE("mbarriers and bulk copies: sizes, alignments, targets and PTX versions are checked",
          "[dsl][misuse]") {
  Scratch x;  // sm_90, PTX 7.8
  const SharedPtr<B64> bar = x.s.as<B64>();
  CHECK_MISUSE(x.k.mbarrier_init(bar, 0u), "k", "instruction 'mbarrier.init.shared.b64'",
               "arrival count must be in [1, 1048575], got 0");
  CHECK_MISUSE(x.k.mbarrier_init(bar, 1u << 20), "k", "instruction 'mbarrier.init.shared.b64'",
               "got 1048576");
  CHECK_MISUSE(x.k.mbarrier_arrive((x.s + 1).as<B64>()), "k",
               "instruction 'mbarrier.arrive.shared::cta.b64'",
               "constant offset 4 of the mbarrier is not a multiple of 8");
  CHECK_MISUSE(x.k.mbarrier_wait(bar, 2u), "k", "instruction 'mbarrier.try_wait.parity",
               "phase parity must be 0 or 1, got 2");
  // PTX 8.0's forms in a PTX 7.8 module
  CHECK_MISUSE(x.k.mbarrier_arrive_expect_tx(bar, 16u), "k",
               "instruction 'mbarrier.arrive.expect_tx.shared::cta.b64'",
               "needs PTX 8.0 or newer; the module is PTX 7.8");
  CHECK_MISUSE(x.k.cp_async_bulk(x.s, x.g, 16u, bar), "k", "instruction 'cp.async.bulk",
               "needs PTX 8.0 or newer; the module is PTX 7.8");
  CHECK_MISUSE(x.k.fence_mbarrier_init(), "k", "instruction 'fence.mbarrier_init.release.cluster'",
               "needs PTX 8.0 or newer");

  Module m8(Arch::Sm90, {8, 0});
  Kernel& k = m8.kernel("k8");
  const SharedPtr<F32> s{k.reg<U32>(), 0};
  const GlobalPtr<F32> g{k.reg<U64>(), 0};
  CHECK_MISUSE(k.cp_async_bulk(s, g, 24u, s.as<B64>()), "k8", "instruction 'cp.async.bulk",
               "size must be a multiple of 16 in [16, 1048560], got 24");
  CHECK_MISUSE(k.cp_async_bulk(s, g, 0u, s.as<B64>()), "k8", "instruction 'cp.async.bulk", "got 0");
  CHECK_MISUSE(k.cp_async_bulk(s + 2, g, 16u, s.as<B64>()), "k8", "instruction 'cp.async.bulk",
               "constant offset 8 of the destination is not a multiple of 16");
  CHECK_MISUSE(k.cp_async_bulk(s, g + 1, 16u, s.as<B64>()), "k8", "instruction 'cp.async.bulk",
               "constant offset 4 of the source is not a multiple of 16");
  CHECK_MISUSE(k.cp_async_bulk(s, g, 16u, (s + 1).as<B64>()), "k8", "instruction 'cp.async.bulk",
               "constant offset 4 of the mbarrier is not a multiple of 8");
  CHECK_MISUSE(k.mbarrier_arrive_expect_tx(s.as<B64>(), 1u << 20), "k8",
               "instruction 'mbarrier.arrive.expect_tx", "at most 1048560, got 1048576");

  // sm_80 has mbarrier.init, not the waits and arrivals of sm_90
  Module m80(Arch::Sm80);
  Kernel& k80 = m80.kernel("k80");
  const SharedPtr<B64> b80{k80.reg<U32>(), 0};
  k80.mbarrier_init(b80, 32u);
  CHECK_MISUSE(k80.mbarrier_arrive(b80), "k80", "instruction 'mbarrier.arrive",
               "needs sm_90 or newer; the module targets sm_80");
  CHECK_MISUSE(k80.mbarrier_wait(b80, 0u), "k80", "instruction 'mbarrier.try_wait.parity",
               "needs sm_90 or newer");
}

TEST_CASE("clusters: targets, ranks, sizes, alignments and qualifiers are checked",
          "[dsl][misuse][cluster]") {
  // sm_80 has no clusters: each form names itself and the target.
  Module m80(Arch::Sm80);
  Kernel& k80 = m80.kernel("k80");
  const SharedPtr<F32> s80{k80.reg<U32>(), 0};
  CHECK_MISUSE(k80.require_cluster({2, 1, 1}), "k80", ".reqnctapercluster",
               "needs sm_90 or newer; the module targets sm_80");
  CHECK_MISUSE(k80.explicit_cluster(), "k80", ".explicitcluster", "needs sm_90 or newer");
  CHECK_MISUSE(k80.mapa(s80, 1u), "k80", "instruction 'mapa.shared::cluster.u32'",
               "needs sm_90 or newer; the module targets sm_80");
  CHECK_MISUSE(k80.cluster_ctarank(), "k80", "instruction 'mov.u32 %cluster_ctarank'",
               "needs sm_90 or newer");
  CHECK_MISUSE(k80.ld(ClusterPtr<F32>{k80.reg<U32>(), 0}), "k80",
               "instruction 'ld.shared::cluster.f32'", "needs sm_90 or newer");
  CHECK_MISUSE(k80.barrier_cluster_arrive(), "k80", "instruction 'barrier.cluster.arrive.aligned'",
               "needs sm_90 or newer");
  CHECK_MISUSE(k80.fence_cluster(), "k80", "instruction 'fence.acq_rel.cluster'",
               "needs sm_90 or newer");
  CHECK(k80.contract().cluster.count() == 0);

  Module m(Arch::Sm90, {8, 1});
  Kernel& k = m.kernel("k");
  const SharedPtr<F32> s{k.reg<U32>(), 0};
  const ClusterPtr<F32> c{k.reg<U32>(), 0};
  const ClusterPtr<B64> bar{k.reg<U32>(), 0};
  CHECK_MISUSE(k.require_cluster({3, 3, 2}), "k", ".reqnctapercluster",
               "a cluster must have 1 to 16 CTAs (each dimension at least 1), got (3, 3, 2)");
  CHECK_MISUSE(k.require_cluster({0, 1, 1}), "k", ".reqnctapercluster", "got (0, 1, 1)");
  CHECK_MISUSE(k.mapa(s, 16u), "k", "instruction 'mapa.shared::cluster.u32'",
               "CTA rank must be below the largest cluster (16 CTAs), got 16");
  CHECK_MISUSE(k.st_async((c.as<U32>() + 1).as<U64>(), k.reg<U64>(), bar), "k",
               "instruction 'st.async", "constant offset 4 is not a multiple of the 8-byte access");
  CHECK_MISUSE(k.st_async(c, k.reg<F32>(), (bar.as<U32>() + 1).as<B64>()), "k",
               "instruction 'st.async", "constant offset 4 of the mbarrier is not a multiple of 8");
  CHECK_MISUSE(k.red_async_add(c.as<U32>(), 1u, (bar.as<U32>() + 1).as<B64>()), "k",
               "instruction 'red.async", "of the mbarrier is not a multiple of 8");
  CHECK_MISUSE(k.mbarrier_expect_tx((s + 1).as<B64>(), 16u), "k", "instruction 'mbarrier.expect_tx",
               "constant offset 4 of the mbarrier");
  CHECK_MISUSE(k.mbarrier_complete_tx(bar, 1u << 20), "k",
               "instruction 'mbarrier.complete_tx.relaxed.cluster.shared::cluster.b64'",
               "transaction bytes must be at most 1048560, got 1048576");
  CHECK_MISUSE(k.barrier_cluster_arrive(MemSem::Acquire), "k",
               "instruction 'barrier.cluster.arrive.acquire.aligned'",
               "an arrive releases (MemSem::Release, the default) or is relaxed");
  CHECK_MISUSE(k.barrier_cluster_wait(MemSem::Release), "k",
               "instruction 'barrier.cluster.wait.release.aligned'", "a wait acquires");
  const Reg<U32> tid = k.tid_x();
  const SharedPtr<F32> scratch = k.shared_array<F32>("scratch", 8);
  CHECK_MISUSE(cluster_reduce_sum(k, k.reg<F32>(), 256, tid, scratch, 17, scratch), "k",
               "cluster_reduce", "the cluster must have 1 to 16 CTAs");
  CHECK_MISUSE(cluster_reduce_sum(k, k.reg<F32>(), 4, tid, scratch, 8, scratch), "k",
               "cluster_reduce", "no more than the block's 4 threads, got 8");
}

TEST_CASE("warp collectives: targets, PTX versions and operations are checked", "[dsl][misuse]") {
  Module sm80(Arch::Sm80);
  Kernel& k80 = sm80.kernel("k80");
  CHECK_MISUSE(k80.elect_sync(), "k80", "instruction 'elect.sync'",
               "needs sm_90 or newer; the module targets sm_80");
  Module ptx78(Arch::Sm90, {7, 8});
  Kernel& k78 = ptx78.kernel("k78");
  CHECK_MISUSE(k78.elect_sync(), "k78", "instruction 'elect.sync'",
               "needs PTX 8.0 or newer; the module is PTX 7.8");
  Scratch x;
  const Reg<B32> bits = x.k.reg<B32>();
  CHECK_MISUSE(x.k.redux(ReduxOp::Add, bits), "k", "instruction 'redux.sync.add.b32'",
               "redux.sync takes .and, .or and .xor on .b32, .add, .min and .max on .u32 and .s32");
}

TEST_CASE("scheduling: barrier ids and counts, register counts, timers are checked",
          "[dsl][misuse]") {
  Scratch x;
  CHECK_MISUSE(x.k.bar_sync(16, 64), "k", "instruction 'bar.sync'",
               "barrier id must be in [0, 15], got 16");
  CHECK_MISUSE(x.k.bar_arrive(1, 48), "k", "instruction 'bar.arrive'",
               "the thread count must be a multiple of 32 in [32, 1024], got 48");
  CHECK_MISUSE(x.k.bar_sync(1, 0), "k", "instruction 'bar.sync'", "got 0");
  CHECK_MISUSE(x.k.bar_sync(1, 2048), "k", "instruction 'bar.sync'", "got 2048");
  CHECK_MISUSE(x.k.special(Special::Clock64), "k", "instruction 'mov.u32 %clock64'",
               "%clock64 is a 64-bit register: read it with clock64() or globaltimer()");
  Module ptx80(Arch::Sm90a, {8, 0});
  Kernel& k = ptx80.kernel("k80");
  CHECK_MISUSE(k.setmaxnreg_inc(20), "k80", "instruction 'setmaxnreg.inc.sync.aligned.u32'",
               "the register count must be a multiple of 8 in [24, 256], got 20");
  CHECK_MISUSE(k.setmaxnreg_dec(100), "k80", "instruction 'setmaxnreg.dec.sync.aligned.u32'",
               "got 100");
  Module sm80(Arch::Sm80);
  Kernel& old = sm80.kernel("old");
  CHECK_MISUSE(old.setmaxnreg_dec(40), "old", "instruction 'setmaxnreg.dec.sync.aligned.u32'",
               "needs sm_90a; the module targets sm_80");
  // An arch-specific instruction: sm_90 and sm_100 lack it, whatever their PTX version.
  Module sm90(Arch::Sm90, {8, 0});
  Kernel& k90 = sm90.kernel("k90");
  CHECK_MISUSE(k90.setmaxnreg_inc(240), "k90", "instruction 'setmaxnreg.inc.sync.aligned.u32'",
               "needs sm_90a; the module targets sm_90");
  Module sm100(Arch::Sm100, {8, 6});
  Kernel& k100 = sm100.kernel("k100");
  CHECK_MISUSE(k100.setmaxnreg_inc(240), "k100", "instruction 'setmaxnreg.inc.sync.aligned.u32'",
               "needs sm_90a; the module targets sm_100");
}

TEST_CASE("approximate math: targets and precision are checked", "[dsl][misuse]") {
  Module sm80(Arch::Sm80);
  Kernel& k = sm80.kernel("k80");
  CHECK_MISUSE(k.tanh(k.reg<BF16>()), "k80", "instruction 'tanh.approx.bf16'",
               "needs sm_90 or newer; the module targets sm_80");
  CHECK_MISUSE(k.tanh(k.reg<BF16x2>()), "k80", "instruction 'tanh.approx.bf16x2'",
               "needs sm_90 or newer; the module targets sm_80");
  Scratch x;
  CHECK_MISUSE(x.k.sin(x.f, kRn), "k", "instruction 'sin.rn.f32'",
               "has only the .approx form (MathMode kApprox)");
  CHECK_MISUSE(x.k.cos(x.f, kRz), "k", "instruction 'cos.rz.f32'", "has only the .approx form");
}

// FP8 conversions on a target without them, FP4 and ue8m0 ones below sm_100, and forms PTX does not
// have: each refused when built, naming the instruction, the target and what it needs.
TEST_CASE("narrow float conversions: target too old, roundings PTX lacks", "[dsl][misuse]") {
  Module m80(Arch::Sm80, {7, 8});
  Kernel& k80 = m80.kernel("k80");
  const Reg<F32> a = k80.reg<F32>();
  CHECK_MISUSE(k80.cvt_pack<E4M3x2>(a, a), "k80", "instruction 'cvt.rn.satfinite.e4m3x2.f32'",
               "needs sm_90 or newer; the module targets sm_80");
  CHECK_MISUSE(k80.cvt_unpack(k80.reg<E5M2x2>()), "k80", "instruction 'cvt.rn.f16x2.e5m2x2'",
               "needs sm_90 or newer; the module targets sm_80");

  Module m90(Arch::Sm90, {8, 6});
  Kernel& k = m90.kernel("k");
  const Reg<F32> b = k.reg<F32>();
  CHECK_MISUSE(k.cvt_pack<E2M1x2>(b, b), "k", "instruction 'cvt.rn.satfinite.e2m1x2.f32'",
               "needs sm_100a; the module targets sm_90");
  CHECK_MISUSE(k.cvt_pack<UE8M0x2>(b, b), "k", "instruction 'cvt.rz.satfinite.ue8m0x2.f32'",
               "needs sm_100a");
  CHECK_MISUSE(k.cvt_pack<E4M3x2>(b, b, Rounding::Rz), "k",
               "instruction 'cvt.rz.satfinite.e4m3x2.f32'", "a cvt to e4m3x2 is .rn.satfinite");
  CHECK_MISUSE(k.cvt_pack<E5M2x2>(b, b, Rounding::Rn, false), "k",
               "instruction 'cvt.rn.e5m2x2.f32'", "a cvt to e5m2x2 is .rn.satfinite");
  CHECK_MISUSE(k.cvt<S8>(b, Rounding::Rn), "k", "instruction 'cvt.rn.s8.f32'",
               "a float-to-integer cvt needs .rni, .rzi, .rmi or .rpi");
  CHECK_MISUSE(k.mov(k.reg<E2M1x2>()), "k", "instruction 'mov.b8'", "mov takes the types");

  Module m100(Arch::Sm100a, {8, 6});
  Kernel& k100 = m100.kernel("k100");
  const Reg<F32> c = k100.reg<F32>();
  CHECK_MISUSE(k100.cvt_pack<UE8M0x2>(c, c, Rounding::Rn), "k100",
               "instruction 'cvt.rn.satfinite.ue8m0x2.f32'",
               "a cvt to ue8m0x2 rounds with .rz or .rp");
}

TEST_CASE("atomics and fences: operations, types, orders and targets are checked",
          "[dsl][misuse]") {
  Module m80(Arch::Sm80);
  Kernel& k80 = m80.kernel("k80");
  const GlobalPtr<U32> g80{k80.reg<U64>(), 0};
  CHECK_MISUSE(k80.atom(AtomOp::Add, g80.as<BF16x2>(), k80.reg<BF16x2>()), "k80",
               "instruction 'atom.global.add.noftz.bf16x2'",
               "needs sm_90 or newer; the module targets sm_80");
  CHECK_MISUSE(k80.red(AtomOp::Add, g80, 1u, {MemSem::Relaxed, Scope::Cluster}), "k80",
               "instruction 'red.relaxed.cluster.global.add.u32'",
               "needs sm_90 or newer; the module targets sm_80");
  CHECK_MISUSE(k80.fence(MemSem::Sc, Scope::Cluster), "k80", "instruction 'fence.sc.cluster'",
               "needs sm_90 or newer; the module targets sm_80");

  Module m(Arch::Sm90);
  Kernel& k = m.kernel("k");
  const GlobalPtr<U32> g{k.reg<U64>(), 0};
  const SharedPtr<F32> s{k.reg<U32>(), 0};
  CHECK_MISUSE(k.atom(AtomOp::Inc, g.as<S32>(), 1), "k", "instruction 'atom.global.inc.s32'",
               "atom.inc takes the types .u32, got .s32");
  CHECK_MISUSE(k.atom(AtomOp::Min, s, 1.0f), "k", "instruction 'atom.shared.min.f32'",
               "atom.min takes the types .u32, .u64, .s32, .s64, got .f32");
  CHECK_MISUSE(k.atom(AtomOp::And, s, 1.0f), "k", "instruction 'atom.shared.and.b32'", "got .f32");
  CHECK_MISUSE(k.atom(AtomOp::Add, g.as<S64>(), std::int64_t{1}), "k",
               "instruction 'atom.global.add.s64'", "atom.add takes the types");
  CHECK_MISUSE(k.red(AtomOp::Exch, g, 1u), "k", "instruction 'red.global.exch.b32'",
               "red has no .exch (atom has it)");
  CHECK_MISUSE(k.red(AtomOp::Add, g, 1u, {MemSem::Acquire}), "k",
               "instruction 'red.acquire.global.add.u32'", "red is .relaxed or .release");
  CHECK_MISUSE(k.atom(AtomOp::Add, g, 1u, {MemSem::Sc}), "k", "instruction 'atom.sc.global",
               ".sc is fence's");
  CHECK_MISUSE(k.atom(AtomOp::Cas, g, 1u), "k", "instruction 'atom.global.cas.b32'",
               "atom.cas takes 2 value operands, got 1");
  CHECK_MISUSE(k.atom(AtomOp::Add, Ptr<Space::Param, U32>{k.reg<U64>(), 0}, 1u), "k",
               "instruction 'atom.param.add.u32'",
               "atom works on global and shared memory, got .param");
  CHECK_MISUSE(k.fence(MemSem::Relaxed, Scope::Gpu), "k", "instruction 'fence.relaxed.gpu'",
               "a fence is .sc or .acq_rel");
}

TEST_CASE("tensor-core misuse: a target or PTX version too old, a misaligned row",
          "[dsl][misuse]") {
  const auto frags = [](Kernel& k) {
    Vec<B32, 4> a{k.reg<B32>(), k.reg<B32>(), k.reg<B32>(), k.reg<B32>()};
    Vec<B32, 2> b{k.reg<B32>(), k.reg<B32>()};
    Vec<F32, 4> c{k.reg<F32>(), k.reg<F32>(), k.reg<F32>(), k.reg<F32>()};
    return std::tuple{MmaA<E4M3>{a}, MmaB<E5M2>{b}, MmaAcc<F32>{c}};
  };
  Module m80(Arch::Sm80);
  Kernel& k80 = m80.kernel("k80");
  {
    const auto [a, b, c] = frags(k80);
    CHECK_MISUSE(k80.mma(a, b, c), "k80",
                 "instruction 'mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32'",
                 "needs sm_89 or newer; the module targets sm_80");
  }
  const SharedPtr<F16> s80{k80.reg<U32>(), 0};
  CHECK_MISUSE(k80.stmatrix<4>(s80, Vec<B32, 4>{k80.reg<B32>(), k80.reg<B32>(), k80.reg<B32>(),
                                                k80.reg<B32>()}),
               "k80", "instruction 'stmatrix.sync.aligned.m8n8.x4.shared.b16'",
               "needs sm_90 or newer; the module targets sm_80");

  Module m89(Arch::Sm89, {8, 3});
  Kernel& k89 = m89.kernel("k89");
  const auto [a, b, c] = frags(k89);
  CHECK_MISUSE(k89.mma(a, b, c), "k89", "instruction 'mma.sync.aligned.m16n8k32",
               "needs PTX 8.4 or newer; the module is PTX 8.3");
  const SharedPtr<F16> s89{k89.reg<U32>(), 0};
  CHECK_MISUSE(k89.ldmatrix<2>(s89 + 4), "k89",
               "instruction 'ldmatrix.sync.aligned.m8n8.x2.shared.b16'",
               "row addresses are 16-byte aligned: the constant offset 8 is not a multiple of 16");
}

TEST_CASE("wgmma ordering needs sm_90a; a matrix descriptor's offsets are multiples of 16",
          "[dsl][misuse]") {
  Module m(Arch::Sm90, {8, 0});
  Kernel& k = m.kernel("k");
  CHECK_MISUSE(k.wgmma_fence(), "k", "instruction 'wgmma.fence.sync.aligned'",
               "needs sm_90a; the module targets sm_90");
  CHECK_MISUSE(k.wgmma_wait_group(0), "k", "instruction 'wgmma.wait_group.sync.aligned'",
               "needs sm_90a");
  const SharedPtr<F16> s{k.reg<U32>(), 0};
  CHECK_MISUSE(k.matrix_descriptor(s, MatrixLayout{24, 256}), "k", "matrix_descriptor",
               "the leading byte offset must be a multiple of 16 in [0, 2^18), got 24");
  CHECK_MISUSE(k.matrix_descriptor(s, MatrixLayout{16, 1u << 18}), "k", "matrix_descriptor",
               "the stride byte offset must be a multiple of 16 in [0, 2^18), got 262144");
}
