#include <catch2/catch.hpp>

#include <cstdint>
#include <thread>
#include <vector>

#include "gpu_support.hpp"
#include "norm_check.hpp"
#include "ptxdsl/ptxdsl.h"
#include "ptxdsl/runtime.hpp"

// The C ABI on the GPU: forward and backward through libptxdsl.so on raw device pointers, judged
// against the float64 reference as the C++ API's tests judge it (tests/runtime/norm_check.hpp).
using namespace ptxdsl;
using namespace ptxdsl::runtime;
using test::CaseBuffers;
using test::DeviceArray;
using test::NormCase;

namespace {

std::int32_t c_dtype(DType d) {
  switch (d) {
    case DType::F32:
      return PTXDSL_F32;
    case DType::F16:
      return PTXDSL_F16;
    case DType::BF16:
      return PTXDSL_BF16;
  }
  return -1;
}

void* ptr(const DeviceArray& a) {
  return reinterpret_cast<void*>(a.address);
}
float* fptr(const DeviceArray& a) {
  return reinterpret_cast<float*>(a.address);
}

#define REQUIRE_OK(call)                                              \
  do {                                                                \
    const std::int32_t status_ = (call);                              \
    INFO(ptxdsl_status_name(status_) << ": " << ptxdsl_last_error()); \
    REQUIRE(status_ == PTXDSL_SUCCESS);                               \
  } while (false)

std::int32_t forward(const NormCase& c, CaseBuffers& d, ptxdsl_stream s) {
  const std::int32_t dt = c_dtype(c.dtype), wt = c_dtype(c.weight_dtype);
  if (c.layer) {
    return ptxdsl_layer_norm_forward(0, dt, wt, c.batch, c.width, c.row_stride(), ptr(d.x),
                                     ptr(d.w), ptr(d.b), nullptr, nullptr, ptr(d.y), fptr(d.mean),
                                     fptr(d.rstd), c.eps, s);
  }
  return ptxdsl_rms_norm_forward(0, dt, wt, c.batch, c.width, c.row_stride(), ptr(d.x), ptr(d.w),
                                 nullptr, nullptr, ptr(d.y), fptr(d.rstd), c.eps, s);
}

std::int32_t backward(const NormCase& c, CaseBuffers& d, void* workspace, std::uint64_t bytes,
                      ptxdsl_stream s) {
  const std::int32_t dt = c_dtype(c.dtype), wt = c_dtype(c.weight_dtype);
  if (c.layer) {
    return ptxdsl_layer_norm_backward(0, dt, wt, c.batch, c.width, c.row_stride(), ptr(d.dy),
                                      nullptr, ptr(d.x), ptr(d.w), fptr(d.mean_in), fptr(d.rstd_in),
                                      ptr(d.dx), ptr(d.dw), ptr(d.db), workspace, bytes, s);
  }
  return ptxdsl_rms_norm_backward(0, dt, wt, c.batch, c.width, c.row_stride(), ptr(d.dy), nullptr,
                                  ptr(d.x), ptr(d.w), fptr(d.rstd_in), ptr(d.dx), ptr(d.dw),
                                  workspace, bytes, s);
}

}  // namespace

