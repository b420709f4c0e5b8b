#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ptxdsl/dsl/dim3.hpp"
#include "ptxdsl/dsl/types.hpp"

namespace ptxdsl {

// The bytes of a tensor map parameter (CUtensorMap).
inline constexpr int kTensorMapBytes = 128;

// One kernel parameter as a caller passes it: a global pointer (`.param .u64`) to elements of
// `element`, a scalar of `type`, or a tensor map (`.param .align 64 .b8 name[128]`).
struct ParamSpec {
  std::string name;
  ScalarType type = ScalarType::U64;  // the .param type
  bool pointer = false;
  ScalarType element = ScalarType::B32;  // for pointers: what they point to
  // What the kernel's own accesses need (Kernel::contract derives them from its global loads,
  // stores, atomics and async copies; 0 or empty where nothing is needed):
  std::uint32_t align_bytes = 0;  // pointers: the address a multiple of this many bytes
  std::string row_stride;         // pointers: the scalar parameter whose value steps its rows
  std::uint32_t multiple = 0;     // scalars: the value a multiple of this (rows stay aligned)
  bool tensor_map = false;
  int size_bytes() const {
    return tensor_map ? kTensorMapBytes : pointer ? 8 : ::ptxdsl::size_bytes(type);
  }
};

// What a caller needs to launch an entry: its name, parameters in order, block shape and shared
// memory. How the grid follows from (batch, width) is the kernel family's to say (kernels/).
struct KernelContract {
  std::string entry;
  std::vector<ParamSpec> params;
  std::uint32_t block_threads = 0;  // .reqntid x (or .maxntid x), 0 if unset
  bool block_required = false;      // .reqntid rather than .maxntid
  std::uint32_t static_shared_bytes = 0;
  std::uint32_t dynamic_shared_bytes = 0;  // what the launch must pass
  // Has griddepcontrol.wait: it may be launched before the grid ahead of it in its stream has
  // finished (programmatic dependent launch), and waits for that grid's results itself.
  bool waits_for_prior_grid = false;
  // Thread-block clusters (sm_90): the CTAs of one cluster, as `.reqnctapercluster` fixes them
  // ({0, 0, 0}: not fixed), and `.explicitcluster`, the kernel must be launched with cluster
  // dimensions. The grid must be a whole number of clusters in each dimension.
  Dim3 cluster{0, 0, 0};
  bool explicit_cluster = false;
  bool has_cluster() const { return cluster.count() != 0 || explicit_cluster; }
};

}  // namespace ptxdsl
