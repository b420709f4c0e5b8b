#pragma once

// What both examples share: moving a host tensor to the device and back, and the checks the seeds
// make (y and dx allclose with atol 1e-2; dw and db within 1e-2 of their largest magnitude).
#include <cmath>
#include <cstdio>
#include <span>
#include <vector>

#include <ptxdsl/kernels/inputs.hpp>
#include <ptxdsl/kernels/reference.hpp>
#include <ptxdsl/runtime.hpp>

namespace example {

using ptxdsl::kernels::DType;
using ptxdsl::runtime::Context;
using ptxdsl::runtime::DeviceBuffer;

inline DeviceBuffer<std::byte> to_device(const Context& ctx, const ptxdsl::kernels::HostTensor& t) {
  return DeviceBuffer<std::byte>(ctx, std::span<const std::byte>(t.bytes));
}

inline std::vector<float> to_host(const DeviceBuffer<std::byte>& b, DType d) {
  return ptxdsl::kernels::to_floats(b.to_host(), d);
}

// Prints one output's errors against the reference; returns whether it is within the bound.
inline bool report(const char* name, const std::vector<float>& got, const std::vector<double>& want,
                   bool allclose) {
  const ptxdsl::kernels::Deviation d = ptxdsl::kernels::deviation(got, want);
  std::size_t outside = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(std::abs(got[i] - want[i]) <= 1e-2 + 1e-5 * std::abs(want[i]))) ++outside;
  }
  const bool ok = d.nonfinite == 0 && (allclose ? outside == 0 : d.max_rel <= 1e-2);
  std::printf("  %-4s max error %.3e (relative to max |reference| %.3e)%s\n", name, d.max_abs,
              d.max_rel, ok ? "" : "  <-- outside the bound");
  return ok;
}

}  // namespace example
