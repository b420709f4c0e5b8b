#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptxdsl/dsl/arch.hpp"

namespace ptxdsl {

// What a GPU has, as a planner needs it: filled from the driver by the runtime
// (runtime::Context::info().model), or taken from a named preset to plan without a GPU (an empty
// model is no device: use a preset). Arch says which PTX a chip runs; this says how big it is, so
// no plan reads a size from Arch.
struct DeviceModel {
  std::string name;  // the preset's name, or the driver's name for the device
  // The driver's name for the product ("NVIDIA H200"): what tuning tables are keyed by, so that a
  // preset plans as its GPU does.
  std::string product;
  int cc_major = 0;
  int cc_minor = 0;
  std::uint32_t sm_count = 0;
  std::uint32_t max_threads_per_sm = 0;
  std::uint32_t max_threads_per_block = 0;
  std::uint32_t max_blocks_per_sm = 0;
  std::uint32_t registers_per_sm = 0;
  std::uint32_t registers_per_block = 0;
  std::uint32_t max_registers_per_thread = 0;
  std::uint32_t shared_per_sm = 0;              // bytes, all blocks of an SM together
  std::uint32_t shared_per_block = 0;           // bytes, without the opt-in attribute
  std::uint32_t shared_per_block_optin = 0;     // bytes, with it
  std::uint32_t shared_reserved_per_block = 0;  // bytes the driver keeps per resident block
  std::uint64_t l2_bytes = 0;
  std::uint32_t max_cluster_size = 0;              // portable cluster size; 0: no clusters
  std::uint32_t max_cluster_size_nonportable = 0;  // with the non-portable opt-in

  // The target kernels are written for by default: its compute capability's family (sm_80, sm_90,
  // sm_100), whose code every later chip runs too.
  Arch arch() const;
  // Whether code for `target` runs on the device: the family's targets, sm_89 on 8.9 and later,
  // and an arch-specific target (sm_90a, sm_100a) on its own chip only.
  bool runs(Arch target) const;
  bool has_clusters() const { return max_cluster_size > 0; }
  // The most CTAs a cluster may have with the non-portable opt-in (the portable size without it).
  std::uint32_t largest_cluster() const {
    return std::max(max_cluster_size, max_cluster_size_nonportable);
  }
  // Resident blocks of `threads` threads using `registers` registers a thread and `shared_bytes`
  // of shared memory (static + dynamic) an SM holds at once; 0 where one does not fit.
  std::uint32_t blocks_per_sm(std::uint32_t threads, std::uint32_t registers,
                              std::uint32_t shared_bytes) const;
  // Why such a block cannot launch on this device, or nothing where it can.
  std::optional<std::string> block_misfit(std::uint32_t threads, std::uint32_t registers,
                                          std::uint32_t shared_bytes) const;
  // "h200: sm_90 (cc 9.0), 132 SMs, 227 KB shared a block, 60 MiB L2, clusters of 8 (16)".
  std::string summary() const;
};

// Cluster sizes, which the driver has no attribute for: 8 blocks portably wherever clusters launch
// (9.0 and later), 16 with the non-portable opt-in (CUDA C++ Programming Guide, "Thread Block
// Clusters").
inline constexpr std::uint32_t kPortableClusterSize = 8;
inline constexpr std::uint32_t kNonPortableClusterSize = 16;

// The family a compute capability runs PTX for (8.x → sm_80, 9.x → sm_90, 10.x and later →
// sm_100); throws for devices older than 8.0, which the kernels do not target.
Arch arch_for_compute_capability(int major, int minor);
// The newest target whose code a compute capability runs: its chip's arch-specific one where it
// has one (9.0 → sm_90a, 10.0 → sm_100a), sm_89 for 8.9, else its family's.
Arch newest_arch_for_compute_capability(int major, int minor);

// Named devices for planning without a GPU, with their published limits.
const std::vector<DeviceModel>& device_presets();
// The preset of that name; throws naming the presets where there is none.
const DeviceModel& device_preset(std::string_view name);
// "h200, h100, a100, ...", for messages and help text.
std::string device_preset_names();
// The preset plans use when neither a device nor a preset is named.
const DeviceModel& default_device();

}  // namespace ptxdsl
