#pragma once

#include <cstddef>
#include <string>

// A command-line binary run as a user runs it, for the tools' tests: what it printed where, and
// its exit status.
namespace ptxdsl::test {

struct Result {
  int status = -1;
  std::string out;
  std::string err;
};

std::string read_file(const std::string& path);
// A new empty file under /tmp whose name carries `tag`.
std::string temp_path(const char* tag);
// Runs `binary <args>` through the shell; `args` is shell text. `stdout_to`, when given, is the
// shell's redirection of stdout (">/dev/full", ">&-") instead of a file the result reads.
Result run_binary(const std::string& binary, const std::string& args,
                  const std::string& stdout_to = "");
std::size_t lines(const std::string& s);
// `s` in single quotes for the shell, which keeps every byte but the quote itself.
std::string shell_quote(const std::string& s);

}  // namespace ptxdsl::test
