// The TMA unit's tensor copies on the executor: boxes of 2-D to 5-D tensors into shared memory with
// every swizzle, out-of-bounds elements filled with zero or NaN, bytes completing on an mbarrier;
// a box multicast into both CTAs of a cluster; a box stored back (its outside elements skipped)
// and the fence.proxy.async it needs; and the Hopper GEMM's path: tiles loaded by TMA with the
// 128-byte swizzle and multiplied by wgmma straight from shared memory.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ptxdsl/dsl.hpp"
#include "ptxdsl/dsl/executor.hpp"
#include "tma_load_kernel.hpp"

using namespace ptxdsl;
using Catch::Matchers::Contains;

namespace {

constexpr std::uint32_t kThreads = 128;

// Runs test::build_tma_load over `tensor` (its bytes) with `spec` (global_address filled in here)
// at `coords`; returns the box's shared bytes.
std::vector<std::uint8_t> load_box(TensorMapSpec spec, const std::vector<std::uint8_t>& tensor,
                                   const std::vector<std::int32_t>& coords) {
  const std::uint32_t box_bytes = test::tma_box_bytes(spec);
  Module m(Arch::Sm90, {8, 0});
  Kernel& k = m.kernel("load");
  test::build_tma_load(k, static_cast<std::uint32_t>(coords.size()), box_bytes, kThreads);
  k.finalize();
  CpuDevice dev;
  spec.global_address = dev.upload<std::uint8_t>(tensor, "tensor").address;
  std::vector<std::uint8_t> out(box_bytes, 0xAB);
  std::vector<Arg> args = {Arg::of_tensor_map(spec), dev.map<std::uint8_t>(out, "out")};
  for (std::int32_t c : coords) args.emplace_back(c);
  dev.launch(k, {1, kThreads}, args);
  return out;
}

std::uint16_t u16_at(const std::vector<std::uint8_t>& bytes, std::size_t at) {
  std::uint16_t v;
  std::memcpy(&v, bytes.data() + at, 2);
  return v;
}

}  // namespace

TEST_CASE("cp.async.bulk.tensor 2-D boxes: every swizzle, out-of-bounds filled with zero or NaN",
          "[executor][tma]") {
  // 72 × 40 bf16 elements, element (i0, i1) holding i1·100 + i0; rows 160 bytes apart.
  const std::uint64_t d0 = 72, d1 = 40, row_bytes = 160;
  std::vector<std::uint8_t> tensor(row_bytes * d1, 0);
  for (std::uint64_t i1 = 0; i1 < d1; ++i1) {
    for (std::uint64_t i0 = 0; i0 < d0; ++i0) {
      const auto v = static_cast<std::uint16_t>(i1 * 100 + i0);
      std::memcpy(tensor.data() + i1 * row_bytes + i0 * 2, &v, 2);
    }
  }
  for (const Swizzle swizzle : {Swizzle::None, Swizzle::B32, Swizzle::B64, Swizzle::B128}) {
    const std::uint32_t inner = swizzle == Swizzle::B32 ? 16 : swizzle == Swizzle::B64 ? 32 : 64;
    for (const bool nan_fill : {false, true}) {
      for (const auto& coords : std::vector<std::vector<std::int32_t>>{
               {0, 0}, {static_cast<std::int32_t>(d0) - 8, 30}, {-8, -4}}) {
        INFO("swizzle " << static_cast<int>(swizzle) << ", NaN fill " << nan_fill << ", at ("
                        << coords[0] << ", " << coords[1] << ")");
        const TensorMapSpec spec{.element = ScalarType::BF16,
                                 .dims = {d0, d1},
                                 .strides_bytes = {row_bytes},
                                 .box = {inner, 16},
                                 .swizzle = swizzle,
                                 .nan_fill = nan_fill};
        const std::vector<std::uint8_t> got = load_box(spec, tensor, coords);
        std::uint32_t wrong = 0;
        for (std::uint32_t e = 0; e < inner * 16; ++e) {
          const std::int64_t g0 = coords[0] + e % inner, g1 = coords[1] + e / inner;
          const bool inside = g0 >= 0 && g0 < static_cast<std::int64_t>(d0) && g1 >= 0 &&
                              g1 < static_cast<std::int64_t>(d1);
          const std::uint16_t want = inside     ? static_cast<std::uint16_t>(g1 * 100 + g0)
                                     : nan_fill ? 0x7FFF
                                                : 0;
          if (u16_at(got, swizzled_address(swizzle, e * 2)) != want) ++wrong;
        }
        CHECK(wrong == 0);
      }
    }
  }
}

