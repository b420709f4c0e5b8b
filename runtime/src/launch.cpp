#include <fmt/format.h>

#include "driver_api.hpp"
#include "ptxdsl/runtime/launch.hpp"

namespace ptxdsl::runtime {
namespace {

constexpr std::uint32_t kDefaultSharedLimit = 48 * 1024;
constexpr std::size_t kMaxParams = 64;

std::string_view kind_name(detail::ArgRef::Kind k) {
  switch (k) {
    case detail::ArgRef::Kind::Pointer:
      return "device pointer";
    case detail::ArgRef::Kind::Address:
      return "std::uint64_t";
    case detail::ArgRef::Kind::Float:
      return "floating-point value";
    case detail::ArgRef::Kind::Int:
      return "integer";
    case detail::ArgRef::Kind::TensorMap:
      return "tensor map";
  }
  return "?";
}

std::string describe_param(const ParamSpec& p) {
  if (p.tensor_map) return "a tensor map";
  if (p.pointer) return fmt::format("a pointer to {}", ptx_name(p.element));
  return fmt::format("a .{} scalar", ptx_name(p.type));
}

[[noreturn]] void bad_argument(const Function& f, std::size_t i, const detail::ArgRef& a) {
  const ParamSpec& p = f.contract().params[i];
  std::string got = a.kind == detail::ArgRef::Kind::Pointer
                        ? fmt::format("a device pointer to {}-byte elements", a.element_size)
                    : a.kind == detail::ArgRef::Kind::TensorMap
                        ? std::string("a TensorMap")
                        : fmt::format("a {}-byte {}", a.size, kind_name(a.kind));
  throw Error(fmt::format("launch of '{}': argument {} ('{}') must be {} ({}), got {}", f.name(), i,
                          p.name, describe_param(p),
                          p.tensor_map ? "runtime::TensorMap"
                          : p.pointer  ? "DeviceBuffer<T>, DevicePtr<T> or a std::uint64_t address"
                          : (p.type == ScalarType::F32 || p.type == ScalarType::F64)
                              ? fmt::format("a {}-byte float", size_bytes(p.type))
                              : fmt::format("a {}-byte integer", size_bytes(p.type)),
                          got));
}

bool accepts(const detail::ParamSlot& s, const detail::ArgRef& a) {
  using Slot = detail::ParamSlot::Kind;
  using Arg = detail::ArgRef::Kind;
  switch (s.kind) {
    case Slot::Pointer:
      return a.kind == Arg::Address ||
             (a.kind == Arg::Pointer && (a.element_size == s.element_size || a.element_size == 1));
    case Slot::Float:
      return a.kind == Arg::Float && a.size == s.size;
    case Slot::Int:
      return (a.kind == Arg::Int || a.kind == Arg::Address) && a.size == s.size;
    case Slot::TensorMap:
      return a.kind == Arg::TensorMap;
  }
  return false;
}

std::uint64_t integer_value(const detail::ArgRef& a) {
  switch (a.size) {
    case 1:
      return *static_cast<const std::uint8_t*>(a.value);
    case 2:
      return *static_cast<const std::uint16_t*>(a.value);
    case 4:
      return *static_cast<const std::uint32_t*>(a.value);
    default:
      return *static_cast<const std::uint64_t*>(a.value);
  }
}

// The contract's alignment facts, which the kernel's vector accesses need: a misaligned address
// would fault inside the kernel and leave the context unusable.
void check_alignment(const Function& f, std::size_t i, const detail::ParamSlot& s,
                     const detail::ArgRef& a) {
  const ParamSpec& p = f.contract().params[i];
  if (s.kind == detail::ParamSlot::Kind::Pointer && s.align > 1) {
    const std::uint64_t address = *static_cast<const std::uint64_t*>(a.value);
    if (address % s.align != 0) [[unlikely]] {
      throw Error(fmt::format(
          "launch of '{}': argument {} ('{}') must be {}-byte aligned (the kernel's widest "
          "access through it), got 0x{:x}, {} bytes past a {}-byte boundary",
          f.name(), i, p.name, s.align, address, address % s.align, s.align));
    }
  } else if (s.kind == detail::ParamSlot::Kind::Int && s.multiple > 1) {
    const std::uint64_t v = integer_value(a);
    if (v % s.multiple != 0) [[unlikely]] {
      throw Error(fmt::format(
          "launch of '{}': argument {} ('{}') must be a multiple of {} (so that every row of "
          "the pointers it steps stays aligned), got {}",
          f.name(), i, p.name, s.multiple, v));
    }
  }
}

void check_shape(const Function& f, Dim3 block, std::uint32_t shared_bytes) {
  const KernelContract& c = f.contract();
  if (c.block_threads != 0) {
    const bool ok = c.block_required
                        ? (block.x == c.block_threads && block.y == 1 && block.z == 1)
                        : (std::uint64_t{block.x} * block.y * block.z <= c.block_threads);
    if (!ok) [[unlikely]] {
      throw Error(fmt::format("launch of '{}': block must be {} {} threads, got ({}, {}, {})",
                              f.name(), c.block_required ? "exactly" : "at most", c.block_threads,
                              block.x, block.y, block.z));
    }
  }
  if (shared_bytes < c.dynamic_shared_bytes) [[unlikely]] {
    throw Error(
        fmt::format("launch of '{}': dynamic shared memory must be at least {} bytes, got {}",
                    f.name(), c.dynamic_shared_bytes, shared_bytes));
  }
}

std::string shape(Dim3 d) {
  return fmt::format("({}, {}, {})", d.x, d.y, d.z);
}

// The cluster a launch runs in ({0, 0, 0}: none), after the checks the contract allows without
// the driver.
Dim3 check_cluster(const Function& f, Dim3 grid, Dim3 cluster) {
  const KernelContract& c = f.contract();
  const bool fixed = c.cluster.count() != 0;
  if (cluster.count() == 0) {
    if (c.explicit_cluster && !fixed) [[unlikely]] {
      throw Error(
          fmt::format("launch of '{}': the kernel is .explicitcluster: launch it with "
                      "cluster dimensions (launch_clustered)",
                      f.name()));
    }
    cluster = fixed ? c.cluster : detail::kNoCluster;
  } else if (fixed && !(cluster == c.cluster)) [[unlikely]] {
    throw Error(
        fmt::format("launch of '{}': the cluster must be {} CTAs, as .reqnctapercluster "
                    "fixes it, got {}",
                    f.name(), shape(c.cluster), shape(cluster)));
  }
  if (cluster.count() != 0 && (grid.x % cluster.x != 0 || grid.y % cluster.y != 0 ||
                               grid.z % cluster.z != 0)) [[unlikely]] {
    throw Error(
        fmt::format("launch of '{}': the grid {} must be a whole number of clusters {} in "
                    "each dimension",
                    f.name(), shape(grid), shape(cluster)));
  }
  return cluster;
}

// cuLaunchKernelEx's configuration: the shape, and the attributes a launch needs (at most two).
struct ExConfig {
  CUlaunchConfig config{};
  CUlaunchAttribute attrs[2]{};
  ExConfig(const Function& f, Dim3 grid, Dim3 cluster, Dim3 block, std::uint32_t shared_bytes,
           StreamRef stream) {
    config.gridDimX = grid.x;
    config.gridDimY = grid.y;
    config.gridDimZ = grid.z;
    config.blockDimX = block.x;
    config.blockDimY = block.y;
    config.blockDimZ = block.z;
    config.sharedMemBytes = shared_bytes;
    config.hStream = stream.handle();
    config.attrs = attrs;
    if (f.contract().waits_for_prior_grid) {
      // The kernel waits for the grid before it (griddepcontrol.wait): let it launch while that
      // grid finishes (programmatic dependent launch), hiding the gap between the two.
      CUlaunchAttribute& early = attrs[config.numAttrs++];
      early.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      early.value.programmaticStreamSerializationAllowed = 1;
    }
    if (cluster.count() != 0) {
      CUlaunchAttribute& dims = attrs[config.numAttrs++];
      dims.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      dims.value.clusterDim.x = cluster.x;
      dims.value.clusterDim.y = cluster.y;
      dims.value.clusterDim.z = cluster.z;
    }
  }
};

constexpr std::uint64_t kPortableClusterSize = 8;

}  // namespace

void launch_raw(const Function& f, Dim3 grid, Dim3 block, std::uint32_t shared_bytes,
                StreamRef stream, void** params) {
  launch_raw(f, grid, detail::kNoCluster, block, shared_bytes, stream, params);
}

void launch_raw(const Function& f, Dim3 grid, Dim3 cluster, Dim3 block, std::uint32_t shared_bytes,
                StreamRef stream, void** params) {
  const detail::DriverApi& d = detail::driver();
  detail::make_current(f.context());
  if (shared_bytes + f.contract().static_shared_bytes > kDefaultSharedLimit) {
    f.reserve_dynamic_shared(shared_bytes);
  }
  // Past 8 CTAs, given at launch or fixed by the contract, the kernel opts into the larger size.
  if (std::max(cluster.count(), f.contract().cluster.count()) > kPortableClusterSize) {
    f.allow_non_portable_clusters();
  }
  CUresult r;
  const char* call = "cuLaunchKernel";
  // A cluster the contract fixes (.reqnctapercluster) needs no attribute: the plain launch runs it.
  const bool attribute_cluster = cluster.count() != 0 && !(cluster == f.contract().cluster);
  if (f.contract().waits_for_prior_grid || attribute_cluster) {
    ExConfig ex(f, grid, attribute_cluster ? cluster : detail::kNoCluster, block, shared_bytes,
                stream);
    call = "cuLaunchKernelEx";
    r = d.cuLaunchKernelEx(&ex.config, f.handle(), params, nullptr);
  } else {
    r = d.cuLaunchKernel(f.handle(), grid.x, grid.y, grid.z, block.x, block.y, block.z,
                         shared_bytes, stream.handle(), params, nullptr);
  }
  detail::check(r, call, [&] {
    return fmt::format(
        "launching '{}' with grid {}{}, block {}, {} bytes of dynamic shared memory", f.name(),
        shape(grid), cluster.count() != 0 ? fmt::format(" in clusters of {}", shape(cluster)) : "",
        shape(block), shared_bytes);
  });
}

std::uint32_t max_active_clusters(const Function& f, Dim3 cluster, Dim3 block,
                                  std::uint32_t shared_bytes) {
  if (cluster.count() == 0) [[unlikely]] {
    throw Error(
        fmt::format("max_active_clusters of '{}': the cluster must hold at least one CTA, "
                    "got {}",
                    f.name(), shape(cluster)));
  }
  detail::make_current(f.context());
  if (shared_bytes + f.contract().static_shared_bytes > kDefaultSharedLimit) {
    f.reserve_dynamic_shared(shared_bytes);
  }
  if (cluster.count() > kPortableClusterSize) f.allow_non_portable_clusters();
  // The grid only has to be a whole number of clusters; the occupancy does not depend on it.
  ExConfig ex(f, cluster, cluster, block, shared_bytes, StreamRef{});
  int count = 0;
  PTXDSL_CU_CHECK(
      [&] {
        return fmt::format("asking how many clusters of {} CTAs of {} threads of '{}' fit",
                           shape(cluster), shape(block), f.name());
      },
      cuOccupancyMaxActiveClusters, &count, f.handle(), &ex.config);
  return static_cast<std::uint32_t>(count);
}

namespace detail {

void launch_checked(const Function& f, Dim3 grid, Dim3 cluster, Dim3 block,
                    std::uint32_t shared_bytes, StreamRef stream, const ArgRef* args,
                    std::size_t count) {
  if (!f.has_contract()) [[unlikely]] {
    throw Error(fmt::format(
        "launch of '{}': the function has no contract to check arguments against; build it from "
        "a KernelContract, or use launch_raw",
        f.name()));
  }
  const std::vector<ParamSlot>& slots = f.slots();
  if (count != slots.size()) [[unlikely]] {
    throw Error(fmt::format("launch of '{}': the kernel takes {} arguments, got {}", f.name(),
                            slots.size(), count));
  }
  check_shape(f, block, shared_bytes);
  cluster = check_cluster(f, grid, cluster);
  void* params[kMaxParams];
  for (std::size_t i = 0; i < count; ++i) {
    if (!accepts(slots[i], args[i])) [[unlikely]] {
      bad_argument(f, i, args[i]);
    }
    check_alignment(f, i, slots[i], args[i]);
    params[i] = const_cast<void*>(args[i].value);
  }
  launch_raw(f, grid, cluster, block, shared_bytes, stream, params);
}

}  // namespace detail
}  // namespace ptxdsl::runtime
