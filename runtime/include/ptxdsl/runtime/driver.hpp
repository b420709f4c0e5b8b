#pragma once

#include <string>

#include "ptxdsl/dsl/arch.hpp"

// The CUDA driver, loaded at run time: `dlopen("libcuda.so.1")`, then every entry point through
// cuGetProcAddress. Nothing links libcuda, so programs start on machines without a driver.
namespace ptxdsl::runtime {

// True when libcuda.so.1 loads and cuInit succeeds; otherwise false, with the reason in `why`
// ("no CUDA driver found (libcuda.so.1): ..."). Never throws.
bool driver_available(std::string* why = nullptr);
// Loads the driver or throws ptxdsl::Error "no CUDA driver found (libcuda.so.1): <reason>".
void require_driver();
// The driver's CUDA version (13000 for 13.0); throws like require_driver.
int driver_version();
// The newest PTX ISA version a driver of `version` (driver_version()'s form) JITs: 7.8 for 11.8,
// 8.1 for 12.1, 9.0 for 13.0; a driver newer than the table, the newest in it.
PtxVersion newest_ptx_version(int version);
int device_count();

}  // namespace ptxdsl::runtime