TEST_CASE("cp.async.bulk.tensor 3-D and 5-D f32 boxes through padded strides", "[executor][tma]") {
  // Dimensions 8, 3, 4, 2, 3 with strides padded (48, 144, 576, 1152 bytes); each float holds its
  // own byte offset / 4.
  const std::vector<std::uint64_t> dims = {8, 3, 4, 2, 3};
  const std::vector<std::uint64_t> strides = {48, 144, 576, 1152};
  std::vector<std::uint8_t> tensor(1152 * 3, 0);
  for (std::size_t o = 0; o < tensor.size(); o += 4) {
    const auto v = static_cast<float>(o / 4);
    std::memcpy(tensor.data() + o, &v, 4);
  }
  for (const std::uint32_t rank : {3u, 5u}) {
    INFO("rank " << rank);
    TensorMapSpec spec{.element = ScalarType::F32,
                       .dims = {dims.begin(), dims.begin() + rank},
                       .strides_bytes = {strides.begin(), strides.begin() + rank - 1},
                       .box = {4, 2, 3, 2, 2},
                       .nan_fill = true};
    spec.box.resize(rank);
    const std::vector<std::int32_t> coords =
        rank == 3 ? std::vector<std::int32_t>{4, 2, -1} : std::vector<std::int32_t>{4, 1, 3, 1, 2};
    const std::vector<std::uint8_t> got = load_box(spec, tensor, coords);
    std::uint64_t elements = 1;
    for (std::uint32_t b : spec.box) elements *= b;
    std::uint32_t wrong = 0, outside = 0;
    for (std::uint64_t e = 0; e < elements; ++e) {
      std::uint64_t rest = e, offset = 0;
      bool inside = true;
      for (std::uint32_t i = 0; i < rank; ++i) {
        const std::int64_t g = coords[i] + static_cast<std::int64_t>(rest % spec.box[i]);
        rest /= spec.box[i];
        inside = inside && g >= 0 && g < static_cast<std::int64_t>(dims[i]);
        offset += static_cast<std::uint64_t>(g) * (i == 0 ? 4 : strides[i - 1]);
      }
      float v;
      std::memcpy(&v, got.data() + e * 4, 4);
      outside += inside ? 0 : 1;
      if (inside ? v != static_cast<float>(offset / 4) : !std::isnan(v)) ++wrong;
    }
    CHECK(outside > 0);
    CHECK(wrong == 0);
  }
}

TEST_CASE("a box whose first row does not start on 16 bytes is reported, as an H100 traps on it",
          "[executor][tma]") {
  std::vector<std::uint8_t> tensor(160 * 40, 0);
  const TensorMapSpec spec{
      .element = ScalarType::BF16, .dims = {72, 40}, .strides_bytes = {160}, .box = {16, 16}};
  std::string message;
  try {
    load_box(spec, tensor, {4, 0});
  } catch (const Error& e) {
    message = e.what();
  }
  CHECK_THAT(message, Contains("innermost coordinate 4 (8 bytes): it must start on a multiple of "
                               "16 bytes (8 elements)"));
  CHECK_NOTHROW(load_box(spec, tensor, {-8, 0}));
}

