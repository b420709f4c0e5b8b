#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ptxdsl/dsl/arch.hpp"
#include "ptxdsl/dsl/kernel.hpp"

namespace ptxdsl {

// A PTX module: target, version and its kernels. `emit` finalizes every kernel and prints
// deterministic text.
class Module {
 public:
  explicit Module(Arch arch = Arch::Sm90, PtxVersion version = {7, 8});
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  Kernel& kernel(std::string_view name);
  // Unique in the process (1, 2, ...): tells apart kernels of the same name in two modules.
  std::uint64_t id() const { return id_; }
  Arch arch() const { return arch_; }
  PtxVersion version() const { return version_; }
  const std::vector<std::unique_ptr<Kernel>>& kernels() const { return kernels_; }
  Kernel& find(std::string_view name) const;
  std::string emit();

 private:
  void check_symbols() const;

  std::uint64_t id_;
  Arch arch_;
  PtxVersion version_;
  std::vector<std::unique_ptr<Kernel>> kernels_;
};

}  // namespace ptxdsl
