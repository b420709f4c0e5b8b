#pragma once

// Everything a kernel tool's sources need (docs/dsl.md, "Your own tool"): `#include
// <ptxdsl/tool.hpp>` and define ptxdsl::tool::register_kernels. Link ptxdsl::tool, or let
// ptxdsl_add_kernel_tool do it.
#include "ptxdsl/dsl.hpp"
#include "ptxdsl/tool/definition.hpp"
#include "ptxdsl/tool/random.hpp"
#include "ptxdsl/tool/registry.hpp"
#include "ptxdsl/tool/run.hpp"
