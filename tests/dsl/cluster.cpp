// Thread-block clusters: one exact expected line per instruction form (the instructions.cpp
// style), each assembled by ptxas for sm_90 and sm_100 at the PTX version it needs and refused,
// naming the target or the version, where the module is too old; the cluster attributes in the
// text and the contract; and the cluster reduce assembled.
#include <fmt/format.h>

#include <functional>
#include <string>
#include <vector>

#include "support.hpp"

using namespace ptxdsl;
using Catch::Matchers::Contains;

namespace {

// Registers every row may read, made in this order: shared f32 pointer sp (%r1), u (%r2), f
// (%f1), cluster f32 pointer cp (%r3), cluster mbarrier cb (%r4), ud (%rd1). A row's first new
// register is %r5, %f2, %rd2, %p1.
struct Fx {
  explicit Fx(Kernel& kernel) : k(kernel) {}
  Kernel& k;
  SharedPtr<F32> sp{k.reg<U32>(), 0};
  Reg<U32> u = k.reg<U32>();
  Reg<F32> f = k.reg<F32>();
  ClusterPtr<F32> cp{k.reg<U32>(), 0};
  ClusterPtr<B64> cb{k.reg<U32>(), 0};
  Reg<U64> ud = k.reg<U64>();
};

struct Row {
  std::string expected;
  std::function<void(Fx&)> emit;
  PtxVersion needs{7, 8};
};

#define ROW(needs, expected, ...)           \
  Row {                                     \
    expected,                               \
        [](Fx& x) {                         \
          [[maybe_unused]] Kernel& k = x.k; \
          __VA_ARGS__;                      \
        },                                  \
        needs                               \
  }

// kAny: not a cluster form (an address in the cluster window is arithmetic like any other).
constexpr PtxVersion kAny{7, 0}, k78{7, 8}, k80{8, 0}, k81{8, 1};

std::vector<Row> cluster_rows() {
  std::vector<Row> rows = {
      ROW(k78, "mov.u32 %r5, %cluster_ctarank;", k.cluster_ctarank()),
      ROW(k78, "mov.u32 %r5, %cluster_nctarank;", k.cluster_nctarank()),
      ROW(k78, "mapa.shared::cluster.u32 %r5, %r1, %r2;", k.mapa(x.sp, x.u)),
      ROW(k78,
          "mapa.shared::cluster.u32 %r5, %r1, 3;\n"
          "ld.shared::cluster.f32 %f2, [%r5+8];",
          k.ld(k.mapa(x.sp + 2, 3u))),
      ROW(k78, "st.shared::cluster.f32 [%r3+4], %f1;", k.st(x.cp + 1, x.f)),
      ROW(k78, "ld.shared::cluster.v4.f32 {%f2, %f3, %f4, %f5}, [%r3+16];", k.ld_v<4>(x.cp + 4)),
      ROW(kAny, "mad.lo.u32 %r5, %r2, 4, %r3;", k.index(x.cp, x.u)),
      ROW(k78, "barrier.cluster.arrive.aligned;", k.barrier_cluster_arrive()),
      ROW(k78, "barrier.cluster.arrive;", k.barrier_cluster_arrive(MemSem::None, false)),
      ROW(k80, "barrier.cluster.arrive.release.aligned;",
          k.barrier_cluster_arrive(MemSem::Release)),
      ROW(k80, "barrier.cluster.arrive.relaxed;", k.barrier_cluster_arrive(MemSem::Relaxed, false)),
      ROW(k78, "barrier.cluster.wait.aligned;", k.barrier_cluster_wait()),
      ROW(k78, "barrier.cluster.wait;", k.barrier_cluster_wait(MemSem::None, false)),
      ROW(k80, "barrier.cluster.wait.acquire.aligned;", k.barrier_cluster_wait(MemSem::Acquire)),
      ROW(k78, "barrier.cluster.arrive.aligned;\nbarrier.cluster.wait.aligned;", k.cluster_sync()),
      ROW(k78, "fence.acq_rel.cluster;", k.fence_cluster()),
      ROW(k80, "fence.proxy.async.shared::cta;", k.fence_proxy_async()),
      ROW(k80, "mbarrier.expect_tx.relaxed.cluster.shared::cta.b64 [%r1], 16;",
          k.mbarrier_expect_tx(x.sp.as<B64>(), 16u)),
      ROW(k80, "mbarrier.complete_tx.relaxed.cluster.shared::cta.b64 [%r1+8], %r2;",
          k.mbarrier_complete_tx(x.sp.as<B64>() + 1, x.u)),
      ROW(k80, "mbarrier.complete_tx.relaxed.cluster.shared::cluster.b64 [%r4], 16;",
          k.mbarrier_complete_tx(x.cb, 16u)),
      ROW(k80, "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r4+8];",
          k.mbarrier_arrive(x.cb + 1)),
      ROW(k80,
          "$L__mbarrier_wait_0:\n"
          "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 %p1, [%r1], 1;\n"
          "@!%p1 bra $L__mbarrier_wait_0;",
          k.mbarrier_wait(x.sp.as<B64>(), 1u, Scope::Cluster)),
      ROW(k81, "st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [%r3+4], %f1, [%r4];",
          k.st_async(x.cp + 1, x.f, x.cb)),
      ROW(k81, "st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%r3], %r2, [%r4+8];",
          k.st_async(x.cp.as<U32>(), x.u, x.cb + 1)),
      ROW(k81, "st.async.shared::cluster.mbarrier::complete_tx::bytes.u64 [%r3+8], %rd1, [%r4];",
          k.st_async(x.cp.as<U64>() + 1, x.ud, x.cb)),
      ROW(k81,
          "red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 [%r3], "
          "%r2, [%r4];",
          k.red_async_add(x.cp.as<U32>(), x.u, x.cb)),
      ROW(k81,
          "red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.s32 "
          "[%r3+4], -1, [%r4];",
          k.red_async_add(x.cp.as<S32>() + 1, Src<S32>(-1), x.cb)),
  };
  const std::pair<Special, const char*> all[] = {
      {Special::ClusterCtarank, "%cluster_ctarank"},
      {Special::ClusterNctarank, "%cluster_nctarank"},
      {Special::ClusteridX, "%clusterid.x"},
      {Special::ClusteridY, "%clusterid.y"},
      {Special::ClusteridZ, "%clusterid.z"},
      {Special::NclusteridX, "%nclusterid.x"},
      {Special::NclusteridY, "%nclusterid.y"},
      {Special::NclusteridZ, "%nclusterid.z"},
      {Special::ClusterCtaidX, "%cluster_ctaid.x"},
      {Special::ClusterCtaidY, "%cluster_ctaid.y"},
      {Special::ClusterCtaidZ, "%cluster_ctaid.z"},
      {Special::ClusterNctaidX, "%cluster_nctaid.x"},
      {Special::ClusterNctaidY, "%cluster_nctaid.y"},
      {Special::ClusterNctaidZ, "%cluster_nctaid.z"},
  };
  for (auto [special, name] : all) {
    rows.push_back(
        {fmt::format("mov.u32 %r5, {};", name), [s = special](Fx& x) { x.k.special(s); }, k78});
  }
  return rows;
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

// Every row in a module of `arch` at `version`: emitted exactly where the module is new enough
// (then the module is assembled), refused naming what it needs where it is not.
void check_rows(Arch arch, PtxVersion version) {
  const std::vector<Row> rows = cluster_rows();
  Module m(arch, version);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    Kernel& k = m.kernel(fmt::format("cluster_{}", i));
    Fx fx(k);
    INFO(arch_name(arch) << " PTX " << version.major << "." << version.minor << ", row " << i
                         << ": " << rows[i].expected);
    if (arch < Arch::Sm90 && rows[i].needs != kAny) {
      CHECK_THAT(test::error_of([&] { rows[i].emit(fx); }),
                 Contains("kernel '" + k.name() + "'") && Contains("instruction '") &&
                     Contains("needs sm_90 or newer; the module targets sm_80"));
      continue;
    }
    if (version < rows[i].needs) {
      CHECK_THAT(test::error_of([&] { rows[i].emit(fx); }),
                 Contains(fmt::format("needs PTX {}.{} or newer", rows[i].needs.major,
                                      rows[i].needs.minor)));
      continue;
    }
    rows[i].emit(fx);
    CHECK(test::body_text(k) == replace_all(rows[i].expected, "{k}", k.name()));
  }
  test::require_assembles(m);
}

}  // namespace

