// The TMA unit's tensor copies in the DSL: a tensor map parameter, the copies of 1 to 5
// dimensions into shared memory (multicast too) and back, their bulk groups and
// prefetch.tensormap, printed as the ISA spells them and assembled by ptxas for sm_90.
#include <catch2/catch.hpp>

#include <string>

#include "ptxdsl/dsl.hpp"
#include "support.hpp"

using namespace ptxdsl;
using Catch::Matchers::Contains;

TEST_CASE(
    "cp.async.bulk.tensor 1-5-D, multicast, stores, bulk groups and prefetch.tensormap, "
    "assembled for sm_90",
    "[dsl][tma][ptxas]") {
  Module m(Arch::Sm90, {8, 0});
  Kernel& k = m.kernel("tma");
  const TensorMap map = k.param_tensor_map("map");
  const SharedPtr<B64> bar = k.shared_array<B64>("bar", 1, 8);
  const SharedPtr<BF16> box = k.shared_array<BF16>("box", 4096, 1024);
  std::vector<Reg<S32>> c;
  for (int i = 0; i < 5; ++i) c.push_back(k.mov<S32>(i));
  const Reg<U16> mask = k.mov<U16>(3);
  const std::size_t first = k.instructions().size();
  k.prefetch_tensormap(map);
  k.cp_async_bulk_tensor(box, map, {c[0]}, bar);
  k.cp_async_bulk_tensor(box + 64, map, {c[0], c[1]}, bar);
  k.cp_async_bulk_tensor(box, map, {c[0], c[1], c[2]}, bar);
  k.cp_async_bulk_tensor(box, map, {c[0], c[1], c[2], c[3]}, bar);
  k.cp_async_bulk_tensor(box, map, {c[0], c[1], c[2], c[3], c[4]}, bar);
  k.cp_async_bulk_tensor_multicast(box, map, {c[0], c[1]}, bar, mask);
  k.fence_proxy_async();
  k.cp_async_bulk_tensor_store(map, {c[0], c[1]}, box);
  k.cp_async_bulk_commit_group();
  k.cp_async_bulk_wait_group(0, true);
  k.cp_async_bulk_wait_group(1);
  CHECK(test::body_text(k, first) ==
        "prefetch.tensormap [%rd2];\n"
        "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2], "
        "[%rd2, {%r3}], [%r1];\n"
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
        "[%r2+128], [%rd2, {%r3, %r4}], [%r1];\n"
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2], "
        "[%rd2, {%r3, %r4, %r5}], [%r1];\n"
        "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2], "
        "[%rd2, {%r3, %r4, %r5, %r6}], [%r1];\n"
        "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2], "
        "[%rd2, {%r3, %r4, %r5, %r6, %r7}], [%r1];\n"
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes."
        "multicast::cluster [%r2], [%rd2, {%r3, %r4}], [%r1], %rs1;\n"
        "fence.proxy.async.shared::cta;\n"
        "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd2, {%r3, %r4}], [%r2];\n"
        "cp.async.bulk.commit_group;\n"
        "cp.async.bulk.wait_group.read 0;\n"
        "cp.async.bulk.wait_group 1;");
  const std::string ptx = m.emit();
  CHECK_THAT(ptx, Contains(".param .align 64 .b8 map[128]") && Contains("mov.u64 %rd1, map;") &&
                      Contains("cvta.param.u64 %rd2, %rd1;"));
  test::require_assembles(m);
}

TEST_CASE("cp.async.bulk.tensor misuse: sm_90, the box's alignment, the rank", "[dsl][tma]") {
  {
    Module m(Arch::Sm80, {8, 0});
    Kernel& k = m.kernel("k");
    const TensorMap map{k.reg<U64>()};
    const SharedPtr<F32> box{k.reg<U32>(), 0};
    const SharedPtr<B64> bar{k.reg<U32>(), 0};
    const Reg<S32> x = k.reg<S32>();
    CHECK_THAT(test::error_of([&] { k.cp_async_bulk_tensor(box, map, {x}, bar); }),
               Contains("cp.async.bulk.tensor.1d") && Contains("needs sm_90 or newer"));
  }
  Module m(Arch::Sm90, {8, 0});
  Kernel& k = m.kernel("k");
  const TensorMap map{k.reg<U64>()};
  const SharedPtr<F32> box{k.reg<U32>(), 0};
  const SharedPtr<B64> bar{k.reg<U32>(), 0};
  const Reg<S32> x = k.reg<S32>();
  CHECK_THAT(test::error_of([&] { k.cp_async_bulk_tensor(box + 4, map, {x}, bar); }),
             Contains("shared-memory box is 128-byte aligned: the constant offset 16 is not a "
                      "multiple of 128"));
  CHECK_THAT(test::error_of([&] {
               k.cp_async_bulk_tensor(box, map, {x, x, x, x, x, x}, bar);
             }),
             Contains("copies 1 to 5 dimensions, got 6 coordinates"));
}
