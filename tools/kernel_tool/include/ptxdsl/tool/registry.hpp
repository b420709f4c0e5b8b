#pragma once

#include <string_view>
#include <vector>

#include "ptxdsl/tool/definition.hpp"

namespace ptxdsl::tool {

// The kernels of one tool, in the order they were added.
class Registry {
 public:
  // Checks the definition: a name of its own, a builder, parameter names that are neither
  // repeated nor the commands' own options, defaults that parse, a reference only with inputs.
  // Throws ptxdsl::Error naming the kernel and what is wrong.
  void add(KernelDefinition def);
  const std::vector<KernelDefinition>& kernels() const { return kernels_; }
  // Throws ptxdsl::Error listing the kernels there are.
  const KernelDefinition& find(std::string_view name) const;

 private:
  std::vector<KernelDefinition> kernels_;
};

// The function a kernel tool's own sources define; the main that ptxdsl_add_kernel_tool links
// calls it once, before reading the command line:
//   void ptxdsl::tool::register_kernels(ptxdsl::tool::Registry& registry) { registry.add({...}); }
void register_kernels(Registry& registry);

// The command line of a kernel tool over `registry`: list, emit (--json), check (--ptx FILE),
// run (--cpu, --trace). `name` starts its messages. Returns the exit status: 0 ok, 1 a failure or
// FAIL, 2 bad input.
int run_kernel_tool(int argc, char** argv, const Registry& registry, std::string_view name);

}  // namespace ptxdsl::tool
