#include <fmt/format.h>

#include <algorithm>

#include "driver_api.hpp"
#include "ptxdsl/runtime/context.hpp"
#include "ptxdsl/runtime/driver.hpp"

namespace ptxdsl::runtime {
namespace detail {

ContextState::~ContextState() {
  if (const DriverApi* d = loaded_driver(); d != nullptr && context != nullptr) {
    d->cuDevicePrimaryCtxRelease(device);
  }
}

namespace {

int attribute(CUdevice device, CUdevice_attribute a, const char* what) {
  int v = 0;
  PTXDSL_CU_CHECK([&] { return fmt::format("reading device {}'s {}", device, what); },
                  cuDeviceGetAttribute, &v, a, device);
  return v;
}

std::uint32_t limit(CUdevice device, CUdevice_attribute a, const char* what) {
  return static_cast<std::uint32_t>(std::max(attribute(device, a, what), 0));
}

DeviceModel read_model(CUdevice device, const std::string& name) {
  DeviceModel m;
  m.name = name;
  m.product = name;
  m.cc_major = attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "cc major");
  m.cc_minor = attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "cc minor");
  m.sm_count = limit(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "SM count");
  m.max_threads_per_sm =
      limit(device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, "threads an SM");
  m.max_threads_per_block =
      limit(device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "threads a block");
  m.max_blocks_per_sm =
      limit(device, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, "blocks an SM");
  m.registers_per_sm =
      limit(device, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, "registers an SM");
  m.registers_per_block =
      limit(device, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, "registers a block");
  // The driver has no attribute for it; 255 is every supported family's limit.
  m.max_registers_per_thread = 255;
  m.shared_per_sm = limit(device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
                          "shared memory an SM");
  m.shared_per_block =
      limit(device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "shared memory a block");
  m.shared_per_block_optin = limit(device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                   "opt-in shared memory a block");
  m.shared_reserved_per_block = limit(device, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
                                      "reserved shared memory a block");
  m.l2_bytes = limit(device, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2 size");
  const bool clusters = limit(device, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, "cluster launch") != 0;
  m.max_cluster_size = clusters ? kPortableClusterSize : 0;
  m.max_cluster_size_nonportable = clusters ? kNonPortableClusterSize : 0;
  return m;
}

DeviceInfo read_info(CUdevice device, int ordinal) {
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  PTXDSL_CU_CHECK("reading the device name", cuDeviceGetName, name, sizeof(name) - 1, device);
  info.name = name;
  size_t total = 0;
  PTXDSL_CU_CHECK("reading the device memory size", cuDeviceTotalMem, &total, device);
  info.total_memory = total;
  info.model = read_model(device, info.name);
  return info;
}

}  // namespace
}  // namespace detail

Context::Context(int device) {
  const detail::DriverApi& d = detail::driver();
  int count = 0;
  PTXDSL_CU_CHECK("counting devices", cuDeviceGetCount, &count);
  if (device < 0 || device >= count) {
    throw Error(fmt::format("device must be in [0, {}), got {}", count, device));
  }
  auto state = std::make_shared<detail::ContextState>();
  PTXDSL_CU_CHECK([&] { return fmt::format("getting device {}", device); }, cuDeviceGet,
                  &state->device, device);
  state->info = detail::read_info(state->device, device);
  CUcontext ctx = nullptr;
  PTXDSL_CU_CHECK([&] { return fmt::format("retaining device {}'s primary context", device); },
                  cuDevicePrimaryCtxRetain, &ctx, state->device);
  state->context = ctx;
  state_ = std::move(state);
  PTXDSL_CU_CHECK("making the primary context current", cuCtxSetCurrent, ctx);
  (void)d;
}

Context Context::share() const {
  return Context(state_);
}

int Context::device() const {
  return state_->info.ordinal;
}
const DeviceInfo& Context::info() const {
  return state_->info;
}
CUctx_st* Context::handle() const {
  return state_->context;
}

void Context::make_current() const {
  detail::make_current(state_->context);
}

void Context::synchronize() const {
  make_current();
  PTXDSL_CU_CHECK("synchronizing the context", cuCtxSynchronize);
}

std::uint64_t Context::free_memory() const {
  make_current();
  size_t free = 0, total = 0;
  PTXDSL_CU_CHECK("reading free device memory", cuMemGetInfo, &free, &total);
  return free;
}

}  // namespace ptxdsl::runtime
