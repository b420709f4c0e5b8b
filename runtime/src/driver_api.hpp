#pragma once

// Private to runtime/src: the only place cuda.h is seen.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <string>
#include <type_traits>

#include "ptxdsl/runtime/context.hpp"
#include "ptxdsl/runtime/error.hpp"

namespace ptxdsl::runtime::detail {

// Every entry point we use, with the ABI version of the cudaTypedefs.h PFN we call it through.
// cuGetProcAddress is asked for exactly that version: asking at CUDA_VERSION would hand back the
// newest ABI (cuCtxSynchronize at 13000 takes a context argument).
#define PTXDSL_DRIVER_FUNCTIONS(X)       \
  X(cuInit, 2000)                        \
  X(cuDriverGetVersion, 2020)            \
  X(cuGetErrorName, 6000)                \
  X(cuGetErrorString, 6000)              \
  X(cuDeviceGet, 2000)                   \
  X(cuDeviceGetCount, 2000)              \
  X(cuDeviceGetName, 2000)               \
  X(cuDeviceGetAttribute, 2000)          \
  X(cuDeviceTotalMem, 3020)              \
  X(cuDevicePrimaryCtxRetain, 7000)      \
  X(cuDevicePrimaryCtxRelease, 11000)    \
  X(cuCtxSetCurrent, 4000)               \
  X(cuCtxGetCurrent, 4000)               \
  X(cuCtxSynchronize, 2000)              \
  X(cuMemGetInfo, 3020)                  \
  X(cuPointerGetAttribute, 4000)         \
  X(cuModuleLoadDataEx, 2010)            \
  X(cuModuleUnload, 2000)                \
  X(cuModuleGetFunction, 2000)           \
  X(cuFuncSetAttribute, 9000)            \
  X(cuFuncGetAttribute, 2020)            \
  X(cuLaunchKernel, 4000)                \
  X(cuLaunchKernelEx, 11060)             \
  X(cuOccupancyMaxActiveClusters, 11070) \
  X(cuTensorMapEncodeTiled, 12000)       \
  X(cuMemAlloc, 3020)                    \
  X(cuMemFree, 3020)                     \
  X(cuMemcpyHtoD, 3020)                  \
  X(cuMemcpyDtoH, 3020)                  \
  X(cuMemcpyDtoD, 3020)                  \
  X(cuMemcpyHtoDAsync, 3020)             \
  X(cuMemcpyDtoDAsync, 3020)             \
  X(cuMemcpyDtoHAsync, 3020)             \
  X(cuMemsetD8, 3020)                    \
  X(cuMemsetD16, 3020)                   \
  X(cuMemsetD32, 3020)                   \
  X(cuMemsetD8Async, 3020)               \
  X(cuMemsetD16Async, 3020)              \
  X(cuMemsetD32Async, 3020)              \
  X(cuStreamCreate, 2000)                \
  X(cuStreamDestroy, 4000)               \
  X(cuStreamSynchronize, 2000)           \
  X(cuEventCreate, 2000)                 \
  X(cuEventDestroy, 4000)                \
  X(cuEventRecord, 2000)                 \
  X(cuEventSynchronize, 2000)            \
  X(cuEventElapsedTime, 2000)            \
  X(cuMemPoolCreate, 11020)              \
  X(cuMemPoolDestroy, 11020)             \
  X(cuMemPoolSetAttribute, 11020)        \
  X(cuMemAllocFromPoolAsync, 11020)      \
  X(cuMemFreeAsync, 11020)               \
  X(cuStreamBeginCapture, 10010)         \
  X(cuStreamEndCapture, 10000)           \
  X(cuStreamIsCapturing, 10000)          \
  X(cuGraphInstantiateWithFlags, 11040)  \
  X(cuGraphExecUpdate, 10020)            \
  X(cuGraphLaunch, 10000)                \
  X(cuGraphExecDestroy, 10000)           \
  X(cuGraphDestroy, 10000)

struct DriverApi {
#define PTXDSL_DECLARE_PFN(name, version) PFN_##name##_v##version name = nullptr;
  PTXDSL_DRIVER_FUNCTIONS(PTXDSL_DECLARE_PFN)
#undef PTXDSL_DECLARE_PFN
};

// The loaded driver, or throws ptxdsl::Error "no CUDA driver found (libcuda.so.1): <reason>".
// Loads once; later calls are a check of a static.
const DriverApi& driver();
// The loaded driver or nullptr, never throws, never loads: for destructors.
const DriverApi* loaded_driver() noexcept;

[[noreturn]] void throw_driver_error(CUresult result, const char* call, const std::string& what);

// The one check path: the message (`what`: text, or a callable returning text, evaluated only on
// failure) says what we were doing; the error adds the call, cuGetErrorName and cuGetErrorString.
template <class What>
inline void check(CUresult result, const char* call, What&& what) {
  if (result != CUDA_SUCCESS) [[unlikely]] {
    if constexpr (std::is_invocable_v<What>) {
      throw_driver_error(result, call, std::string(what()));
    } else {
      throw_driver_error(result, call, std::string(what));
    }
  }
}

// "CUDA_ERROR_INVALID_VALUE (invalid argument)"; never throws.
std::string describe(CUresult result);

#define PTXDSL_CU_CHECK(what, fn, ...) \
  ::ptxdsl::runtime::detail::check(::ptxdsl::runtime::detail::driver().fn(__VA_ARGS__), #fn, what)

// What a Context shares with everything made in it.
struct ContextState {
  CUcontext context = nullptr;
  CUdevice device = 0;
  DeviceInfo info;
  ContextState() = default;
  ContextState(const ContextState&) = delete;
  ContextState& operator=(const ContextState&) = delete;
  ~ContextState();  // releases the primary context
};

// Makes `context` current on this thread unless it already is.
inline void make_current(CUcontext context) {
  const DriverApi& d = driver();
  CUcontext current = nullptr;
  if (d.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == context) return;
  PTXDSL_CU_CHECK("making the context current", cuCtxSetCurrent, context);
}

}  // namespace ptxdsl::runtime::detail