TEST_CASE("cluster instructions: exact lines, assembled for sm_90 and sm_100",
          "[dsl][instructions][cluster]") {
  check_rows(Arch::Sm90, {8, 1});
  check_rows(Arch::Sm100, {8, 6});
}

TEST_CASE("cluster instructions need the PTX version of their form, and sm_90",
          "[dsl][instructions][cluster]") {
  check_rows(Arch::Sm90, {7, 8});
  check_rows(Arch::Sm90, {8, 0});
  check_rows(Arch::Sm80, {7, 8});
}

TEST_CASE("cluster attributes are printed, recorded in the contract and assembled",
          "[dsl][cluster]") {
  Module m(Arch::Sm90);
  Kernel& k = m.kernel("pair");
  k.require_threads(128);
  k.require_cluster({2, 1, 1});
  k.explicit_cluster();
  k.barrier_cluster_arrive();
  k.barrier_cluster_wait();
  Kernel& plain = m.kernel("plain");
  const std::string ptx = m.emit();
  CHECK_THAT(ptx, Contains(".reqntid 128, 1, 1\n.reqnctapercluster 2, 1, 1\n.explicitcluster\n{"));
  CHECK(test::count(ptx, ".reqnctapercluster") == 1);
  const KernelContract c = k.contract();
  CHECK(c.cluster == Dim3{2, 1, 1});
  CHECK(c.explicit_cluster);
  CHECK(c.has_cluster());
  CHECK_FALSE(plain.contract().has_cluster());
  CHECK(plain.contract().cluster.count() == 0);
  test::require_assembles(m);
}

