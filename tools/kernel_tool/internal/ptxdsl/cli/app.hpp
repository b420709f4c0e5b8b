#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptxdsl/dsl/error.hpp"

// The command line's machinery, shared by the built-in `ptxdsl` and every tool that
// ptxdsl_add_kernel_tool builds: exit statuses, the usage error, strict number parsing, commands,
// and the main that turns every failure into one line and an exit status.
namespace ptxdsl::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // a run-time failure: no driver, JIT error, FAIL
inline constexpr int kExitUsage = 2;    // bad input on the command line

// Bad input: main prints it as one line and exits with kExitUsage.
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& message) : std::runtime_error(message) {}
};

// The libraries' errors name the value and what is allowed; about what the command line asked
// for, they are usage errors.
template <class F>
auto usage(F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

// `text` as an unsigned integer in [lo, hi]; otherwise a UsageError naming `what`.
std::uint64_t parse_uint(std::string_view what, std::string_view text, std::uint64_t lo,
                         std::uint64_t hi);

// An option given an empty value ('' on the command line) would read as not given: refused, naming
// the option and what it takes. Runs on the parsed subcommand before its command.
void refuse_empty_values(const CLI::App& sub);

// A subcommand: it registers its options on its CLI11 app; main runs the one that was parsed.
class Command {
 public:
  virtual ~Command() = default;
  virtual int run() = 0;
  // Whether the host memory it takes grows with its options (a batch, a width): only then does
  // running out of it suggest ToolInfo::memory_hint.
  virtual bool sized_by_options() const { return false; }
};

using Registered = std::pair<CLI::App*, std::unique_ptr<Command>>;

// What a tool is called and says of itself.
struct ToolInfo {
  std::string name;         // in messages: "<name>: error: ..."
  std::string description;  // the first line of --help
  std::string version;      // what --version prints
  // What the out-of-host-memory line suggests, after a command sized by its options.
  std::string memory_hint = "try a smaller problem";
};

// Parses the command line, runs the command it names and returns the exit status: usage errors
// as one line and kExitUsage, run-time failures as their message and kExitFailure, output that
// did not reach stdout as a failure. `commands` registers the tool's subcommands on its app.
int run_app(int argc, char** argv, const ToolInfo& info,
            const std::function<std::vector<Registered>(CLI::App&)>& commands);

// The most read_text_file reads: far beyond any PTX file, far below the host's memory.
inline constexpr std::size_t kMaxInputBytes = std::size_t{256} << 20;
// The whole of a file, or a runtime_error naming it and why it could not be read (a folder, a
// file longer than `max_bytes`). Files are written through OutputFile (ptxdsl/cli/output_file.hpp).
std::string read_text_file(const std::string& path, std::size_t max_bytes = kMaxInputBytes);

}  // namespace ptxdsl::cli
