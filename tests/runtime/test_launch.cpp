#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "gpu_support.hpp"
#include "ptxdsl/runtime.hpp"
#include "small_kernels.hpp"

using namespace ptxdsl;
using namespace ptxdsl::runtime;

namespace {

Function load(const Context& ctx, const test::SmallKernel& k) {
  return Function(ModuleCache::global().get(ctx, k.ptx, k.contract.entry), k.contract);
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("launch runs a DSL kernel with checked arguments", "[runtime][gpu]") {
  PTXDSL_REQUIRE_GPU(ctx);
  const Function axpy = load(ctx, test::axpy_kernel());
  const std::uint32_t n = 1000;
  std::vector<float> x(n), y(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 1.0f;
  }
  DeviceBuffer<float> dx(ctx, std::span<const float>(x)), dy(ctx, std::span<const float>(y));
  Stream s(ctx);
  launch(axpy, (n + 127) / 128, 128, 0, s, dx, dy.ptr(), 2.0f, n);
  s.synchronize();
  std::vector<float> out = dy.to_host();
  for (std::uint32_t i = 0; i < n; ++i) REQUIRE(out[i] == 2.0f * static_cast<float>(i) + 1.0f);

  // A raw std::uint64_t address is a pointer argument too.
  launch(axpy, (n + 127) / 128, 128, 0, s, dx.address(), dy.address(), -2.0f, n);
  s.synchronize();
  CHECK(dy.to_host()[10] == 1.0f);

  SECTION("argument count, kinds, sizes and the block are checked before the driver sees them") {
    CHECK_THROWS_WITH(launch(axpy, 8, 128, 0, s, dx, dy, 2.0f),
                      "launch of 'axpy': the kernel takes 4 arguments, got 3");
    CHECK_THROWS_WITH(launch(axpy, 8, 128, 0, s, dx, dy, 2.0, n),
                      Catch::Contains("argument 2 ('a') must be a .f32 scalar (a 4-byte float), "
                                      "got a 8-byte floating-point value"));
    CHECK_THROWS_WITH(launch(axpy, 8, 128, 0, s, dx, dy, 2.0f, 2.0f),
                      Catch::Contains("argument 3 ('n') must be a .u32 scalar"));
    CHECK_THROWS_WITH(launch(axpy, 8, 128, 0, s, dx, dy, 2.0f, std::uint64_t{n}),
                      Catch::Contains("argument 3 ('n')"));
    DeviceBuffer<double> wrong(ctx, 4);
    CHECK_THROWS_WITH(launch(axpy, 8, 128, 0, s, wrong, dy, 2.0f, n),
                      Catch::Contains("argument 0 ('x') must be a pointer to f32") &&
                          Catch::Contains("got a device pointer to 8-byte elements"));
    CHECK_THROWS_WITH(launch(axpy, 8, 128, 0, s, 1.0f, dy, 2.0f, n),
                      Catch::Contains("argument 0 ('x')"));
    CHECK_THROWS_WITH(launch(axpy, 8, 256, 0, s, dx, dy, 2.0f, n),
                      "launch of 'axpy': block must be exactly 128 threads, got (256, 1, 1)");
    // The contract's alignment (its 4-byte loads): refused before the kernel could fault.
    CHECK(axpy.contract().params[0].align_bytes == 4);
    CHECK_THROWS_WITH(launch(axpy, 8, 128, 0, s, dx.address() + 2, dy, 2.0f, n),
                      Catch::Contains("argument 0 ('x') must be 4-byte aligned") &&
                          Catch::Contains("2 bytes past a 4-byte boundary"));
  }
  SECTION("a function without a contract launches only raw") {
    const Function bare(axpy.module(), "axpy");
    CHECK_FALSE(bare.has_contract());
    CHECK_THROWS_WITH(launch(bare, 8, 128, 0, s, dx, dy, 2.0f, n),
                      Catch::Contains("has no contract"));
    std::uint64_t px = dx.address(), py = dy.address();
    float a = 1.0f;
    std::uint32_t count = n;
    void* params[] = {&px, &py, &a, &count};
    launch_raw(bare, (n + 127) / 128, 128, 0, s, params);
    s.synchronize();
    CHECK(dy.to_host()[10] == 11.0f);
  }
  SECTION("an unknown entry is an error naming it") {
    CHECK_THROWS_WITH(Function(axpy.module(), "nope"),
                      Catch::Contains("looking up entry 'nope' in module 'axpy'") &&
                          Catch::Contains("CUDA_ERROR_NOT_FOUND"));
  }
}

TEST_CASE(
    "bulk copies land on their mbarrier phases on the GPU (as tests/executor's do on the CPU)",
    "[runtime][gpu]") {
  PTXDSL_REQUIRE_GPU(ctx);
  constexpr std::uint32_t kRows = 5;
  const Function rows = load(ctx, test::bulk_copy_kernel(kRows));
  std::vector<float> x(kRows * 128);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 100.0f;
  DeviceBuffer<float> dx(ctx, std::span<const float>(x)), dy(ctx, x.size());
  dy.fill(std::numeric_limits<float>::quiet_NaN());  // every element must be written
  Stream s(ctx);
  launch(rows, 1, 128, 0, s, dx, dy);
  s.synchronize();
  const std::vector<float> y = dy.to_host();
  for (std::size_t i = 0; i < x.size(); ++i) {
    INFO("element " << i);
    REQUIRE(y[i] == 2.0f * x[i]);
  }
}

TEST_CASE("dynamic shared memory above 48 KB is opted into", "[runtime][gpu]") {
  PTXDSL_REQUIRE_GPU(ctx);
  for (std::uint32_t bytes : {16u * 1024, 100u * 1024, 200u * 1024}) {
    INFO("shared bytes " << bytes);
    const Function f = load(ctx, test::reverse_through_shared_kernel(bytes));
    CHECK(f.contract().dynamic_shared_bytes == bytes);
    const std::uint32_t threads = 256;
    std::vector<float> x(threads);
    for (std::uint32_t i = 0; i < threads; ++i) x[i] = static_cast<float>(i);
    DeviceBuffer<float> dx(ctx, std::span<const float>(x)), dy(ctx, threads);
    dy.fill(-1.0f);
    CHECK_THROWS_WITH(launch(f, 1, threads, bytes - 4, nullptr, dx, dy),
                      Catch::Contains("dynamic shared memory must be at least"));
    launch(f, 1, threads, bytes, nullptr, dx, dy);
    ctx.synchronize();
    std::vector<float> y = dy.to_host();
    for (std::uint32_t i = 0; i < threads; ++i) REQUIRE(y[i] == x[threads - 1 - i]);
  }
}

TEST_CASE("PTX that fails to JIT throws with the log, and the context stays usable",
          "[runtime][gpu]") {
  PTXDSL_REQUIRE_GPU(ctx);
  const test::SmallKernel good = test::axpy_kernel();
  const std::string bad = replace(good.ptx, "ret;", "bogus.instruction.f32 %f1;\n\tret;");
  try {
    runtime::LoadedModule m(ctx, bad, "broken_axpy");
    FAIL("the broken module loaded");
  } catch (const DriverError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(e.call() == "cuModuleLoadDataEx");
    CHECK(e.code() == 218);  // CUDA_ERROR_INVALID_PTX
    CHECK(what.find("JIT of module 'broken_axpy' (entries: axpy)") != std::string::npos);
    CHECK(what.find("CUDA_ERROR_INVALID_PTX") != std::string::npos);
    CHECK(what.find("JIT error log:\n") != std::string::npos);
    CHECK(what.find("bogus") != std::string::npos);
  }
  // A bad PTX version is refused the same way.
  CHECK_THROWS_AS(
      runtime::LoadedModule(ctx, replace(good.ptx, ".version 7.8", ".version 99.0"), "future"),
      DriverError);
  // The context still works.
  const Function axpy = load(ctx, good);
  DeviceBuffer<float> x(ctx, 128), y(ctx, 128);
  x.fill(1.0f);
  y.fill(1.0f);
  launch(axpy, 1, 128, 0, nullptr, x, y, 3.0f, 128u);
  ctx.synchronize();
  CHECK(y.to_host()[127] == 4.0f);
}

TEST_CASE("the module cache JITs each (PTX, device) once, across threads", "[runtime][gpu]") {
  PTXDSL_REQUIRE_GPU(ctx);
  ModuleCache cache;
  const test::SmallKernel k = test::axpy_kernel();
  auto first = cache.get(ctx, k.ptx, "axpy");
  auto again = cache.get(ctx, k.ptx, "axpy");
  CHECK(first == again);
  CHECK(cache.jit_count() == 1);
  CHECK(cache.hit_count() == 1);

  // A different text is a different module; many threads asking at once share one JIT.
  const std::string other = replace(k.ptx, "axpy", "axpy2");
  std::vector<std::shared_ptr<const runtime::LoadedModule>> got(8);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < got.size(); ++t) {
    threads.emplace_back([&, t] { got[t] = cache.get(ctx, other, "axpy2"); });
  }
  for (auto& t : threads) t.join();
  for (const auto& m : got) CHECK(m == got[0]);
  CHECK(cache.jit_count() == 2);
  CHECK(cache.size() == 2);
}