TEST_CASE("cluster_reduce emits DSMEM stores and a cluster barrier, and assembles",
          "[dsl][cluster][reduce]") {
  for (const std::uint32_t ctas : {1u, 2u, 8u}) {
    Module m(Arch::Sm90);
    Kernel& k = m.kernel("cluster_sum");
    k.require_threads(256);
    if (ctas > 1) k.require_cluster({ctas, 1, 1});
    const GlobalPtr<F32> y = k.param_ptr<F32>("y");
    const SharedPtr<F32> scratch =
        k.shared_array<F32>("scratch", group_reduce_scratch_floats(256, 2));
    const SharedPtr<F32> slots = k.shared_array<F32>("slots", cluster_reduce_slot_floats(ctas, 2));
    const Reg<U32> tid = k.tid_x();
    const Reg<F32> a = k.cvt<F32>(tid);
    const Reg<F32> values[] = {a, k.mul(a, a)};
    const std::vector<Reg<F32>> r =
        cluster_reduce(k, values, ReduceOp::Sum, 256, tid, scratch, ctas, slots);
    REQUIRE(r.size() == 2u);
    k.st(y, k.add(r[0], r[1]));
    const std::string ptx = m.emit();
    INFO("cluster of " << ctas);
    CHECK(test::count(ptx, "mapa.shared::cluster.u32") == (ctas > 1 ? 1 : 0));
    CHECK(test::count(ptx, "st.shared::cluster.f32") == (ctas > 1 ? 2 : 0));
    CHECK(test::count(ptx, "barrier.cluster.arrive.aligned;") == (ctas > 1 ? 1 : 0));
    CHECK(test::count(ptx, "barrier.cluster.wait.aligned;") == (ctas > 1 ? 1 : 0));
    test::require_assembles(m, /*no_spills=*/true);
  }
}
