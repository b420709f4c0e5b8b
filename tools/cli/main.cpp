// `ptxdsl`: the kernel tool of the norms. list, emit, check and run are every tool's commands
// (ptxdsl/cli/); bench, tune and info are the norms' own.
#include <fmt/format.h>

#include "cli.hpp"

#ifndef PTXDSL_VERSION
#error "PTXDSL_VERSION must be the project's version (tools/CMakeLists.txt defines it)"
#endif

int main(int argc, char** argv) {
  const ptxdsl::cli::ToolInfo info{
      .name = "ptxdsl",
      .description = "ptxdsl: norm kernels written in a C++ PTX builder; emit, check, run, bench",
      .version = std::string("ptxdsl ") + PTXDSL_VERSION,
      .memory_hint = "try a smaller --batch or --width"};
  return ptxdsl::cli::run_app(argc, argv, info, [](CLI::App& app) {
    std::vector<ptxdsl::cli::Registered> commands;
    commands.push_back(ptxdsl::cli::add_list(app));
    commands.push_back(ptxdsl::cli::add_emit(app));
    commands.push_back(ptxdsl::cli::add_check(app));
    commands.push_back(ptxdsl::cli::add_run(app));
    commands.push_back(ptxdsl::cli::add_bench(app));
    commands.push_back(ptxdsl::cli::add_tune(app));
    commands.push_back(ptxdsl::cli::add_info(app));
    return commands;
  });
}
