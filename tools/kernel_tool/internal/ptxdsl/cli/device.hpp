#pragma once

#include <string>

#include "ptxdsl/dsl/module.hpp"
#include "ptxdsl/runtime/context.hpp"
#include "ptxdsl/runtime/module.hpp"

namespace ptxdsl::cli {

// The driver, or a one-line runtime_error saying why there is none (exit 1).
void require_driver_one_line();
// "NVIDIA H200 (sm_90, 132 SMs)".
std::string describe_device(const runtime::DeviceInfo& info);
// Kernel `entry` of a DSL module, JIT-loaded once per context (the runtime's module cache).
runtime::Function load_kernel(const runtime::Context& ctx, Module& m, const std::string& entry);

}  // namespace ptxdsl::cli
