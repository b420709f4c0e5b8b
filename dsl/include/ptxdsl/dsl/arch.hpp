#pragma once

#include <span>
#include <string>
#include <string_view>

namespace ptxdsl {

// The PTX target a module is written for: which instructions exist, never how big the chip is
// (that is the DeviceModel's). The `a` targets add their chip's arch-specific instructions
// (setmaxnreg, wgmma on sm_90a; FP4 and tcgen05 on sm_100a) to everything of their base target,
// and run only on that chip. Ordered by base target, each `a` just after its base.
enum class Arch { Sm80, Sm89, Sm90, Sm90a, Sm100, Sm100a };

struct PtxVersion {
  int major = 7;
  int minor = 8;
  friend auto operator<=>(const PtxVersion&, const PtxVersion&) = default;
};

std::string_view arch_name(Arch a);
// "sm_80" → Arch::Sm80; anything else throws, listing what is allowed.
Arch parse_arch(std::string_view name);
// Every target, oldest first, and their names: "sm_80, sm_89, ..., sm_100a".
std::span<const Arch> all_archs();
std::string all_arch_names();
// Whether a module for `target` may use what `needed` has: an `a` target's own instructions only
// on that target, every other target's on it and on every newer one.
bool arch_provides(Arch target, Arch needed);
// Whether `a` is a chip's arch-specific target (sm_90a, sm_100a).
bool arch_is_specific(Arch a);
// "7.8" → {7, 8}; the CUDA 13.0 driver takes 7.8 to 9.0.
PtxVersion parse_ptx_version(std::string_view text);
// The oldest PTX version a target may be written in.
PtxVersion min_ptx_version(Arch a);

}  // namespace ptxdsl
