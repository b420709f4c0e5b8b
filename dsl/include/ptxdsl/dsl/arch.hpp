#pragma once

#include <string_view>

namespace ptxdsl {

// The PTX target a module is written for: which instructions exist, never how big the chip is
// (that is the DeviceModel's).
enum class Arch { Sm80, Sm90, Sm100 };

struct PtxVersion {
  int major = 7;
  int minor = 8;
  friend auto operator<=>(const PtxVersion&, const PtxVersion&) = default;
};

std::string_view arch_name(Arch a);
// "sm_80" → Arch::Sm80; anything else throws, listing what is allowed.
Arch parse_arch(std::string_view name);
// "7.8" → {7, 8}; the CUDA 13.0 driver takes 7.8 to 9.0.
PtxVersion parse_ptx_version(std::string_view text);
// The oldest PTX version a target may be written in.
PtxVersion min_ptx_version(Arch a);

}  // namespace ptxdsl
