// The main of a tool that ptxdsl_add_kernel_tool builds: the tool's own sources define
// ptxdsl::tool::register_kernels, and the commands are the library's.
#include <cstdio>
#include <exception>
#include <string_view>

#include "ptxdsl/tool/registry.hpp"

int main(int argc, char** argv) {
  std::string_view name = argc > 0 && argv[0] != nullptr ? argv[0] : "kernel-tool";
  name = name.substr(name.find_last_of('/') == std::string_view::npos ? 0
                                                                      : name.find_last_of('/') + 1);
  ptxdsl::tool::Registry registry;
  try {
    ptxdsl::tool::register_kernels(registry);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%.*s: error: registering the kernels: %s\n",
                 static_cast<int>(name.size()), name.data(), e.what());
    return 1;
  }
  return ptxdsl::tool::run_kernel_tool(argc, argv, registry, name);
}
