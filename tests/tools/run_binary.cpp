#include "run_binary.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace ptxdsl::test {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string temp_path(const char* tag) {
  std::string pattern = std::string("/tmp/ptxdsl-cli-test-") + tag + "-XXXXXX";
  const int fd = mkstemp(pattern.data());
  REQUIRE(fd >= 0);
  close(fd);
  return pattern;
}

Result run_binary(const std::string& binary, const std::string& args,
                  const std::string& stdout_to) {
  const std::string out = temp_path("out"), err = temp_path("err");
  const std::string cmd =
      binary + " " + args + " " + (stdout_to.empty() ? ">" + out : stdout_to) + " 2>" + err;
  const int raw = std::system(cmd.c_str());
  Result r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  r.out = read_file(out);
  r.err = read_file(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

std::size_t lines(const std::string& s) {
  std::size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace ptxdsl::test
