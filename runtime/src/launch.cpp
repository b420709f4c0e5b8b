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
  }
  return "?";
}

std::string describe_param(const ParamSpec& p) {
  if (p.pointer) return fmt::format("a pointer to {}", ptx_name(p.element));
  return fmt::format("a .{} scalar", ptx_name(p.type));
}

[[noreturn]] void bad_argument(const Function& f, std::size_t i, const detail::ArgRef& a) {
  const ParamSpec& p = f.contract().params[i];
  std::string got = a.kind == detail::ArgRef::Kind::Pointer
                        ? fmt::format("a device pointer to {}-byte elements", a.element_size)
                        : fmt::format("a {}-byte {}", a.size, kind_name(a.kind));
  throw Error(fmt::format("launch of '{}': argument {} ('{}') must be {} ({}), got {}", f.name(), i,
                          p.name, describe_param(p),
                          p.pointer ? "DeviceBuffer<T>, DevicePtr<T> or a std::uint64_t address"
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
  }
  return false;
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

}  // namespace

void launch_raw(const Function& f, Dim3 grid, Dim3 block, std::uint32_t shared_bytes,
                StreamRef stream, void** params) {
  const detail::DriverApi& d = detail::driver();
  detail::make_current(f.context());
  if (shared_bytes + f.contract().static_shared_bytes > kDefaultSharedLimit) {
    f.reserve_dynamic_shared(shared_bytes);
  }
  CUresult r;
  const char* call = "cuLaunchKernel";
  if (f.contract().waits_for_prior_grid) {
    // The kernel waits for the grid before it (griddepcontrol.wait): let it launch while that
    // grid finishes (programmatic dependent launch), hiding the gap between the two.
    CUlaunchAttribute early{};
    early.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    early.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config{};
    config.gridDimX = grid.x;
    config.gridDimY = grid.y;
    config.gridDimZ = grid.z;
    config.blockDimX = block.x;
    config.blockDimY = block.y;
    config.blockDimZ = block.z;
    config.sharedMemBytes = shared_bytes;
    config.hStream = stream.handle();
    config.attrs = &early;
    config.numAttrs = 1;
    call = "cuLaunchKernelEx";
    r = d.cuLaunchKernelEx(&config, f.handle(), params, nullptr);
  } else {
    r = d.cuLaunchKernel(f.handle(), grid.x, grid.y, grid.z, block.x, block.y, block.z,
                         shared_bytes, stream.handle(), params, nullptr);
  }
  detail::check(r, call, [&] {
    return fmt::format(
        "launching '{}' with grid ({}, {}, {}), block ({}, {}, {}), {} bytes of "
        "dynamic shared memory",
        f.name(), grid.x, grid.y, grid.z, block.x, block.y, block.z, shared_bytes);
  });
}

namespace detail {

void launch_checked(const Function& f, Dim3 grid, Dim3 block, std::uint32_t shared_bytes,
                    StreamRef stream, const ArgRef* args, std::size_t count) {
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
  void* params[kMaxParams];
  for (std::size_t i = 0; i < count; ++i) {
    if (!accepts(slots[i], args[i])) [[unlikely]] {
      bad_argument(f, i, args[i]);
    }
    params[i] = const_cast<void*>(args[i].value);
  }
  launch_raw(f, grid, block, shared_bytes, stream, params);
}

}  // namespace detail
}  // namespace ptxdsl::runtime
