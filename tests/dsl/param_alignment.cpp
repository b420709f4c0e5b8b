// The contract's alignment facts come from the kernel's own accesses: what a foreign loader must
// honour so that no vector access faults.
#include "support.hpp"

using namespace ptxdsl;

namespace {

const ParamSpec& param(const KernelContract& c, std::string_view name) {
  for (const ParamSpec& p : c.params) {
    if (p.name == name) return p;
  }
  FAIL("no parameter " << name);
  return c.params.front();
}

}  // namespace

TEST_CASE("a contract names the alignment each pointer's accesses need and its row stride",
          "[dsl][contract]") {
  Module m;
  Kernel& k = m.kernel("rows");
  k.require_threads(32);
  const GlobalPtr<F32> x = k.param_ptr<F32>("x");
  const GlobalPtr<F32> y = k.param_ptr<F32>("y");
  const GlobalPtr<F32> w = k.param_ptr<F32>("w");
  const GlobalPtr<F32> sums = k.param_ptr<F32>("sums");
  const GlobalPtr<U32> counter = k.param_ptr<U32>("counter");
  const GlobalPtr<F32> unused = k.param_ptr<F32>("unused");
  const Reg<U32> stride = k.param<U32>("stride");
  const Reg<U32> rows = k.param<U32>("rows");
  (void)unused;
  const Reg<U32> row = k.special(Special::CtaidX);
  const Reg<U32> lane = k.special(Special::TidX);
  // Rows of x by a run-time stride, four floats a thread: 16 bytes, so the stride a multiple of 4.
  const GlobalPtr<F32> x_row = k.index(k.row(x, row, stride), k.mul(lane, 4u));
  const Vec<F32, 4> v = k.ld_v<4>(x_row);
  // y's rows by a constant stride (1024 floats): the stride scalar plays no part.
  const GlobalPtr<F32> y_row = k.index(k.row(y, row, 1024u), k.mul(lane, 2u));
  k.st_v<2>(y_row, Vec<F32, 2>{v[0], v[1]});
  // w by scalar loads: 4 bytes. sums: a row at rows * 64 floats, 16 bytes a store: 256-byte rows
  // keep it aligned whatever `rows` is.
  k.ld(k.index(w, lane));
  const GlobalPtr<F32> tail = k.index(sums, k.mul(rows, 64u));
  k.st_v<4>(k.index(tail, k.mul(lane, 4u)), v);
  k.atom_add(counter, Src<U32>(1u));
  k.finalize();

  const KernelContract c = k.contract();
  CHECK(param(c, "x").align_bytes == 16);
  CHECK(param(c, "x").row_stride == "stride");
  CHECK(param(c, "stride").multiple == 4);
  CHECK(param(c, "y").align_bytes == 8);
  CHECK(param(c, "y").row_stride.empty());
  CHECK(param(c, "w").align_bytes == 4);
  CHECK(param(c, "sums").align_bytes == 16);
  CHECK(param(c, "sums").row_stride.empty());
  CHECK(param(c, "rows").multiple == 0);
  CHECK(param(c, "counter").align_bytes == 4);
  CHECK(param(c, "unused").align_bytes == 0);
  test::require_assembles(m);
}

TEST_CASE("an address a loop moves keeps its pointer's provenance, and cp.async needs its size",
          "[dsl][contract]") {
  Module m(Arch::Sm80, {7, 8});
  Kernel& k = m.kernel("walk");
  k.require_threads(32);
  const GlobalPtr<F16> src = k.param_ptr<F16>("src");
  const Reg<U32> stride = k.param<U32>("stride");
  const Reg<U32> n = k.param<U32>("n");
  const SharedPtr<F16> stage = k.shared_array<F16>("stage", 512, 16);
  k.for_range(0u, n, 1u, [&](Reg<U32> i) {
    // 8 bytes of f16 a copy, from row i: the stride a multiple of 4 elements.
    k.cp_async(stage, k.row(src, i, stride), 8);
  });
  k.cp_async_commit();
  k.cp_async_wait(0);
  k.finalize();
  const KernelContract c = k.contract();
  CHECK(param(c, "src").align_bytes == 8);
  CHECK(param(c, "src").row_stride == "stride");
  CHECK(param(c, "stride").multiple == 4);
  CHECK(param(c, "n").multiple == 0);
  test::require_assembles(m);
}
