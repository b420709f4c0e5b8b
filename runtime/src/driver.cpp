#include <dlfcn.h>

#include <fmt/format.h>

#include "driver_api.hpp"
#include "ptxdsl/runtime/driver.hpp"
#include "ptxdsl/runtime/error.hpp"

namespace ptxdsl::runtime {
namespace detail {
namespace {

struct LoadedDriver {
  DriverApi api;
  bool ok = false;
  std::string error;  // the full "no CUDA driver found ..." line when !ok
};

std::string no_driver(const std::string& reason) {
  return fmt::format("no CUDA driver found (libcuda.so.1): {}", reason);
}

// dlopen, find cuGetProcAddress_v2 (cuGetProcAddress on drivers before 12.0), resolve every entry
// point at its PFN's version, then cuInit.
LoadedDriver load() {
  LoadedDriver out;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* e = dlerror();
    out.error = no_driver(e != nullptr ? e : "dlopen failed");
    return out;
  }
  // The library stays loaded for the life of the process: destructors may run at exit.
  auto get_v2 = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(lib, "cuGetProcAddress_v2"));
  auto get_v1 = reinterpret_cast<PFN_cuGetProcAddress_v11030>(dlsym(lib, "cuGetProcAddress"));
  if (get_v2 == nullptr && get_v1 == nullptr) {
    out.error = no_driver("libcuda.so.1 has no cuGetProcAddress (driver older than CUDA 11.3)");
    return out;
  }
  auto resolve = [&](const char* symbol, int version, void** fn) -> std::string {
    CUresult r;
    if (get_v2 != nullptr) {
      CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
      r = get_v2(symbol, fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status);
      if (r == CUDA_SUCCESS && status != CU_GET_PROC_ADDRESS_SUCCESS) {
        return fmt::format("{} at version {} not found (status {})", symbol, version,
                           static_cast<int>(status));
      }
    } else {
      r = get_v1(symbol, fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
    }
    if (r != CUDA_SUCCESS || *fn == nullptr) {
      return fmt::format("cuGetProcAddress({}, {}) failed with error {}", symbol, version,
                         static_cast<int>(r));
    }
    return {};
  };
#define PTXDSL_RESOLVE(name, version)                                                   \
  if (std::string e = resolve(#name, version, reinterpret_cast<void**>(&out.api.name)); \
      !e.empty()) {                                                                     \
    out.error = no_driver(e);                                                           \
    return out;                                                                         \
  }
  PTXDSL_DRIVER_FUNCTIONS(PTXDSL_RESOLVE)
#undef PTXDSL_RESOLVE
  if (CUresult r = out.api.cuInit(0); r != CUDA_SUCCESS) {
    const char* name = nullptr;
    out.api.cuGetErrorName(r, &name);
    out.error = no_driver(
        fmt::format("cuInit failed with {} ({})", name ? name : "?", static_cast<int>(r)));
    return out;
  }
  out.ok = true;
  return out;
}

const LoadedDriver& loaded() {
  static const LoadedDriver driver = load();
  return driver;
}

}  // namespace

const DriverApi& driver() {
  const LoadedDriver& d = loaded();
  if (!d.ok) [[unlikely]] {
    throw Error(d.error);
  }
  return d.api;
}

const DriverApi* loaded_driver() noexcept {
  try {
    const LoadedDriver& d = loaded();
    return d.ok ? &d.api : nullptr;
  } catch (...) {
    return nullptr;
  }
}

std::string describe(CUresult result) {
  const DriverApi* d = loaded_driver();
  const char* name = nullptr;
  const char* text = nullptr;
  if (d != nullptr) {
    d->cuGetErrorName(result, &name);
    d->cuGetErrorString(result, &text);
  }
  return fmt::format("{} ({})", name ? name : "unknown error", text ? text : "no description");
}

void throw_driver_error(CUresult result, const char* call, const std::string& what) {
  throw DriverError(static_cast<int>(result), call,
                    fmt::format("{}: {} failed: {} [CUresult {}]", what, call, describe(result),
                                static_cast<int>(result)));
}

}  // namespace detail

bool driver_available(std::string* why) {
  const detail::LoadedDriver& d = detail::loaded();
  if (!d.ok && why != nullptr) *why = d.error;
  return d.ok;
}

void require_driver() {
  detail::driver();
}

int driver_version() {
  int v = 0;
  PTXDSL_CU_CHECK("asking the driver's version", cuDriverGetVersion, &v);
  return v;
}

PtxVersion newest_ptx_version(int version) {
  // The CUDA releases and the PTX ISA version each introduced (the PTX ISA's release notes).
  struct Release {
    int driver;
    PtxVersion ptx;
  };
  static constexpr Release kReleases[] = {
      {11000, {7, 0}}, {11010, {7, 1}}, {11020, {7, 2}}, {11030, {7, 3}}, {11040, {7, 4}},
      {11050, {7, 5}}, {11060, {7, 6}}, {11070, {7, 7}}, {11080, {7, 8}}, {12000, {8, 0}},
      {12010, {8, 1}}, {12020, {8, 2}}, {12030, {8, 3}}, {12040, {8, 4}}, {12050, {8, 5}},
      {12080, {8, 7}}, {12090, {8, 8}}, {13000, {9, 0}},
  };
  PtxVersion newest{6, 0};
  for (const Release& r : kReleases) {
    if (version >= r.driver) newest = r.ptx;
  }
  return newest;
}

int device_count() {
  int n = 0;
  PTXDSL_CU_CHECK("counting devices", cuDeviceGetCount, &n);
  return n;
}

}  // namespace ptxdsl::runtime
