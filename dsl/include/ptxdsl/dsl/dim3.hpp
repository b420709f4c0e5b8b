#pragma once

#include <cstdint>

namespace ptxdsl {

// A grid or block shape, in CTAs or threads: what the CPU executor and the driver runtime launch
// with.
struct Dim3 {
  std::uint32_t x = 1, y = 1, z = 1;
  constexpr Dim3() = default;
  constexpr Dim3(std::uint32_t x_, std::uint32_t y_ = 1, std::uint32_t z_ = 1)  // NOLINT: `256`
      : x(x_), y(y_), z(z_) {}
  constexpr std::uint64_t count() const { return std::uint64_t{x} * y * z; }
  friend constexpr bool operator==(const Dim3&, const Dim3&) = default;
};

}  // namespace ptxdsl
