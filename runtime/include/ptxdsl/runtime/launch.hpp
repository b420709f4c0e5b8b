#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "ptxdsl/runtime/handles.hpp"
#include "ptxdsl/runtime/memory.hpp"
#include "ptxdsl/runtime/module.hpp"
#include "ptxdsl/runtime/tensor_map.hpp"

namespace ptxdsl::runtime {

namespace detail {

// One launch argument as `launch` sees it: where its bytes are and what it is.
struct ArgRef {
  enum class Kind : std::uint8_t { Pointer, Address, Float, Int, TensorMap };
  const void* value = nullptr;
  Kind kind = Kind::Int;
  std::uint8_t size = 0;
  std::uint8_t element_size = 0;  // typed pointers; 0 for a raw address
};

template <class T>
ArgRef arg_ref(const DeviceBuffer<T>& b) {
  return {b.address_slot(), ArgRef::Kind::Pointer, 8, static_cast<std::uint8_t>(sizeof(T))};
}
template <class T>
ArgRef arg_ref(const DevicePtr<T>& p) {
  return {&p.address, ArgRef::Kind::Pointer, 8, static_cast<std::uint8_t>(sizeof(T))};
}
inline ArgRef arg_ref(const TensorMap& m) {
  return {m.bytes(), ArgRef::Kind::TensorMap, static_cast<std::uint8_t>(kTensorMapBytes), 0};
}
// A std::uint64_t is a raw device address or a 64-bit integer: either parameter takes it.
inline ArgRef arg_ref(const std::uint64_t& a) {
  return {&a, ArgRef::Kind::Address, 8, 0};
}
template <class T>
requires(std::is_arithmetic_v<T> && !std::is_same_v<T, std::uint64_t> &&
         !std::is_same_v<T, bool>) ArgRef arg_ref(const T& v) {
  return {&v, std::is_floating_point_v<T> ? ArgRef::Kind::Float : ArgRef::Kind::Int,
          static_cast<std::uint8_t>(sizeof(T)), 0};
}

// Checks `count` arguments against the function's contract, then launches. Allocates nothing and
// formats nothing unless a check fails. `cluster` {0, 0, 0}: the contract's own, if any.
void launch_checked(const Function& f, Dim3 grid, Dim3 cluster, Dim3 block,
                    std::uint32_t shared_bytes, StreamRef stream, const ArgRef* args,
                    std::size_t count);

inline constexpr Dim3 kNoCluster{0, 0, 0};

}  // namespace detail

// Launches `f` with arguments checked against its contract: the count, pointers for pointer
// parameters (DeviceBuffer<T>, DevicePtr<T> or a std::uint64_t address; T's size must match the
// element's), floats of the parameter's size for f32/f64, integers of the parameter's size for
// integer and bit types (std::uint16_t bits for f16/bf16), a TensorMap for a tensor map parameter
// (and only there). The block must match .reqntid; dynamic
// shared memory above 48 KB is opted into on first use.
// A kernel whose contract fixes its cluster (.reqnctapercluster) launches in clusters of that
// shape; the grid must be a whole number of them.
template <class... Args>
void launch(const Function& f, Dim3 grid, Dim3 block, std::uint32_t shared_bytes, StreamRef stream,
            const Args&... args) {
  if constexpr (sizeof...(Args) == 0) {
    detail::launch_checked(f, grid, detail::kNoCluster, block, shared_bytes, stream, nullptr, 0);
  } else {
    const detail::ArgRef refs[] = {detail::arg_ref(args)...};
    detail::launch_checked(f, grid, detail::kNoCluster, block, shared_bytes, stream, refs,
                           sizeof...(Args));
  }
}

// `launch` in thread-block clusters of `cluster` CTAs (sm_90 and later), as cuLaunchKernelEx's
// cluster attribute gives them. Refused before the driver sees it: a grid that is not a whole
// number of clusters, and a shape other than the one the contract fixes (.reqnctapercluster). An
// .explicitcluster kernel without a fixed shape launches only here (`launch` refuses it).
// Clusters of more than 8 CTAs opt into the non-portable size on first use (16 on Hopper); the
// driver refuses what the device cannot hold, and the error names the shape.
template <class... Args>
void launch_clustered(const Function& f, Dim3 grid, Dim3 cluster, Dim3 block,
                      std::uint32_t shared_bytes, StreamRef stream, const Args&... args) {
  if constexpr (sizeof...(Args) == 0) {
    detail::launch_checked(f, grid, cluster, block, shared_bytes, stream, nullptr, 0);
  } else {
    const detail::ArgRef refs[] = {detail::arg_ref(args)...};
    detail::launch_checked(f, grid, cluster, block, shared_bytes, stream, refs, sizeof...(Args));
  }
}

// cuLaunchKernel as is: `params[i]` points to the i-th parameter's value. No checks beyond the
// driver's; the context is made current and large shared memory opted into as `launch` does.
void launch_raw(const Function& f, Dim3 grid, Dim3 block, std::uint32_t shared_bytes,
                StreamRef stream, void** params);
// The same in clusters of `cluster` CTAs (cuLaunchKernelEx), {0, 0, 0} for none.
void launch_raw(const Function& f, Dim3 grid, Dim3 cluster, Dim3 block, std::uint32_t shared_bytes,
                StreamRef stream, void** params);

// How many clusters of `cluster` CTAs of `block` threads with `shared_bytes` of dynamic shared
// memory the device holds at once (cuOccupancyMaxActiveClusters): what a persistent grid of
// clusters is sized by. 0 when such a cluster does not fit.
std::uint32_t max_active_clusters(const Function& f, Dim3 cluster, Dim3 block,
                                  std::uint32_t shared_bytes);

}  // namespace ptxdsl::runtime