namespace {

// A box of 8 × 4 f32 written by the threads (element e holds 1000 + e), then stored by thread 0
// into a 20 × 10 tensor at (c0, c1); the tensor starts at -1.
std::string store_box(std::int32_t c0, std::int32_t c1, bool proxy_fence,
                      std::vector<float>& tensor) {
  Module m(Arch::Sm90, {8, 0});
  Kernel& k = m.kernel("store");
  k.require_threads(kThreads);
  const TensorMap map = k.param_tensor_map("map");
  const Reg<S32> x = k.param<S32>("c0"), y = k.param<S32>("c1");
  const SharedPtr<F32> box = k.shared_array<F32>("box", 32, 128);
  const Reg<U32> t = k.tid_x();
  k.if_(t < 32u, [&] { k.st(k.index(box, t), k.add(k.cvt<F32>(t), 1000.0f)); });
  if (proxy_fence) k.fence_proxy_async();
  k.bar_sync();
  k.if_(t == 0u, [&] {
    k.cp_async_bulk_tensor_store(map, {x, y}, box);
    k.cp_async_bulk_commit_group();
    k.cp_async_bulk_wait_group(0, true);
  });
  k.finalize();
  CpuDevice dev;
  tensor.assign(20 * 10, -1.0f);
  const TensorMapSpec spec{.global_address = dev.map<float>(tensor, "tensor").address,
                           .element = ScalarType::F32,
                           .dims = {20, 10},
                           .strides_bytes = {80},
                           .box = {8, 4}};
  try {
    dev.launch(k, {1, kThreads}, {Arg::of_tensor_map(spec), c0, c1});
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE(
    "cp.async.bulk.tensor stores: elements outside the tensor are skipped; the box needs "
    "fence.proxy.async after its ordinary stores",
    "[executor][tma]") {
  std::vector<float> tensor;
  REQUIRE(store_box(16, 8, true, tensor).empty());
  std::uint32_t wrong = 0;
  for (std::uint32_t y = 0; y < 10; ++y) {
    for (std::uint32_t x = 0; x < 20; ++x) {
      const bool stored = x >= 16 && y >= 8;
      const float want = stored ? 1000.0f + static_cast<float>((y - 8) * 8 + (x - 16)) : -1.0f;
      if (tensor[y * 20 + x] != want) ++wrong;
    }
  }
  CHECK(wrong == 0);
  CHECK_THAT(store_box(0, 0, false, tensor),
             Contains("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group") &&
                 Contains("through the async proxy, which thread (0, 0, 0) wrote with an ordinary "
                          "(generic-proxy) store and no fence.proxy.async since"));
}

TEST_CASE("cp.async.bulk.tensor .multicast::cluster lands in both CTAs of a cluster",
          "[executor][tma]") {
  Module m(Arch::Sm90, {8, 0});
  Kernel& k = m.kernel("multicast");
  k.require_threads(kThreads);
  const TensorMap map = k.param_tensor_map("map");
  const GlobalPtr<U32> out = k.param_ptr<U32>("out");
  const SharedPtr<B64> bar = k.shared_array<B64>("bar", 1, 8);
  const SharedPtr<U32> box = k.shared_array<U32>("box", 64, 128);
  const Reg<U32> t = k.tid_x(), rank = k.cluster_ctarank();
  k.if_(t == 0u, [&] {
    k.mbarrier_init(bar, 1u);
    k.fence_mbarrier_init();
  });
  k.cluster_sync();  // every CTA's mbarrier is initialized before rank 0's copy reaches it
  k.if_(t == 0u, [&] { k.mbarrier_arrive_expect_tx(bar, 256u); });
  k.if_((t == 0u) && (rank == 0u), [&] {
    const Reg<S32> zero = k.mov<S32>(0);
    k.cp_async_bulk_tensor_multicast(box, map, {zero, zero}, bar, k.mov<U16>(3));
  });
  k.mbarrier_wait(bar, 0u);
  k.if_(t < 64u, [&] { k.st(k.index(out, k.add(k.mul(rank, 64u), t)), k.ld(k.index(box, t))); });
  k.cluster_sync();
  k.finalize();
  CpuDevice dev;
  std::vector<std::uint32_t> tensor(16 * 4), got(128, 0);
  for (std::uint32_t i = 0; i < tensor.size(); ++i) tensor[i] = 7 * i + 1;
  const TensorMapSpec spec{.global_address = dev.upload<std::uint32_t>(tensor, "tensor").address,
                           .element = ScalarType::U32,
                           .dims = {16, 4},
                           .strides_bytes = {64},
                           .box = {16, 4}};
  dev.launch(k, {.grid = {2, 1, 1}, .block = {kThreads, 1, 1}, .cluster = {2, 1, 1}},
             {Arg::of_tensor_map(spec), dev.map<std::uint32_t>(got, "out")});
  for (std::uint32_t r = 0; r < 2; ++r) {
    for (std::uint32_t i = 0; i < 64; ++i) CHECK(got[r * 64 + i] == tensor[i]);
  }
}

TEST_CASE("tensor maps refuse what the tiled mode does not allow", "[executor][tma]") {
  const auto refusal = [](TensorMapSpec s) {
    try {
      executor_tensor_map(s);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  const TensorMapSpec ok{.element = ScalarType::BF16,
                         .dims = {64, 64},
                         .strides_bytes = {128},
                         .box = {64, 8},
                         .swizzle = Swizzle::B128};
  CHECK(refusal(ok) == "(accepted)");
  TensorMapSpec s = ok;
  s.box = {32, 8};
  CHECK_THAT(refusal(s), Contains("the box's inner 64 bytes must be a multiple of 16 equal to "
                                  "the 128-byte swizzle"));
  s = ok;
  s.strides_bytes = {100};
  CHECK_THAT(refusal(s), Contains("stride 1 must be a positive multiple of 16 bytes, got 100"));
  s = ok;
  s.box = {64, 300};
  CHECK_THAT(refusal(s), Contains("box size 1 must be in [1, 256], got 300"));
  s = ok;
  s.dims = {1, 2, 3, 4, 5, 6};
  CHECK_THAT(refusal(s), Contains("the rank must be in [1, 5], got 6"));
  s = ok;
  s.element = ScalarType::U16;
  s.nan_fill = true;
  CHECK_THAT(refusal(s), Contains("a NaN fill needs float elements, got .u16"));
}

TEST_CASE("TMA tiles with the 128-byte swizzle feed wgmma: a 64x64x64 bf16 product",
          "[executor][tma][wgmma]") {
  Module m(Arch::Sm90a, {8, 0});
  Kernel& k = m.kernel("gemm_tile");
  k.require_threads(kThreads);
  const TensorMap map_a = k.param_tensor_map("a"), map_b = k.param_tensor_map("b");
  const GlobalPtr<F32> out = k.param_ptr<F32>("d");
  const SharedPtr<B64> bar = k.shared_array<B64>("bar", 1, 8);
  const SharedPtr<BF16> sa = k.shared_array<BF16>("sa", 64 * 64, 1024);
  const SharedPtr<BF16> sb = k.shared_array<BF16>("sb", 64 * 64, 1024);
  const Reg<U32> t = k.tid_x();
  k.if_(t == 0u, [&] {
    k.mbarrier_init(bar, 1u);
    k.fence_mbarrier_init();
  });
  k.bar_sync();
  k.if_(t == 0u, [&] {
    k.mbarrier_arrive_expect_tx(bar, 2u * 64 * 64 * 2);
    const Reg<S32> zero = k.mov<S32>(0), row = k.mov<S32>(16);
    k.cp_async_bulk_tensor(sa, map_a, {zero, row}, bar);  // A's rows 16..79
    k.cp_async_bulk_tensor(sb, map_b, {zero, zero}, bar);
  });
  k.mbarrier_wait(bar, 0u);
  WgmmaAcc<64> acc = k.wgmma_acc<64>();
  k.wgmma_fence();
  // K-major rows of 128 bytes in 1024-byte patterns; each K step of 16 is 32 bytes further.
  const MatrixLayout layout{16, 1024, Swizzle::B128};
  for (int s = 0; s < 4; ++s) {
    k.wgmma_mma_async<BF16>(acc, k.matrix_descriptor(sa + 16 * s, layout),
                            k.matrix_descriptor(sb + 16 * s, layout), {.accumulate = s > 0});
  }
  k.wgmma_commit_group();
  k.wgmma_wait_group(0);
  for (std::size_t i = 0; i < acc.regs.size(); ++i) {
    k.st(k.index(out, k.add(k.mul(t, 32u), static_cast<std::uint32_t>(i))), acc.regs[i]);
  }
  k.finalize();

  // Values multiples of 1/4 in [-2, 2]: every partial sum is exact in f32 and float64 alike.
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> pick(-8, 8);
  std::vector<float> a(80 * 64), b(64 * 64);
  for (float& v : a) v = static_cast<float>(pick(rng)) / 4;
  for (float& v : b) v = static_cast<float>(pick(rng)) / 4;
  std::vector<std::uint16_t> a16(a.size()), b16(b.size());
  for (std::size_t i = 0; i < a.size(); ++i) a16[i] = f32_to_bf16_bits(a[i]);
  for (std::size_t i = 0; i < b.size(); ++i) b16[i] = f32_to_bf16_bits(b[i]);
  CpuDevice dev;
  const TensorMapSpec spec_a{.global_address = dev.upload<std::uint16_t>(a16, "A").address,
                             .element = ScalarType::BF16,
                             .dims = {64, 80},
                             .strides_bytes = {128},
                             .box = {64, 64},
                             .swizzle = Swizzle::B128};
  TensorMapSpec spec_b = spec_a;
  spec_b.global_address = dev.upload<std::uint16_t>(b16, "B").address;
  spec_b.dims = {64, 64};
  std::vector<float> d(kThreads * 32, -1.0f);
  dev.launch(k, {1, kThreads},
             {Arg::of_tensor_map(spec_a), Arg::of_tensor_map(spec_b), dev.map<float>(d, "d")});
  std::uint32_t wrong = 0;
  for (std::uint32_t th = 0; th < kThreads; ++th) {
    for (std::uint32_t i = 0; i < 32; ++i) {
      const std::uint32_t lane = th % 32;
      const std::uint32_t row = 16 * (th / 32) + lane / 4 + 8 * (i / 2 % 2);
      const std::uint32_t col = 2 * (lane % 4) + 8 * (i / 4) + i % 2;
      double want = 0;
      for (std::uint32_t kk = 0; kk < 64; ++kk) {
        want += static_cast<double>(a[(16 + row) * 64 + kk]) * b[col * 64 + kk];
      }
      if (d[th * 32 + i] != want) ++wrong;
    }
  }
  CHECK(wrong == 0);
}
