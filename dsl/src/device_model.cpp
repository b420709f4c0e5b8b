#include "ptxdsl/dsl/device_model.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "ptxdsl/dsl/error.hpp"

namespace ptxdsl {
namespace {

constexpr std::uint32_t kKiB = 1024;
constexpr std::uint64_t kMiB = 1024 * 1024;
constexpr std::uint64_t kMB = 1000 * 1000;

// The per-SM and per-block limits of a compute capability, from the CUDA C++ Programming Guide's
// "Technical Specifications per Compute Capability" table; the SM count and L2 size per product.
DeviceModel family(int major, int minor) {
  DeviceModel m;
  m.cc_major = major;
  m.cc_minor = minor;
  m.max_threads_per_block = 1024;
  m.registers_per_sm = 65536;
  m.registers_per_block = 65536;
  m.max_registers_per_thread = 255;
  m.shared_per_block = 48 * kKiB;
  m.shared_reserved_per_block = 1 * kKiB;
  if (major == 8 && minor == 0) {
    m.max_threads_per_sm = 2048;
    m.max_blocks_per_sm = 32;
    m.shared_per_sm = 164 * kKiB;
    m.shared_per_block_optin = 163 * kKiB;
  } else if (major == 8) {  // 8.6 and 8.9
    m.max_threads_per_sm = 1536;
    m.max_blocks_per_sm = minor == 9 ? 24 : 16;
    m.shared_per_sm = 100 * kKiB;
    m.shared_per_block_optin = 99 * kKiB;
  } else {  // 9.0 and 10.0
    m.max_threads_per_sm = 2048;
    m.max_blocks_per_sm = 32;
    m.shared_per_sm = 228 * kKiB;
    m.shared_per_block_optin = 227 * kKiB;
  }
  m.max_cluster_size = major >= 9 ? kPortableClusterSize : 0;
  m.max_cluster_size_nonportable = major >= 9 ? kNonPortableClusterSize : 0;
  return m;
}

DeviceModel preset(std::string name, std::string product, int major, int minor, std::uint32_t sms,
                   std::uint64_t l2) {
  DeviceModel m = family(major, minor);
  m.name = std::move(name);
  m.product = std::move(product);
  m.sm_count = sms;
  m.l2_bytes = l2;
  return m;
}

std::vector<DeviceModel> make_presets() {
  return {
      // H200 SXM: the driver's figures on the H200 this project measures on (132 SMs, 60 MiB L2).
      preset("h200", "NVIDIA H200", 9, 0, 132, 60 * kMiB),
      // H100 SXM5: 132 SMs, 50 MB L2 (NVIDIA H100 Tensor Core GPU Architecture whitepaper).
      preset("h100", "NVIDIA H100 80GB HBM3", 9, 0, 132, 50 * kMiB),
      // A100 SXM4: 108 SMs, 40 MB L2 (NVIDIA A100 Tensor Core GPU Architecture whitepaper).
      preset("a100", "NVIDIA A100-SXM4-80GB", 8, 0, 108, 40 * kMiB),
      // L40S: 142 SMs, 96 MB L2 (NVIDIA L40S datasheet; Ada Lovelace architecture whitepaper).
      preset("l40s", "NVIDIA L40S", 8, 9, 142, 96 * kMiB),
      // GeForce RTX 4090: 128 SMs, 72 MB L2 (NVIDIA Ada Lovelace architecture whitepaper).
      preset("rtx4090", "NVIDIA GeForce RTX 4090", 8, 9, 128, 72 * kMiB),
      // GeForce RTX 3090: 82 SMs, 6 MB L2 (NVIDIA Ampere GA102 GPU architecture whitepaper).
      preset("rtx3090", "NVIDIA GeForce RTX 3090", 8, 6, 82, 6 * kMiB),
      // A10: 72 SMs, 6 MB L2 (NVIDIA A10 datasheet; GA102).
      preset("a10", "NVIDIA A10", 8, 6, 72, 6 * kMiB),
      // B200: 148 SMs, 126 MB L2 (NVIDIA Blackwell architecture technical brief; the L2 figure as
      // published for the two-die part).
      preset("b200", "NVIDIA B200", 10, 0, 148, 126 * kMB),
  };
}

}  // namespace

Arch arch_for_compute_capability(int major, int minor) {
  if (major < 8) {
    throw Error(fmt::format(
        "compute capability must be 8.0 or newer (the kernels target sm_80 and later), got {}.{}",
        major, minor));
  }
  if (major == 8) return Arch::Sm80;
  if (major == 9) return Arch::Sm90;
  return Arch::Sm100;
}

Arch newest_arch_for_compute_capability(int major, int minor) {
  const Arch family = arch_for_compute_capability(major, minor);
  if (major == 8 && minor >= 9) return Arch::Sm89;
  if (major == 9 && minor == 0) return Arch::Sm90a;
  if (major == 10 && minor == 0) return Arch::Sm100a;
  return family;
}

bool DeviceModel::runs(Arch target) const {
  return arch_provides(newest_arch_for_compute_capability(cc_major, cc_minor), target);
}

Arch DeviceModel::arch() const {
  return arch_for_compute_capability(cc_major, cc_minor);
}

std::uint32_t DeviceModel::blocks_per_sm(std::uint32_t threads, std::uint32_t registers,
                                         std::uint32_t shared_bytes) const {
  if (block_misfit(threads, registers, shared_bytes)) return 0;
  // Registers are granted to whole warps in units of 256 (8 a lane), as the occupancy calculator
  // allocates them.
  const std::uint32_t warps = (threads + 31) / 32;
  const std::uint32_t warp_registers = (std::max(registers, 1u) * 32 + 255) / 256 * 256;
  std::uint32_t fit = std::min(max_blocks_per_sm, max_threads_per_sm / (warps * 32));
  fit = std::min(fit, registers_per_sm / (warp_registers * warps));
  if (shared_bytes > 0)
    fit = std::min(fit, shared_per_sm / (shared_bytes + shared_reserved_per_block));
  return fit;
}

std::optional<std::string> DeviceModel::block_misfit(std::uint32_t threads, std::uint32_t registers,
                                                     std::uint32_t shared_bytes) const {
  if (threads == 0 || threads > max_threads_per_block) {
    return fmt::format("a block of {} threads: {} allows 1 to {}", threads, name,
                       max_threads_per_block);
  }
  if (registers > max_registers_per_thread) {
    return fmt::format("{} registers a thread: {} allows at most {}", registers, name,
                       max_registers_per_thread);
  }
  if (std::uint64_t{registers} * threads > registers_per_block) {
    return fmt::format("{} threads of {} registers need {} registers: {} has {} a block", threads,
                       registers, std::uint64_t{registers} * threads, name, registers_per_block);
  }
  if (shared_bytes > shared_per_block_optin) {
    return fmt::format("{} bytes of shared memory: {} allows at most {} a block", shared_bytes,
                       name, shared_per_block_optin);
  }
  return std::nullopt;
}

std::string DeviceModel::summary() const {
  const std::string clusters = has_clusters()
                                   ? fmt::format("clusters of {} ({} non-portable)",
                                                 max_cluster_size, max_cluster_size_nonportable)
                                   : std::string("no clusters");
  return fmt::format(
      "{}: {} (cc {}.{}), {} SMs, {} threads and {} KB shared an SM, {} KB shared "
      "a block, {:.0f} MiB L2, {}",
      name, arch_name(arch()), cc_major, cc_minor, sm_count, max_threads_per_sm,
      shared_per_sm / kKiB, shared_per_block_optin / kKiB, static_cast<double>(l2_bytes) / kMiB,
      clusters);
}

const std::vector<DeviceModel>& device_presets() {
  static const std::vector<DeviceModel> presets = make_presets();
  return presets;
}

std::string device_preset_names() {
  std::string names;
  for (const DeviceModel& m : device_presets()) {
    if (!names.empty()) names += ", ";
    names += m.name;
  }
  return names;
}

const DeviceModel& device_preset(std::string_view name) {
  for (const DeviceModel& m : device_presets()) {
    if (m.name == name) return m;
  }
  throw Error(fmt::format("device must be one of {}, got '{}'", device_preset_names(), name));
}

const DeviceModel& default_device() {
  return device_preset("h200");
}

}  // namespace ptxdsl
