#include <catch2/catch.hpp>

#include <cstddef>
#include <limits>
#include <string>

#include "gpu_support.hpp"
#include "ptxdsl/runtime.hpp"

using namespace ptxdsl;
using namespace ptxdsl::runtime;

TEST_CASE("without a driver, the runtime says so and throws ptxdsl::Error", "[runtime]") {
  std::string why;
  if (driver_available(&why)) {
    SUCCEED("a driver is present: the no-driver path is exercised on machines without one");
    return;
  }
  CHECK(why.rfind("no CUDA driver found (libcuda.so.1): ", 0) == 0);
  CHECK_THROWS_WITH(Context(0), Catch::StartsWith("no CUDA driver found (libcuda.so.1): "));
  CHECK_THROWS_AS(require_driver(), Error);
  CHECK_THROWS_AS(driver_version(), Error);
}

TEST_CASE("a buffer whose byte count overflows a size_t is refused, not wrapped", "[runtime]") {
  const std::size_t most = std::numeric_limits<std::size_t>::max();
  CHECK(detail::checked_bytes(most / 8, 8) == most / 8 * 8);
  CHECK(detail::checked_bytes(most, 0) == 0);
  CHECK_THROWS_WITH(
      detail::checked_bytes(most / 8 + 1, 8),
      Catch::StartsWith("2305843009213693952 elements of 8 bytes do not fit a size_t"));
}

TEST_CASE("the newest PTX version a driver takes", "[runtime]") {
  CHECK(newest_ptx_version(11080) == PtxVersion{7, 8});
  CHECK(newest_ptx_version(12000) == PtxVersion{8, 0});
  CHECK(newest_ptx_version(12010) == PtxVersion{8, 1});
  CHECK(newest_ptx_version(12060) == PtxVersion{8, 5});  // 12.6 brought no new PTX
  CHECK(newest_ptx_version(12080) == PtxVersion{8, 7});
  CHECK(newest_ptx_version(13000) == PtxVersion{9, 0});
  CHECK(newest_ptx_version(13020) == PtxVersion{9, 0});  // newer than the table: its newest
}

TEST_CASE("the driver loads and describes the device", "[runtime][gpu]") {
  PTXDSL_REQUIRE_GPU(ctx);
  CHECK(driver_version() >= 12000);
  // The norms' default (8.1 from sm_90 on) is what the driver takes, or lowered to it.
  CHECK(newest_ptx_version(driver_version()) >= PtxVersion{8, 0});
  CHECK(device_count() >= 1);
  const DeviceInfo& info = ctx.info();
  CHECK(!info.name.empty());
  CHECK(info.model.sm_count > 0);
  CHECK(info.model.shared_per_block_optin >= info.model.shared_per_block);
  CHECK(info.total_memory > 0);
  CHECK(ctx.handle() != nullptr);
  WARN("device 0: " << info.model.summary() << ", " << info.total_memory / (1024 * 1024)
                    << " MiB, driver " << driver_version());
  CHECK_THROWS_WITH(Context(info.ordinal + 1000), Catch::Contains("device must be in [0, "));
  ctx.synchronize();
}

TEST_CASE("buffers copy, fill and move", "[runtime][gpu]") {
  PTXDSL_REQUIRE_GPU(ctx);
  std::vector<float> host = {1, 2, 3, 4, 5};
  DeviceBuffer<float> b(ctx, std::span<const float>(host));
  CHECK(b.size() == 5);
  CHECK(b.bytes() == 20);
  CHECK(b.address() % 256 == 0);
  CHECK(b.to_host() == host);

  b.fill(-0.5f);
  CHECK(b.to_host() == std::vector<float>(5, -0.5f));

  DeviceBuffer<std::uint16_t> h(ctx, 7);
  h.fill(0x7E00);  // f16 NaN
  CHECK(h.to_host() == std::vector<std::uint16_t>(7, 0x7E00));

  DeviceBuffer<float> moved = std::move(b);
  CHECK(moved.to_host() == std::vector<float>(5, -0.5f));
  CHECK(b.address() == 0);  // NOLINT(bugprone-use-after-move): moved-from is empty

  std::vector<float> back(2);
  CHECK_THROWS_WITH(moved.download(std::span<float>(back), 4), Catch::Contains("overruns"));

  // Raw-address copies, at an offset.
  copy_to_device(ctx, moved.address() + 4, host.data(), 8);
  copy_to_host(ctx, back.data(), moved.address() + 4, 8);
  CHECK(back == std::vector<float>{1, 2});
}

TEST_CASE("streams and events order and time work", "[runtime][gpu]") {
  PTXDSL_REQUIRE_GPU(ctx);
  Stream s(ctx);
  Event start(ctx), stop(ctx);
  DeviceBuffer<std::uint32_t> b(ctx, 1 << 24);
  start.record(s);
  b.fill(0xFFFFFFFFu, s);
  stop.record(s);
  stop.synchronize();
  const float ms = stop.elapsed_ms_since(start);
  CHECK(ms >= 0.0f);
  s.synchronize();
  CHECK(b.to_host()[12345] == 0xFFFFFFFFu);

  // Device to device on the stream, after the fill it follows.
  DeviceBuffer<std::uint32_t> c(ctx, 1 << 20);
  c.fill(7u, s);
  copy_device_async(ctx, b.address() + 4, c.address(), c.bytes(), s);
  s.synchronize();
  const std::vector<std::uint32_t> got = b.to_host();
  CHECK(got[0] == 0xFFFFFFFFu);
  CHECK(got[1] == 7u);
  CHECK(got[1 << 20] == 7u);
  CHECK(got[(1 << 20) + 1] == 0xFFFFFFFFu);
  // An _async fill only enqueues, on the legacy stream too: it is there once the context is synced.
  fill_u16_async(ctx, c.address(), 0x7E00, 2, nullptr);
  ctx.synchronize();
  CHECK(c.to_host()[0] == 0x7E007E00u);
  Stream moved = std::move(s);
  CHECK(moved.handle() != nullptr);
  CHECK(s.handle() == nullptr);  // NOLINT(bugprone-use-after-move)
}
