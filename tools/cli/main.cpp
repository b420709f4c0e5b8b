// `ptxdsl`: list, emit, check, run, bench and info for the norm kernels. Every failure ends in
// main: usage errors as one line and exit 2, run-time failures as their message and exit 1.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <vector>

#include "cli.hpp"
#include "ptxdsl/dsl/error.hpp"

namespace {

using ptxdsl::cli::kExitFailure;
using ptxdsl::cli::kExitUsage;

int run_cli(int argc, char** argv) {
  CLI::App app{"ptxdsl: norm kernels written in a C++ PTX builder; emit, check, run, bench",
               "ptxdsl"};
  app.require_subcommand(1);
  app.fallthrough(false);
  std::vector<ptxdsl::cli::Registered> commands;
  commands.push_back(ptxdsl::cli::add_list(app));
  commands.push_back(ptxdsl::cli::add_emit(app));
  commands.push_back(ptxdsl::cli::add_check(app));
  commands.push_back(ptxdsl::cli::add_run(app));
  commands.push_back(ptxdsl::cli::add_bench(app));
  commands.push_back(ptxdsl::cli::add_info(app));
  constexpr const char* kCommands = "list, emit, check, run, bench or info";
  if (argc > 1 && argv[1][0] != '-') {
    const std::string first = argv[1];
    const bool known = std::any_of(commands.begin(), commands.end(),
                                   [&](const auto& c) { return c.first->get_name() == first; });
    if (!known) {
      throw ptxdsl::cli::UsageError(
          fmt::format("unknown command '{}': the commands are {}", first, kCommands));
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help: the help text on stdout, exit 0
  } catch (const CLI::ArgumentMismatch& e) {
    // "--width: 1 required TEXT missing": say it plainly.
    std::string what = e.what();
    const auto colon = what.find(": ");
    if (colon != std::string::npos && what.find("missing") != std::string::npos) {
      throw ptxdsl::cli::UsageError(fmt::format("{} needs a value", what.substr(0, colon)));
    }
    throw ptxdsl::cli::UsageError(what + " (see ptxdsl --help)");
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (what.find("A subcommand is required") != std::string::npos) {
      throw ptxdsl::cli::UsageError(fmt::format("a command is required: {}", kCommands));
    }
    if (what.empty()) what = e.get_name();
    // CLI11 sometimes ends its messages with a newline; keep to one line.
    while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
    throw ptxdsl::cli::UsageError(what + " (see ptxdsl --help)");
  }
  for (auto& [sub, command] : commands) {
    if (sub->parsed()) return command->run();
  }
  throw ptxdsl::cli::UsageError(fmt::format("a command is required: {}", kCommands));
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_cli(argc, argv);
  } catch (const ptxdsl::cli::UsageError& e) {
    std::fprintf(stderr, "ptxdsl: %s\n", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ptxdsl: error: %s\n", e.what());
    return kExitFailure;
  } catch (...) {
    std::fprintf(stderr, "ptxdsl: error: unknown exception\n");
    return kExitFailure;
  }
}
