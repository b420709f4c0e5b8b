#include "ptxdsl/dsl/arch.hpp"

#include <fmt/format.h>

#include <array>
#include <string>

#include "ptxdsl/dsl/error.hpp"

namespace ptxdsl {
namespace {

// One row per target: its name, the target whose instructions it has, whether it is a chip's
// arch-specific (`a`) target, and the oldest PTX version that may name it.
struct ArchInfo {
  Arch arch;
  std::string_view name;
  Arch base;
  bool arch_specific;
  PtxVersion least_ptx;
};

constexpr std::array kArchs{
    ArchInfo{Arch::Sm80, "sm_80", Arch::Sm80, false, {7, 0}},
    ArchInfo{Arch::Sm89, "sm_89", Arch::Sm89, false, {7, 8}},
    ArchInfo{Arch::Sm90, "sm_90", Arch::Sm90, false, {7, 8}},
    ArchInfo{Arch::Sm90a, "sm_90a", Arch::Sm90, true, {8, 0}},
    ArchInfo{Arch::Sm100, "sm_100", Arch::Sm100, false, {8, 6}},
    ArchInfo{Arch::Sm100a, "sm_100a", Arch::Sm100, true, {8, 6}},
};

constexpr bool rows_in_enum_order() {
  for (std::size_t i = 0; i < kArchs.size(); ++i) {
    if (static_cast<std::size_t>(kArchs[i].arch) != i) return false;
  }
  return true;
}
static_assert(rows_in_enum_order(), "kArchs must list every Arch in enum order");

constexpr std::array kAllArchs = [] {
  std::array<Arch, kArchs.size()> all{};
  for (std::size_t i = 0; i < kArchs.size(); ++i) all[i] = kArchs[i].arch;
  return all;
}();

const ArchInfo& info(Arch a) {
  return kArchs[static_cast<std::size_t>(a)];
}

}  // namespace

std::string_view arch_name(Arch a) {
  return info(a).name;
}

std::span<const Arch> all_archs() {
  return kAllArchs;
}

std::string all_arch_names() {
  std::string names;
  for (const ArchInfo& row : kArchs) {
    names += names.empty() ? "" : ", ";
    names += row.name;
  }
  return names;
}

Arch parse_arch(std::string_view name) {
  for (const ArchInfo& row : kArchs) {
    if (row.name == name) return row.arch;
  }
  throw Error(fmt::format("arch must be one of {}, got '{}'", all_arch_names(), name));
}

PtxVersion min_ptx_version(Arch a) {
  return info(a).least_ptx;
}

bool arch_is_specific(Arch a) {
  return info(a).arch_specific;
}

bool arch_provides(Arch target, Arch needed) {
  if (info(needed).arch_specific) return target == needed;
  return info(target).base >= needed;
}

}  // namespace ptxdsl
