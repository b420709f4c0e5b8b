#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "ptxdsl/runtime.hpp"
#include "skip.hpp"

// What every [gpu] test shares: one context on device 0, or the reason there is none. Without a
// driver a [gpu] test prints "skipped: <reason>" and is reported skipped (support/skip.hpp).
namespace ptxdsl::test {

struct GpuState {
  std::unique_ptr<runtime::Context> context;
  std::string why;
};

inline GpuState& gpu_state() {
  static GpuState state = [] {
    GpuState s;
    if (!runtime::driver_available(&s.why)) return s;
    try {
      s.context = std::make_unique<runtime::Context>(0);
    } catch (const std::exception& e) {
      s.why = e.what();
    }
    return s;
  }();
  return state;
}

}  // namespace ptxdsl::test

// Binds `ctx` (a runtime::Context&) or skips the test with the reason.
#define PTXDSL_REQUIRE_GPU(ctx)                                         \
  ::ptxdsl::test::GpuState& ctx##_state_ = ::ptxdsl::test::gpu_state(); \
  if (!ctx##_state_.context) PTXDSL_SKIP(ctx##_state_.why);             \
  ::ptxdsl::runtime::Context& ctx = *ctx##_state_.context
