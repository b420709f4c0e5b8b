#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "gpu_support.hpp"
#include "ptxdsl/dsl.hpp"
#include "ptxdsl/dsl/executor.hpp"
#include "ptxdsl/runtime.hpp"
#include "tma_load_kernel.hpp"

// The runtime's tensor maps: every argument checked before the driver sees it (no driver needed),
// and on an sm_90 GPU a box loaded by TMA with out-of-bounds fill against the executor's model of
// the same map over the same bytes; a launch that mixes up tensor maps and pointers is refused.
using namespace ptxdsl;
using namespace ptxdsl::runtime;
using Catch::Matchers::Contains;

namespace {

std::string refusal(const TensorMapSpec& spec, const TensorMapOptions& options = {}) {
  try {
    check_tensor_map_arguments(spec, options);
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

const TensorMapSpec kBf16Tile{.global_address = 0x10000,
                              .element = ScalarType::BF16,
                              .dims = {520, 1000},
                              .strides_bytes = {1040},
                              .box = {64, 128},
                              .swizzle = Swizzle::B128};

constexpr std::uint32_t kThreads = 128;

// test::build_tma_load as `m`'s kernel "tma_load", finalized.
Kernel& load_kernel(Module& m, std::uint32_t rank, std::uint32_t box_bytes) {
  Kernel& k = m.kernel("tma_load");
  test::build_tma_load(k, rank, box_bytes, kThreads);
  k.finalize();
  return k;
}

// The box at `coords` of `tensor` through `spec` (its address filled in here) on the executor and
// on the GPU: the shared bytes of each.
void compare_box(const Context& ctx, TensorMapSpec spec, const std::vector<std::uint8_t>& tensor,
                 const std::vector<std::int32_t>& coords) {
  const std::uint32_t bytes = test::tma_box_bytes(spec);
  const auto rank = static_cast<std::uint32_t>(coords.size());
  Module m(Arch::Sm90, {8, 0});
  Kernel& k = load_kernel(m, rank, bytes);

  CpuDevice dev;
  TensorMapSpec cpu_spec = spec;
  cpu_spec.global_address = dev.upload<std::uint8_t>(tensor, "tensor").address;
  std::vector<std::uint8_t> want(bytes, 0xAB);
  std::vector<Arg> args = {Arg::of_tensor_map(cpu_spec), dev.map<std::uint8_t>(want, "out")};
  for (std::int32_t c : coords) args.emplace_back(c);
  dev.launch(k, {1, kThreads}, args);

  const std::string ptx = m.emit();
  const Function f(ModuleCache::global().get(ctx, ptx, k.contract().entry), k.contract());
  DeviceBuffer<std::uint8_t> global(ctx, std::span<const std::uint8_t>(tensor));
  DeviceBuffer<std::uint8_t> out(ctx, bytes);
  spec.global_address = global.address();
  const runtime::TensorMap map = runtime::TensorMap::tiled(spec);
  Stream s(ctx);
  if (rank == 2) {
    launch(f, 1, kThreads, 0, s, map, out, coords[0], coords[1]);
  } else {
    launch(f, 1, kThreads, 0, s, map, out, coords[0], coords[1], coords[2]);
  }
  s.synchronize();
  const std::vector<std::uint8_t> got = out.to_host();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < bytes; ++i) wrong += got[i] != want[i] ? 1 : 0;
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("tensor map arguments are checked before the driver sees them", "[runtime][tma]") {
  CHECK(refusal(kBf16Tile) == "(accepted)");
  TensorMapSpec s = kBf16Tile;
  s.global_address = 0x10008;
  CHECK_THAT(refusal(s), Contains("the global address must be 16-byte aligned, got 0x10008"));
  s = kBf16Tile;
  s.strides_bytes = {1000};
  CHECK_THAT(refusal(s), Contains("stride 1 must be a positive multiple of 16 bytes, got 1000"));
  s = kBf16Tile;
  s.strides_bytes = {std::uint64_t{1} << 40};
  CHECK_THAT(refusal(s), Contains("stride 1 must be below 2^40 bytes"));
  s = kBf16Tile;
  s.box = {64, 257};
  CHECK_THAT(refusal(s), Contains("box size 1 must be in [1, 256], got 257"));
  s = kBf16Tile;
  s.dims = {};
  CHECK_THAT(refusal(s), Contains("the rank must be in [1, 5], got 0"));
  s = kBf16Tile;
  s.box = {32, 128};
  CHECK_THAT(refusal(s), Contains("the box's inner 64 bytes must be a multiple of 16 equal to the "
                                  "128-byte swizzle"));
  s = kBf16Tile;
  s.element = ScalarType::E4M3;
  s.box = {128, 128};
  CHECK(refusal(s) == "(accepted)");
  s.nan_fill = true;
  CHECK_THAT(refusal(s), Contains("a NaN fill needs float elements, got .e4m3"));
  s = kBf16Tile;
  s.element = ScalarType::F16x2;
  s.box = {32, 128};
  CHECK_THAT(refusal(s), Contains("the driver has no tensor map of .f16x2 elements"));
  s.element = ScalarType::Pred;
  CHECK_THAT(refusal(s), Contains("the element type must be 1, 2, 4 or 8 bytes, got .pred"));
  CHECK_THAT(refusal(kBf16Tile, {.element_strides = {1, 9}}),
             Contains("element stride 1 must be in [1, 8], got 9"));
  CHECK_THAT(refusal(kBf16Tile, {.element_strides = {1}}),
             Contains("a rank-2 map takes 2 element strides (or none), got 1"));
  CHECK_THAT(refusal(kBf16Tile, {.interleave = Interleave::B16}),
             Contains("an interleaved map needs rank 3 to 5, got 2"));
  TensorMapSpec nchw{.global_address = 0x10010,
                     .element = ScalarType::F16,
                     .dims = {8, 16, 16},
                     .strides_bytes = {32, 512},
                     .box = {8, 8, 8}};
  CHECK(refusal(nchw, {.interleave = Interleave::B16}) == "(accepted)");
  CHECK_THAT(refusal(nchw, {.interleave = Interleave::B32}),
             Contains("the 32-byte interleave needs a 32-byte aligned address, got 0x10010"));
  nchw.swizzle = Swizzle::B64;
  CHECK_THAT(refusal(nchw, {.interleave = Interleave::B16}),
             Contains("an interleaved map swizzles by none or 32B, got 64B"));
  CHECK_THAT(refusal(kBf16Tile, {.l2_promotion = static_cast<L2Promotion>(7)}),
             Contains("the L2 promotion must be none, 64B, 128B or 256B, got 7"));
  CHECK(describe(kBf16Tile, {.l2_promotion = L2Promotion::B128}) ==
        "bf16 dims [520, 1000] strides [1040] box [64, 128] swizzle 128B l2 128B oob zero at "
        "0x10000");
}

TEST_CASE("a TMA box with out-of-bounds fill on the GPU is the executor's", "[runtime][gpu][tma]") {
  PTXDSL_REQUIRE_GPU(ctx);
  if (!ctx.info().model.runs(Arch::Sm90)) PTXDSL_SKIP("TMA needs an sm_90 device");
  // 100 × 52 bf16 elements, rows padded to 208 bytes, each holding its own index.
  const std::uint64_t d0 = 100, d1 = 52, row = 208;
  std::vector<std::uint8_t> tensor(row * d1, 0);
  for (std::uint64_t i1 = 0; i1 < d1; ++i1) {
    for (std::uint64_t i0 = 0; i0 < d0; ++i0) {
      const auto v = static_cast<std::uint16_t>(i1 * d0 + i0 + 1);
      std::memcpy(tensor.data() + i1 * row + i0 * 2, &v, 2);
    }
  }
  for (const Swizzle swizzle : {Swizzle::None, Swizzle::B32, Swizzle::B64, Swizzle::B128}) {
    const std::uint32_t inner = swizzle == Swizzle::B32 ? 16 : swizzle == Swizzle::B64 ? 32 : 64;
    for (const bool nan_fill : {false, true}) {
      for (const auto& at : std::vector<std::vector<std::int32_t>>{{0, 0}, {56, 40}, {-8, -5}}) {
        INFO("swizzle " << static_cast<int>(swizzle) << ", NaN fill " << nan_fill << ", at ("
                        << at[0] << ", " << at[1] << ")");
        compare_box(ctx,
                    {.element = ScalarType::BF16,
                     .dims = {d0, d1},
                     .strides_bytes = {row},
                     .box = {inner, 24},
                     .swizzle = swizzle,
                     .nan_fill = nan_fill},
                    tensor, at);
      }
    }
  }
  // A 3-D f32 box across the far corner.
  std::vector<std::uint8_t> cube(16 * 7 * 5 * 4);
  for (std::size_t i = 0; i < cube.size() / 4; ++i) {
    const auto v = static_cast<float>(i);
    std::memcpy(cube.data() + 4 * i, &v, 4);
  }
  compare_box(ctx,
              {.element = ScalarType::F32,
               .dims = {12, 7, 5},
               .strides_bytes = {64, 448},
               .box = {8, 4, 4},
               .nan_fill = true},
              cube, {8, 5, 3});
}

TEST_CASE("a launch refuses a pointer for a tensor map and a tensor map for a pointer",
          "[runtime][gpu][tma]") {
  PTXDSL_REQUIRE_GPU(ctx);
  if (!ctx.info().model.runs(Arch::Sm90)) PTXDSL_SKIP("TMA needs an sm_90 device");
  Module m(Arch::Sm90, {8, 0});
  Kernel& k = load_kernel(m, 2, 64 * 8 * 2);
  const Function f(ModuleCache::global().get(ctx, m.emit(), k.contract().entry), k.contract());
  DeviceBuffer<std::uint16_t> tensor(ctx, 64 * 8);
  DeviceBuffer<std::uint32_t> out(ctx, 64 * 4);
  const runtime::TensorMap map = runtime::TensorMap::tiled({.global_address = tensor.address(),
                                                            .element = ScalarType::BF16,
                                                            .dims = {64, 8},
                                                            .strides_bytes = {128},
                                                            .box = {64, 8}});
  Stream s(ctx);
  const auto refusal = [&](const auto& first, const auto& second) {
    try {
      launch(f, 1, kThreads, 0, s, first, second, 0, 0);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(launched)");
  };
  CHECK_THAT(refusal(out, out),
             Contains("argument 0 ('map') must be a tensor map (runtime::TensorMap), got a "
                      "device pointer"));
  CHECK_THAT(refusal(map, map), Contains("argument 1 ('out') must be a pointer to u32"));
  CHECK_THAT(refusal(map, map), Contains("got a TensorMap"));
  CHECK(refusal(map, out) == "(launched)");
  s.synchronize();
}
