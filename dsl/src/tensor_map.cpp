#include "ptxdsl/dsl/tensor_map.hpp"

#include <fmt/format.h>

#include <cstring>

#include "ptxdsl/dsl/error.hpp"
#include "tensor_map_decode.hpp"

namespace ptxdsl {
namespace {

// The encoding: a tag, then the fields at fixed offsets.
constexpr std::uint32_t kTag = 0x504D5444u;  // "DTMP"
struct Encoded {
  std::uint32_t tag;
  std::uint8_t rank, element, swizzle, nan_fill;
  std::uint64_t global_address;
  std::uint64_t dims[kTensorMapMaxRank];
  std::uint64_t strides[kTensorMapMaxRank - 1];
  std::uint16_t box[kTensorMapMaxRank];
};
static_assert(sizeof(Encoded) <= 128);

[[noreturn]] void refuse(const std::string& what) {
  throw Error("tensor map: " + what);
}

}  // namespace

void check_tensor_map(const TensorMapSpec& s) {
  const auto rank = static_cast<std::uint32_t>(s.dims.size());
  if (rank < 1 || rank > kTensorMapMaxRank) {
    refuse(fmt::format("the rank must be in [1, {}], got {}", kTensorMapMaxRank, rank));
  }
  if (s.box.size() != rank || s.strides_bytes.size() != rank - 1) {
    refuse(fmt::format("a rank-{} map takes {} box sizes and {} strides, got {} and {}", rank, rank,
                       rank - 1, s.box.size(), s.strides_bytes.size()));
  }
  const int bytes = size_bytes(s.element);
  if (s.element == ScalarType::Pred || bytes > 8) {
    refuse(
        fmt::format("the element type must be 1, 2, 4 or 8 bytes, got .{}", ptx_name(s.element)));
  }
  if (s.global_address % 16 != 0) {
    refuse(fmt::format("the global address must be 16-byte aligned, got {:#x}", s.global_address));
  }
  for (std::uint32_t i = 0; i < rank; ++i) {
    if (s.dims[i] == 0 || s.dims[i] > (std::uint64_t{1} << 32)) {
      refuse(fmt::format("dimension {} must be in [1, 2^32], got {}", i, s.dims[i]));
    }
    if (s.box[i] == 0 || s.box[i] > kTensorMapMaxBox) {
      refuse(fmt::format("box size {} must be in [1, {}], got {}", i, kTensorMapMaxBox, s.box[i]));
    }
  }
  for (std::uint32_t i = 0; i + 1 < rank; ++i) {
    if (s.strides_bytes[i] % 16 != 0 || s.strides_bytes[i] == 0) {
      refuse(fmt::format("stride {} must be a positive multiple of 16 bytes, got {}", i + 1,
                         s.strides_bytes[i]));
    }
    if (s.strides_bytes[i] >= (std::uint64_t{1} << 40)) {
      refuse(fmt::format("stride {} must be below 2^40 bytes, got {}", i + 1, s.strides_bytes[i]));
    }
  }
  const std::uint32_t inner = s.box[0] * static_cast<std::uint32_t>(bytes);
  static constexpr std::uint32_t kSwizzleBytes[] = {0, 32, 64, 128};
  const std::uint32_t width = kSwizzleBytes[static_cast<int>(s.swizzle)];
  if (inner % 16 != 0 || (width != 0 && inner != width)) {
    refuse(fmt::format("the box's inner {} bytes must be a multiple of 16{}", inner,
                       width != 0 ? fmt::format(" equal to the {}-byte swizzle", width) : ""));
  }
  if (s.nan_fill && !is_float(s.element)) {
    refuse(fmt::format("a NaN fill needs float elements, got .{}", ptx_name(s.element)));
  }
}

std::array<std::byte, 128> executor_tensor_map(const TensorMapSpec& s) {
  check_tensor_map(s);
  const auto rank = static_cast<std::uint32_t>(s.dims.size());
  Encoded e{};
  e.tag = kTag;
  e.rank = static_cast<std::uint8_t>(rank);
  e.element = static_cast<std::uint8_t>(s.element);
  e.swizzle = static_cast<std::uint8_t>(s.swizzle);
  e.nan_fill = s.nan_fill ? 1 : 0;
  e.global_address = s.global_address;
  for (std::uint32_t i = 0; i < rank; ++i) {
    e.dims[i] = s.dims[i];
    e.box[i] = static_cast<std::uint16_t>(s.box[i]);
    if (i + 1 < rank) e.strides[i] = s.strides_bytes[i];
  }
  std::array<std::byte, 128> out{};
  std::memcpy(out.data(), &e, sizeof e);
  return out;
}

namespace detail {

bool decode_tensor_map(const std::byte* bytes, TensorMapSpec& out) {
  Encoded e;
  std::memcpy(&e, bytes, sizeof e);
  if (e.tag != kTag || e.rank < 1 || e.rank > kTensorMapMaxRank) return false;
  out.global_address = e.global_address;
  out.element = static_cast<ScalarType>(e.element);
  out.swizzle = static_cast<Swizzle>(e.swizzle);
  out.nan_fill = e.nan_fill != 0;
  out.dims.assign(e.dims, e.dims + e.rank);
  out.strides_bytes.assign(e.strides, e.strides + e.rank - 1);
  out.box.assign(e.box, e.box + e.rank);
  return true;
}

}  // namespace detail
}  // namespace ptxdsl
