#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

// A command-line binary run as a user runs it, for the tools' tests: what it printed where, and
// its exit status.
namespace ptxdsl::test {

struct Result {
  int status = -1;  // the exit status, or 128 + the signal that ended it
  std::string out;
  std::string err;
  int signal = 0;                   // the signal that ended it, or 0
  std::uint64_t max_rss_bytes = 0;  // its peak resident memory (run_argv only)
};

std::string read_file(const std::string& path);
// A new empty file under /tmp whose name carries `tag`.
std::string temp_path(const char* tag);
// A binary the tests run: $env_name where set and not empty (a test binary carried to another
// machine), else `built`, the build's own.
std::string binary_path(const char* env_name, const char* built);
// Runs `binary <args>` through the shell; `args` is shell text. `stdout_to`, when given, is the
// shell's redirection of stdout (">/dev/full", ">&-") instead of a file the result reads.
Result run_binary(const std::string& binary, const std::string& args,
                  const std::string& stdout_to = "");
std::size_t lines(const std::string& s);

// What a child started by start_argv gets besides its arguments.
struct ChildSetup {
  std::optional<std::uint64_t> address_space;  // RLIMIT_AS, bytes
  std::optional<std::uint64_t> file_size;      // RLIMIT_FSIZE, bytes
  std::vector<std::string> environment;        // NAME=VALUE, added to ours
  std::string cgroup_procs;                    // a cgroup's cgroup.procs the child joins first
};
// A binary started without a shell, its stdout and stderr going to files.
struct Child {
  pid_t pid = -1;
  std::string out_path, err_path;
};
Child start_argv(const std::string& binary, const std::vector<std::string>& args,
                 const ChildSetup& setup = {});
// Waits for it; what it printed, its status and its peak resident memory.
Result finish(Child& child);
Result run_argv(const std::string& binary, const std::vector<std::string>& args,
                const ChildSetup& setup = {});
// `s` in single quotes for the shell, which keeps every byte but the quote itself.
std::string shell_quote(const std::string& s);

}  // namespace ptxdsl::test
