#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ptxdsl/dsl/kernel.hpp"

namespace ptxdsl {

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

// A PTX module: target, version and its kernels. `emit` finalizes every kernel and prints
// deterministic text.
class Module {
 public:
  explicit Module(Arch arch = Arch::Sm90, PtxVersion version = {7, 8});
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  Kernel& kernel(std::string_view name);
  Arch arch() const { return arch_; }
  PtxVersion version() const { return version_; }
  const std::vector<std::unique_ptr<Kernel>>& kernels() const { return kernels_; }
  Kernel& find(std::string_view name) const;
  std::string emit();

 private:
  void check_symbols() const;

  Arch arch_;
  PtxVersion version_;
  std::vector<std::unique_ptr<Kernel>> kernels_;
};

}  // namespace ptxdsl
