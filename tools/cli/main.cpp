// `ptxdsl`: list, emit, check, run, bench and info for the norm kernels. Every failure ends in
// main: usage errors as one line and exit 2, run-time failures as their message and exit 1.
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <string_view>
#include <system_error>
#include <vector>

#include "cli.hpp"
#include "ptxdsl/dsl/error.hpp"

#ifndef PTXDSL_VERSION
#error "PTXDSL_VERSION must be the project's version (tools/CMakeLists.txt defines it)"
#endif

namespace {

using ptxdsl::cli::kExitFailure;
using ptxdsl::cli::kExitUsage;

// The arguments CLI11 left over, in the order they were given (CLI11 lists them backwards).
std::string extras_in_order(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> left = app.remaining(true);
  std::vector<std::string> ordered;
  for (int i = 1; i < argc; ++i) {
    const auto it = std::find(left.begin(), left.end(), argv[i]);
    if (it == left.end()) continue;
    ordered.push_back(fmt::format("'{}'", *it));
    left.erase(it);
  }
  for (const std::string& rest : left) ordered.push_back(fmt::format("'{}'", rest));
  return fmt::format("{}", fmt::join(ordered, " "));
}

int run_cli(int argc, char** argv) {
  CLI::App app{"ptxdsl: norm kernels written in a C++ PTX builder; emit, check, run, bench",
               "ptxdsl"};
  app.require_subcommand(1);
  app.fallthrough(false);
  app.set_version_flag("--version", std::string("ptxdsl ") + PTXDSL_VERSION);
  std::vector<ptxdsl::cli::Registered> commands;
  commands.push_back(ptxdsl::cli::add_list(app));
  commands.push_back(ptxdsl::cli::add_emit(app));
  commands.push_back(ptxdsl::cli::add_check(app));
  commands.push_back(ptxdsl::cli::add_run(app));
  commands.push_back(ptxdsl::cli::add_bench(app));
  commands.push_back(ptxdsl::cli::add_tune(app));
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
  } catch (const CLI::ExtrasError&) {
    throw ptxdsl::cli::UsageError(fmt::format("unexpected arguments: {} (see ptxdsl --help)",
                                              extras_in_order(app, argc, argv)));
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
    if (!sub->parsed()) continue;
    ptxdsl::cli::refuse_empty_values(*sub);
    return command->run();
  }
  throw ptxdsl::cli::UsageError(fmt::format("a command is required: {}", kCommands));
}

// Output that did not reach stdout (a full disk, a closed pipe) is a failure, not a success.
void check_stdout() {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int error = errno;
  if (flushed && !std::ferror(stdout) && std::cout) return;
  // A write that failed while the output was written set errno long ago; a closed stdout shows.
  const bool closed = fcntl(STDOUT_FILENO, F_GETFD) == -1;
  throw std::runtime_error(fmt::format("cannot write to stdout: {}", closed ? "it is closed"
                                                                     : error != 0
                                                                         ? std::strerror(error)
                                                                         : "a write failed"));
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const int status = run_cli(argc, argv);
    check_stdout();
    return status;
  } catch (const ptxdsl::cli::UsageError& e) {
    std::fprintf(stderr, "ptxdsl: %s\n", e.what());
    return kExitUsage;
  } catch (const std::system_error& e) {
    // fmt::print reports a failed write to a FILE* so; the commands print only to stdout.
    if (std::string_view(e.what()).starts_with("cannot write to file")) {
      std::fprintf(stderr, "ptxdsl: error: cannot write to stdout: %s\n",
                   e.code().message().c_str());
    } else {
      std::fprintf(stderr, "ptxdsl: error: %s\n", e.what());
    }
    return kExitFailure;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "ptxdsl: error: out of host memory (std::bad_alloc); try a smaller --batch or "
                 "--width\n");
    return kExitFailure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ptxdsl: error: %s\n", e.what());
    return kExitFailure;
  } catch (...) {
    std::fprintf(stderr, "ptxdsl: error: unknown exception\n");
    return kExitFailure;
  }
}
