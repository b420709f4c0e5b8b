#include "run_binary.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
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

Child start_argv(const std::string& binary, const std::vector<std::string>& args,
                 const ChildSetup& setup) {
  Child c;
  c.out_path = temp_path("out");
  c.err_path = temp_path("err");
  std::vector<std::string> all = {binary};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  c.pid = fork();
  REQUIRE(c.pid >= 0);
  if (c.pid == 0) {
    const int out = open(c.out_path.c_str(), O_WRONLY | O_TRUNC);
    const int err = open(c.err_path.c_str(), O_WRONLY | O_TRUNC);
    if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(125);
    const auto limit = [](int resource, std::uint64_t bytes) {
      const rlimit l{bytes, bytes};
      if (setrlimit(resource, &l) != 0) _exit(125);
    };
    if (setup.address_space) limit(RLIMIT_AS, *setup.address_space);
    if (setup.file_size) limit(RLIMIT_FSIZE, *setup.file_size);
    for (const std::string& e : setup.environment) putenv(const_cast<char*>(e.c_str()));
    if (!setup.cgroup_procs.empty()) {
      const std::string pid = std::to_string(getpid());
      const int procs = open(setup.cgroup_procs.c_str(), O_WRONLY);
      if (procs < 0 || write(procs, pid.data(), pid.size()) < 0) _exit(125);
      close(procs);
    }
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  return c;
}

Result finish(Child& c) {
  int raw = 0;
  rusage usage{};
  while (wait4(c.pid, &raw, 0, &usage) < 0) {
    REQUIRE(errno == EINTR);
  }
  Result r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  r.signal = WIFSIGNALED(raw) ? WTERMSIG(raw) : 0;
  r.max_rss_bytes = static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
  r.out = read_file(c.out_path);
  r.err = read_file(c.err_path);
  std::remove(c.out_path.c_str());
  std::remove(c.err_path.c_str());
  c.pid = -1;
  return r;
}

Result run_argv(const std::string& binary, const std::vector<std::string>& args,
                const ChildSetup& setup) {
  Child c = start_argv(binary, args, setup);
  return finish(c);
}

std::string binary_path(const char* env_name, const char* built) {
  const char* env = std::getenv(env_name);
  return env != nullptr && *env != '\0' ? env : built;
}

}  // namespace ptxdsl::test
