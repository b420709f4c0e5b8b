#include "ptxdsl/dsl/ptxas.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <thread>

#include "ptxdsl/dsl/error.hpp"

#ifndef PTXDSL_DEFAULT_PTXAS
#define PTXDSL_DEFAULT_PTXAS "ptxas"
#endif

extern char** environ;

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

// A line of the log as an error message shows it: whole unless it is long.
std::string quoted_line(std::string_view line) {
  constexpr std::size_t kShown = 200;
  if (line.size() <= kShown) return std::string(line);
  return fmt::format("{}... ({} characters)", line.substr(0, kShown), line.size());
}

// A number of ptxas's report, which must fit the field it fills.
std::uint32_t report_number(std::string_view digits, std::string_view line) {
  std::uint32_t v = 0;
  const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || ptr != digits.data() + digits.size()) {
    throw Error(fmt::format("ptxas reported {} in '{}': numbers must be in [0, {}]",
                            quoted_line(digits), quoted_line(line),
                            std::numeric_limits<std::uint32_t>::max()));
  }
  return v;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::size_t digits_at(std::string_view line, std::size_t at) {
  std::size_t end = at;
  while (end < line.size() && is_digit(line[end])) ++end;
  return end - at;
}

// The numbers of the leftmost place in `line` that reads `prefix`, then a number followed by
// `after[0]`, a number followed by `after[1]`, ...: a scan in one pass, where a backtracking regex
// recursed once a character and overflowed the stack on long lines. Each `after` starts with a
// character that is not a digit.
template <std::size_t N>
std::optional<std::array<std::string_view, N>> find_numbers(
    std::string_view line, std::string_view prefix, const std::array<std::string_view, N>& after) {
  const auto match_at = [&](std::size_t at) -> std::optional<std::array<std::string_view, N>> {
    std::array<std::string_view, N> numbers;
    for (std::size_t i = 0; i < N; ++i) {
      const std::size_t n = digits_at(line, at);
      if (n == 0) return std::nullopt;
      numbers[i] = line.substr(at, n);
      at += n;
      if (!line.substr(at).starts_with(after[i])) return std::nullopt;
      at += after[i].size();
    }
    return numbers;
  };
  for (std::size_t at = 0; at < line.size(); ++at) {
    if (prefix.empty()) {
      // A match starts at the first digit of a run: a later start in the run ends the same way.
      if (!is_digit(line[at]) || (at > 0 && is_digit(line[at - 1]))) continue;
      if (auto m = match_at(at)) return m;
    } else {
      at = line.find(prefix, at);
      if (at == std::string_view::npos) return std::nullopt;
      if (auto m = match_at(at + prefix.size())) return m;
    }
  }
  return std::nullopt;
}

// The name in the first "Compiling entry function 'NAME'" of the line that names one.
std::optional<std::string_view> entry_name(std::string_view line) {
  constexpr std::string_view kOpening = "Compiling entry function '";
  for (std::size_t at = line.find(kOpening); at != std::string_view::npos;
       at = line.find(kOpening, at + 1)) {
    const std::size_t first = at + kOpening.size();
    const std::size_t close = line.find('\'', first);
    if (close == std::string_view::npos) return std::nullopt;
    if (close > first) return line.substr(first, close - first);
  }
  return std::nullopt;
}

// ptxas's -arch is one word; a NUL or a space would not reach it as given.
void check_arch_text(std::string_view arch) {
  const bool word = !arch.empty() && std::all_of(arch.begin(), arch.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
  });
  if (!word) {
    std::string shown;
    for (char c : arch) {
      shown += c >= ' ' && c <= '~' ? std::string(1, c)
                                    : fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    }
    throw Error(fmt::format(
        "ptxas -arch must be a target name of letters, digits and '_' (e.g. sm_90), got '{}'",
        shown));
  }
}

// The first `cap` bytes of a file, and whether there was more.
std::string read_log(const std::string& path, std::size_t cap) {
  std::ifstream f(path, std::ios::binary);
  std::string text(cap, '\0');
  f.read(text.data(), static_cast<std::streamsize>(cap));
  text.resize(static_cast<std::size_t>(f.gcount()));
  if (text.size() == cap && f.peek() != std::ifstream::traits_type::eof()) {
    text += fmt::format("\n[ptxdsl: the log goes on past {} MiB; cut here]\n", cap >> 20);
  }
  return text;
}