TEST_CASE("the C ABI runs forward and backward on raw pointers, matching the float64 reference",
          "[runtime][gpu][capi]") {
  PTXDSL_REQUIRE_GPU(ctx);
  // Aligned, strided, and misaligned by one element (which the C path must take in narrower
  // vectors, as the C++ API does).
  std::vector<NormCase> cases(3);
  cases[0] = {
      .layer = true, .dtype = DType::F16, .weight_dtype = DType::F16, .width = 4096, .batch = 300};
  cases[1] = {.layer = false,
              .dtype = DType::BF16,
              .weight_dtype = DType::F32,
              .width = 1000,
              .batch = 77,
              .stride = 1008,
              .x_offset = 2};
  cases[2] = {.layer = true,
              .dtype = DType::F32,
              .weight_dtype = DType::F32,
              .width = 256,
              .batch = 1151,
              .w_offset = 4,
              .seed = 3};
  Stream stream(ctx);
  ptxdsl_stream s = stream.handle();
  for (const NormCase& c : cases) {
    INFO(c.describe());
    const test::HostCase h = test::make_host_case(c);
    CaseBuffers d(ctx, c, h);
    for (DeviceArray* a : {&d.y, &d.mean, &d.rstd, &d.dx, &d.dw, &d.db}) a->poison(ctx, nullptr);
    ctx.synchronize();
    REQUIRE_OK(forward(c, d, s));
    stream.synchronize();
    CHECK(test::measure_rows(c, h, "y", d.y.download(ctx), h.y).verdict.pass);
    CHECK(test::measure(c, h, "rstd", DType::F32, d.rstd.download(ctx), h.rstd).verdict.pass);
    if (c.layer) {
      CHECK(test::measure(c, h, "mean", DType::F32, d.mean.download(ctx), h.mean).verdict.pass);
    }

    // The library's workspace, then the caller's, of the size the query gives.
    REQUIRE_OK(backward(c, d, nullptr, 0, s));
    stream.synchronize();
    const std::vector<std::byte> dx_bits = d.dx.download_bytes(ctx);
    const std::vector<std::byte> dw_bits = d.dw.download_bytes(ctx);
    CHECK(test::measure_rows(c, h, "dx", d.dx.download(ctx), h.dx).verdict.pass);
    CHECK(test::measure(c, h, "dw", c.weight_dtype, d.dw.download(ctx), h.dw).verdict.pass);
    if (c.layer) {
      CHECK(test::measure(c, h, "db", c.weight_dtype, d.db.download(ctx), h.db).verdict.pass);
    }
    std::uint64_t need = 0;
    REQUIRE_OK(ptxdsl_norm_workspace_bytes(0, c.layer ? PTXDSL_LAYER_NORM : PTXDSL_RMS_NORM,
                                           c_dtype(c.dtype), c_dtype(c.weight_dtype), c.width,
                                           c.batch, &need));
    DeviceArray workspace(ctx, need / 4 + 4, DType::F32);
    for (DeviceArray* a : {&d.dx, &d.dw, &d.db}) a->poison(ctx, nullptr);
    ctx.synchronize();
    REQUIRE_OK(backward(c, d, ptr(workspace), workspace.bytes(), s));
    stream.synchronize();
    CHECK(d.dx.download_bytes(ctx) == dx_bits);
    CHECK(d.dw.download_bytes(ctx) == dw_bits);
  }

  // Errors the C++ layer finds come back as codes with its message, and the library goes on.
  const NormCase& c = cases[0];
  const test::HostCase h = test::make_host_case(c);
  CaseBuffers d(ctx, c, h);
  CHECK(ptxdsl_layer_norm_forward(0, PTXDSL_F16, PTXDSL_F16, c.batch, c.width, 0, ptr(d.x),
                                  ptr(d.w), ptr(d.b), nullptr, nullptr, ptr(d.x), fptr(d.mean),
                                  fptr(d.rstd), 1e-5f, s) == PTXDSL_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(ptxdsl_last_error(),
             Catch::Contains("ptxdsl_layer_norm_forward: LayerNorm(f16, weights f16, width "
                             "4096).forward: y overlaps x"));
  CHECK(ptxdsl_layer_norm_forward(0, PTXDSL_F16, PTXDSL_F16, c.batch, c.width, 0,
                                  reinterpret_cast<void*>(d.x.address + 1), ptr(d.w), ptr(d.b),
                                  nullptr, nullptr, ptr(d.y), fptr(d.mean), fptr(d.rstd), 1e-5f,
                                  s) == PTXDSL_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(ptxdsl_last_error(), Catch::Contains("is not aligned to its 2-byte f16 elements"));
  CHECK(ptxdsl_layer_norm_forward(0, PTXDSL_F16, PTXDSL_F16, c.batch, c.width, 0, ptr(d.x),
                                  ptr(d.w), ptr(d.b), nullptr, nullptr, ptr(d.y), fptr(d.mean),
                                  fptr(d.rstd), -1.0f, s) == PTXDSL_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(ptxdsl_last_error(), Catch::Contains("eps must be a finite number ≥ 0, got -1"));
  d.y.poison(ctx, nullptr);
  ctx.synchronize();
  REQUIRE_OK(forward(c, d, s));
  stream.synchronize();
  CHECK(test::measure_rows(c, h, "y", d.y.download(ctx), h.y).verdict.pass);
}

TEST_CASE("threads share the C ABI's objects: each call on its own stream gets its own results",
          "[runtime][gpu][capi]") {
  PTXDSL_REQUIRE_GPU(ctx);
  // One object (RMS, f16, width 2048) for every thread; a backward with partial rows on each
  // thread's stream at once, each with its own inputs.
  constexpr int kThreads = 4;
  REQUIRE_OK(ptxdsl_norm_prepare(0, PTXDSL_RMS_NORM, PTXDSL_F16, PTXDSL_F16, 2048));
  std::vector<NormCase> cases;
  std::vector<test::HostCase> hosts;
  std::vector<std::unique_ptr<CaseBuffers>> buffers;
  std::vector<Stream> streams;
  for (int t = 0; t < kThreads; ++t) {
    cases.push_back({.layer = false,
                     .dtype = DType::F16,
                     .weight_dtype = DType::F16,
                     .width = 2048,
                     .batch = 4096,
                     .seed = 10u + static_cast<unsigned>(t)});
    hosts.push_back(test::make_host_case(cases.back()));
    buffers.push_back(std::make_unique<CaseBuffers>(ctx, cases.back(), hosts.back()));
    streams.emplace_back(ctx);
    for (DeviceArray* a : {&buffers.back()->dx, &buffers.back()->dw}) a->poison(ctx, nullptr);
  }
  ctx.synchronize();
  std::vector<std::int32_t> status(kThreads, -1);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::int32_t r = PTXDSL_SUCCESS;
      for (int call = 0; call < 3 && r == PTXDSL_SUCCESS; ++call) {
        r = backward(cases[t], *buffers[t], nullptr, 0, streams[t].handle());
      }
      status[t] = r;
    });
  }
  for (std::thread& t : threads) t.join();
  ctx.synchronize();
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK(status[t] == PTXDSL_SUCCESS);
    const NormCase& c = cases[t];
    CHECK(test::measure_rows(c, hosts[t], "dx", buffers[t]->dx.download(ctx), hosts[t].dx)
              .verdict.pass);
    CHECK(
        test::measure(c, hosts[t], "dw", c.weight_dtype, buffers[t]->dw.download(ctx), hosts[t].dw)
            .verdict.pass);
  }
}
