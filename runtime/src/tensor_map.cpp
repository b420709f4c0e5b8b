#include "ptxdsl/runtime/tensor_map.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>

#include "driver_api.hpp"

namespace ptxdsl::runtime {
namespace {

// The driver's name of each element type a map may hold; bytes (e4m3, e5m2, b8) travel as u8.
struct DataType {
  ScalarType element;
  CUtensorMapDataType driver;
};
constexpr DataType kDataTypes[] = {
    {ScalarType::U8, CU_TENSOR_MAP_DATA_TYPE_UINT8},
    {ScalarType::S8, CU_TENSOR_MAP_DATA_TYPE_UINT8},
    {ScalarType::B8, CU_TENSOR_MAP_DATA_TYPE_UINT8},
    {ScalarType::E4M3, CU_TENSOR_MAP_DATA_TYPE_UINT8},
    {ScalarType::E5M2, CU_TENSOR_MAP_DATA_TYPE_UINT8},
    {ScalarType::U16, CU_TENSOR_MAP_DATA_TYPE_UINT16},
    {ScalarType::B16, CU_TENSOR_MAP_DATA_TYPE_UINT16},
    {ScalarType::F16, CU_TENSOR_MAP_DATA_TYPE_FLOAT16},
    {ScalarType::BF16, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16},
    {ScalarType::U32, CU_TENSOR_MAP_DATA_TYPE_UINT32},
    {ScalarType::B32, CU_TENSOR_MAP_DATA_TYPE_UINT32},
    {ScalarType::S32, CU_TENSOR_MAP_DATA_TYPE_INT32},
    {ScalarType::F32, CU_TENSOR_MAP_DATA_TYPE_FLOAT32},
    {ScalarType::U64, CU_TENSOR_MAP_DATA_TYPE_UINT64},
    {ScalarType::B64, CU_TENSOR_MAP_DATA_TYPE_UINT64},
    {ScalarType::S64, CU_TENSOR_MAP_DATA_TYPE_INT64},
    {ScalarType::F64, CU_TENSOR_MAP_DATA_TYPE_FLOAT64},
};

std::optional<CUtensorMapDataType> driver_type(ScalarType t) {
  const auto it = std::find_if(std::begin(kDataTypes), std::end(kDataTypes),
                               [&](const DataType& d) { return d.element == t; });
  if (it == std::end(kDataTypes)) return std::nullopt;
  return it->driver;
}

constexpr std::uint32_t kMaxElementStride = 8;
constexpr std::uint32_t kInterleavedMinRank = 3;

[[noreturn]] void refuse(const std::string& what) {
  throw Error("tensor map: " + what);
}

std::string_view swizzle_name(Swizzle s) {
  constexpr std::string_view kNames[] = {"none", "32B", "64B", "128B"};
  return kNames[static_cast<int>(s)];
}

}  // namespace

void check_tensor_map_arguments(const TensorMapSpec& spec, const TensorMapOptions& options) {
  const auto rank = static_cast<std::uint32_t>(spec.dims.size());
  const bool interleaved = options.interleave != Interleave::None;
  if (!interleaved) {
    check_tensor_map(spec);
  } else {
    // The inner dimension of an interleaved map is a 16- or 32-byte unit, not a box of elements
    // as check_tensor_map counts it: the other rules, with a dense swizzle-free spec's inner box.
    TensorMapSpec shape = spec;
    shape.swizzle = Swizzle::None;
    if (!shape.box.empty()) shape.box[0] = 16 / std::max(1, size_bytes(spec.element));
    check_tensor_map(shape);
    if (rank < kInterleavedMinRank) {
      refuse(fmt::format("an interleaved map needs rank {} to {}, got {}", kInterleavedMinRank,
                         kTensorMapMaxRank, rank));
    }
    if (spec.swizzle != Swizzle::None && spec.swizzle != Swizzle::B32) {
      refuse(fmt::format("an interleaved map swizzles by none or 32B, got {}",
                         swizzle_name(spec.swizzle)));
    }
    if (options.interleave == Interleave::B32) {
      if (spec.global_address % 32 != 0) {
        refuse(fmt::format("the 32-byte interleave needs a 32-byte aligned address, got {:#x}",
                           spec.global_address));
      }
      for (std::size_t i = 0; i < spec.strides_bytes.size(); ++i) {
        if (spec.strides_bytes[i] % 32 != 0) {
          refuse(fmt::format("the 32-byte interleave needs stride {} a multiple of 32, got {}",
                             i + 1, spec.strides_bytes[i]));
        }
      }
    }
  }
  if (!driver_type(spec.element)) {
    refuse(fmt::format("the driver has no tensor map of .{} elements", ptx_name(spec.element)));
  }
  if (!options.element_strides.empty()) {
    if (options.element_strides.size() != rank) {
      refuse(fmt::format("a rank-{} map takes {} element strides (or none), got {}", rank, rank,
                         options.element_strides.size()));
    }
    for (std::uint32_t i = 0; i < rank; ++i) {
      const std::uint32_t s = options.element_strides[i];
      if (s == 0 || s > kMaxElementStride) {
        refuse(
            fmt::format("element stride {} must be in [1, {}], got {}", i, kMaxElementStride, s));
      }
    }
  }
  if (static_cast<int>(options.l2_promotion) > static_cast<int>(L2Promotion::B256)) {
    refuse(fmt::format("the L2 promotion must be none, 64B, 128B or 256B, got {}",
                       static_cast<int>(options.l2_promotion)));
  }
  if (static_cast<int>(options.interleave) > static_cast<int>(Interleave::B32)) {
    refuse(fmt::format("the interleave must be none, 16B or 32B, got {}",
                       static_cast<int>(options.interleave)));
  }
}

std::string describe(const TensorMapSpec& spec, const TensorMapOptions& options) {
  constexpr std::string_view kL2[] = {"none", "64B", "128B", "256B"};
  constexpr std::string_view kInterleave[] = {"none", "16B", "32B"};
  std::string out = fmt::format(
      "{} dims [{}] strides [{}] box [{}] swizzle {} l2 {} oob {}", ptx_name(spec.element),
      fmt::join(spec.dims, ", "), fmt::join(spec.strides_bytes, ", "), fmt::join(spec.box, ", "),
      swizzle_name(spec.swizzle), kL2[static_cast<int>(options.l2_promotion) & 3],
      spec.nan_fill ? "nan" : "zero");
  if (options.interleave != Interleave::None) {
    out += fmt::format(" interleave {}", kInterleave[static_cast<int>(options.interleave) % 3]);
  }
  if (!options.element_strides.empty()) {
    out += fmt::format(" element strides [{}]", fmt::join(options.element_strides, ", "));
  }
  return out + fmt::format(" at {:#x}", spec.global_address);
}

TensorMap TensorMap::tiled(const TensorMapSpec& spec, const TensorMapOptions& options) {
  check_tensor_map_arguments(spec, options);
  const detail::DriverApi& d = detail::driver();
  const auto rank = static_cast<cuuint32_t>(spec.dims.size());
  std::array<cuuint64_t, kTensorMapMaxRank> dims{}, strides{};
  std::array<cuuint32_t, kTensorMapMaxRank> box{}, element_strides{};
  for (cuuint32_t i = 0; i < rank; ++i) {
    dims[i] = spec.dims[i];
    box[i] = spec.box[i];
    element_strides[i] = options.element_strides.empty() ? 1 : options.element_strides[i];
    if (i + 1 < rank) strides[i] = spec.strides_bytes[i];
  }
  static_assert(sizeof(CUtensorMap) == kTensorMapBytes &&
                alignof(CUtensorMap) <= alignof(TensorMap));
  TensorMap map;
  map.spec_ = spec;
  map.options_ = options;
  // Both enums list their modes in the driver's order.
  detail::check(
      d.cuTensorMapEncodeTiled(
          reinterpret_cast<CUtensorMap*>(map.bytes_.data()), *driver_type(spec.element), rank,
          reinterpret_cast<void*>(spec.global_address), dims.data(), strides.data(), box.data(),
          element_strides.data(), static_cast<CUtensorMapInterleave>(options.interleave),
          static_cast<CUtensorMapSwizzle>(spec.swizzle),
          static_cast<CUtensorMapL2promotion>(options.l2_promotion),
          spec.nan_fill ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                        : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
      "cuTensorMapEncodeTiled",
      [&] { return fmt::format("encoding the tensor map {}", describe(spec, options)); });
  return map;
}

}  // namespace ptxdsl::runtime