struct Exit {
  int code = -1;  // the exit status, or 128 + the signal that ended it
  bool timed_out = false;
};

// Waits for `pid`, killing it once `timeout` has passed.
Exit wait_for(pid_t pid, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  Exit e;
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      throw Error(fmt::format("waiting for ptxas failed: {}", std::strerror(errno)));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      e.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
  e.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return e;
}

}  // namespace

std::vector<PtxasEntry> parse_ptxas_report(std::string_view log) {
  constexpr std::array<std::string_view, 3> kFrame = {
      " bytes stack frame, ", " bytes spill stores, ", " bytes spill loads"};
  constexpr std::array<std::string_view, 1> kRegisters = {" registers"};
  constexpr std::array<std::string_view, 1> kShared = {" bytes smem"};
  std::vector<PtxasEntry> entries;
  std::size_t start = 0;
  while (start < log.size()) {
    std::size_t end = log.find('\n', start);
    if (end == std::string_view::npos) end = log.size();
    const std::string_view line = log.substr(start, end - start);
    if (const auto name = entry_name(line)) {
      entries.push_back(PtxasEntry{std::string(*name)});
    } else if (!entries.empty()) {
      PtxasEntry& e = entries.back();
      if (const auto m = find_numbers(line, "", kFrame)) {
        e.stack_frame_bytes = report_number((*m)[0], line);
        e.spill_store_bytes = report_number((*m)[1], line);
        e.spill_load_bytes = report_number((*m)[2], line);
      }
      if (const auto m = find_numbers(line, "Used ", kRegisters)) {
        e.registers = report_number((*m)[0], line);
      }
      if (const auto m = find_numbers(line, "", kShared))
        e.shared_bytes = report_number((*m)[0], line);
    }
    start = end + 1;
  }
  return entries;
}

bool has_ptxas_report(std::string_view log) {
  return log.starts_with("ptxas info") || log.find("\nptxas info") != std::string_view::npos;
}

std::string ptxas_path() {
  const char* env = std::getenv("PTXDSL_PTXAS");
  if (env != nullptr && *env != '\0') return env;
  if (access(PTXDSL_DEFAULT_PTXAS, X_OK) == 0) return PTXDSL_DEFAULT_PTXAS;
  return "ptxas";
}

PtxasResult run_ptxas(std::string_view ptx, std::string_view arch, std::chrono::seconds timeout) {
  check_arch_text(arch);
  TempDir dir;
  const std::string in = dir.path() + "/in.ptx";
  {
    std::ofstream f(in, std::ios::binary);
    f.write(ptx.data(), static_cast<std::streamsize>(ptx.size()));
    if (!f) throw Error(fmt::format("cannot write '{}'", in));
  }
  const std::string log = dir.path() + "/log.txt";
  const std::string ptxas = ptxas_path();
  // Started without a shell: the arguments reach ptxas as they are, whatever bytes they hold.
  std::string arch_flag = fmt::format("-arch={}", arch);
  std::string verbose = "-v", output_flag = "-o", out = dir.path() + "/out.cubin";
  std::string program = ptxas, input = in;
  std::array<char*, 7> argv = {program.data(), arch_flag.data(), verbose.data(), output_flag.data(),
                               out.data(),     input.data(),     nullptr};
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const int started = posix_spawnp(&pid, ptxas.c_str(), &files, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  if (started == ENOENT) {
    throw Error(fmt::format(
        "ptxas not found ('{}'); set PTXDSL_PTXAS or put the CUDA toolkit on PATH", ptxas));
  }
  if (started != 0) {
    throw Error(fmt::format("cannot start ptxas ('{}'): {}", ptxas, std::strerror(started)));
  }
  const Exit exit = wait_for(pid, timeout);
  PtxasResult r;
  r.exit_code = exit.code;
  r.timed_out = exit.timed_out;
  constexpr std::size_t kLogCap = 16u << 20;
  r.log = read_log(log, kLogCap);
  r.entries = parse_ptxas_report(r.log);
  return r;
}

}  // namespace ptxdsl
