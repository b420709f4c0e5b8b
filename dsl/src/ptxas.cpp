#include "ptxdsl/dsl/ptxas.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <regex>

#include "ptxdsl/dsl/error.hpp"

#ifndef PTXDSL_DEFAULT_PTXAS
#define PTXDSL_DEFAULT_PTXAS "ptxas"
#endif

namespace ptxdsl {
namespace {

// A scratch folder removed on every path out.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = fmt::format("{}/ptxdsl-ptxas-XXXXXX", base && *base ? base : "/tmp");
    if (mkdtemp(pattern.data()) == nullptr) {
      throw Error(fmt::format("cannot create a temporary folder from '{}'", pattern));
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::remove((path_ + "/in.ptx").c_str());
    std::remove((path_ + "/out.cubin").c_str());
    std::remove((path_ + "/log.txt").c_str());
    rmdir(path_.c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// A number of ptxas's report, which must fit the field it fills.
std::uint32_t report_number(const std::ssub_match& digits, std::string_view line) {
  const std::string text = digits.str();
  std::uint32_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) {
    throw Error(fmt::format("ptxas reported {} in '{}': numbers must be in [0, {}]", text, line,
                            std::numeric_limits<std::uint32_t>::max()));
  }
  return v;
}

}  // namespace

std::vector<PtxasEntry> parse_ptxas_report(std::string_view log) {
  static const std::regex kEntry(R"(Compiling entry function '([^']+)')");
  static const std::regex kFrame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex kRegs(R"(Used (\d+) registers)");
  static const std::regex kSmem(R"((\d+) bytes smem)");
  std::vector<PtxasEntry> entries;
  std::size_t start = 0;
  while (start < log.size()) {
    std::size_t end = log.find('\n', start);
    if (end == std::string_view::npos) end = log.size();
    const std::string line(log.substr(start, end - start));
    std::smatch m;
    if (std::regex_search(line, m, kEntry)) {
      entries.push_back(PtxasEntry{m[1].str()});
    } else if (!entries.empty()) {
      PtxasEntry& e = entries.back();
      if (std::regex_search(line, m, kFrame)) {
        e.stack_frame_bytes = report_number(m[1], line);
        e.spill_store_bytes = report_number(m[2], line);
        e.spill_load_bytes = report_number(m[3], line);
      }
      if (std::regex_search(line, m, kRegs)) e.registers = report_number(m[1], line);
      if (std::regex_search(line, m, kSmem)) e.shared_bytes = report_number(m[1], line);
    }
    start = end + 1;
  }
  return entries;
}

std::string ptxas_path() {
  const char* env = std::getenv("PTXDSL_PTXAS");
  if (env != nullptr && *env != '\0') return env;
  if (access(PTXDSL_DEFAULT_PTXAS, X_OK) == 0) return PTXDSL_DEFAULT_PTXAS;
  return "ptxas";
}

PtxasResult run_ptxas(std::string_view ptx, std::string_view arch) {
  TempDir dir;
  const std::string in = dir.path() + "/in.ptx";
  {
    std::ofstream f(in, std::ios::binary);
    f.write(ptx.data(), static_cast<std::streamsize>(ptx.size()));
    if (!f) throw Error(fmt::format("cannot write '{}'", in));
  }
  const std::string log = dir.path() + "/log.txt";
  const std::string command =
      fmt::format("{} -arch={} -v -o {} {} > {} 2>&1", shell_quote(ptxas_path()),
                  shell_quote(std::string(arch)), shell_quote(dir.path() + "/out.cubin"),
                  shell_quote(in), shell_quote(log));
  const int status = std::system(command.c_str());
  if (status == -1) throw Error(fmt::format("cannot start ptxas ('{}')", ptxas_path()));
  PtxasResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream f(log, std::ios::binary);
  r.log.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  if (r.exit_code == 127) {
    throw Error(
        fmt::format("ptxas not found ('{}'); set PTXDSL_PTXAS or put the CUDA toolkit on "
                    "PATH: {}",
                    ptxas_path(), r.log));
  }
  r.entries = parse_ptxas_report(r.log);
  return r;
}

}  // namespace ptxdsl
