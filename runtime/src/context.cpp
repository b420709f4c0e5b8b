#include <fmt/format.h>

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

DeviceInfo read_info(CUdevice device, int ordinal) {
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  PTXDSL_CU_CHECK("reading the device name", cuDeviceGetName, name, sizeof(name) - 1, device);
  info.name = name;
  info.cc_major = attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "cc major");
  info.cc_minor = attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "cc minor");
  info.sm_count = attribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "SM count");
  info.l2_bytes = attribute(device, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2 size");
  info.max_shared_per_block_optin =
      attribute(device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "shared optin");
  size_t total = 0;
  PTXDSL_CU_CHECK("reading the device memory size", cuDeviceTotalMem, &total, device);
  info.total_memory = total;
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
