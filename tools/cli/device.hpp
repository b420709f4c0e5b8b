#pragma once

#include <string>

#include "ptxdsl/runtime/context.hpp"

namespace ptxdsl::cli {

// The driver, or a one-line runtime_error saying why there is none (exit 1).
void require_driver_one_line();
// "NVIDIA H200 (sm_90, 132 SMs)".
std::string describe_device(const runtime::DeviceInfo& info);

}  // namespace ptxdsl::cli
