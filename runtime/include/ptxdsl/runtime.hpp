#pragma once

// The runtime: driver loading, context, memory, streams, events and graphs, modules and functions,
// checked launches, the module cache. The norms' host API is <ptxdsl/runtime/norms.hpp>, in
// ptxdsl::norms.
#include "ptxdsl/runtime/context.hpp"
#include "ptxdsl/runtime/driver.hpp"
#include "ptxdsl/runtime/error.hpp"
#include "ptxdsl/runtime/graph.hpp"
#include "ptxdsl/runtime/handles.hpp"
#include "ptxdsl/runtime/launch.hpp"
#include "ptxdsl/runtime/memory.hpp"
#include "ptxdsl/runtime/module.hpp"
#include "ptxdsl/runtime/stream.hpp"
#include "ptxdsl/runtime/tensor_map.hpp"
