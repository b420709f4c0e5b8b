#include <fmt/format.h>

#include "ptxdsl/dsl/error.hpp"
#include "ptxdsl/dsl/mma.hpp"

namespace ptxdsl {
namespace {

// A field of the descriptor: a byte count that is a multiple of 16 below 2^18, stored >> 4 in 14
// bits.
std::uint64_t field(std::string_view name, std::uint32_t bytes) {
  if (bytes % 16 != 0 || bytes >= (1u << 18)) {
    throw Error(fmt::format(
        "matrix descriptor: the {} must be a multiple of 16 in [0, 2^18), got {}", name, bytes));
  }
  return bytes >> 4;
}

}  // namespace

std::uint64_t matrix_descriptor(std::uint32_t shared_address, const MatrixLayout& layout) {
  static constexpr std::uint64_t kSwizzleCode[] = {0, 3, 2, 1};  // None, B32, B64, B128
  return field("start address", shared_address & 0x3FFFFu) |
         field("leading byte offset", layout.leading_bytes) << 16 |
         field("stride byte offset", layout.stride_bytes) << 32 |
         kSwizzleCode[static_cast<int>(layout.swizzle)] << 62;
}

}  // namespace ptxdsl
