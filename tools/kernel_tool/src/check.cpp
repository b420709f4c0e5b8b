// `check`: assemble with ptxas and print registers, spills, stack and shared memory per entry.
#include "ptxdsl/cli/check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <stdexcept>

#include "ptxdsl/dsl/ptxas.hpp"

namespace ptxdsl::cli {
namespace {

// The target of a PTX module's `.target sm_90[, ...]` line, or nothing when it has none.
std::optional<std::string> ptx_target(std::string_view ptx) {
  std::size_t at = 0;
  while (at < ptx.size()) {
    const std::size_t end = std::min(ptx.find('\n', at), ptx.size());
    std::string_view line = ptx.substr(at, end - at);
    line.remove_prefix(std::min(line.find_first_not_of(" \t"), line.size()));
    if (line.starts_with(".target")) {
      line.remove_prefix(7);
      line.remove_prefix(std::min(line.find_first_not_of(" \t"), line.size()));
      return std::string(line.substr(0, line.find_first_of(" \t,\r/")));
    }
    at = end + 1;
  }
  return std::nullopt;
}

// ptxas's GPU targets: sm_ and a number, with an 'a' or 'f' for the arch- and family-specific ones.
bool is_gpu_target(std::string_view arch) {
  if (!arch.starts_with("sm_")) return false;
  std::string_view number = arch.substr(3);
  if (number.ends_with('a') || number.ends_with('f')) number.remove_suffix(1);
  return !number.empty() && number.size() <= 4 &&
         std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; });
}
constexpr std::string_view kGpuTargets = "sm_ and a number: sm_80, sm_90, sm_90a, sm_100, ...";

// Text from a file as a message shows it: bytes that are not printable ASCII as \xNN.
std::string printable(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 80)) {
    out += c >= ' ' && c <= '~' ? std::string(1, c)
                                : fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
  }
  if (text.size() > 80) out += "...";
  return out;
}

// ptxas's log on stderr, whole (NULs too) and ending its line, before the line that says why.
void print_log(std::string_view log) {
  std::fwrite(log.data(), 1, log.size(), stderr);
  if (!log.empty() && log.back() != '\n') std::fputc('\n', stderr);
}

int assemble_and_report(const CheckedPtx& in, std::chrono::seconds timeout) {
  const PtxasResult r = run_ptxas(in.ptx, in.arch, timeout);
  if (r.timed_out) {
    print_log(r.log);
    throw std::runtime_error(
        fmt::format("ptxas -arch={} did not finish within {} s and was killed (--ptxas-timeout)",
                    in.arch, timeout.count()));
  }
  if (!r.ok()) {
    // A well-formed target that this ptxas does not know is the command line's, as a bad --arch.
    if (r.log.find("is not defined for option 'gpu-name'") != std::string::npos) {
      throw UsageError(fmt::format("ptxas ({}) knows no target '{}'", ptxas_path(), in.arch));
    }
    print_log(r.log);
    throw std::runtime_error(
        fmt::format("ptxas -arch={} failed with exit status {}", in.arch, r.exit_code));
  }
  if (!has_ptxas_report(r.log)) {
    throw std::runtime_error(fmt::format(
        "'{}' exited 0 but printed no ptxas report (no 'ptxas info' line): is it ptxas?",
        ptxas_path()));
  }
  fmt::print("ptxas {} {}: OK\n", ptxas_path(), in.arch);
  fmt::print("{:<40} {:>9} {:>12} {:>11} {:>11} {:>10}\n", "entry", "registers", "spill stores",
             "spill loads", "stack bytes", "smem bytes");
  for (const PtxasEntry& e : r.entries) {
    fmt::print("{:<40} {:>9} {:>12} {:>11} {:>11} {:>10}\n", e.name, e.registers,
               e.spill_store_bytes, e.spill_load_bytes, e.stack_frame_bytes, e.shared_bytes);
  }
  return kExitOk;
}

class CheckCommand : public Command {
 public:
  CheckCommand(CLI::App& sub, std::unique_ptr<PtxSource> source)
      : sub_(sub), source_(std::move(source)) {
    source_->add_options(sub);
    sub.add_option("--ptx", ptx_file_, "assemble this PTX file instead of a kernel");
    sub.add_option("--ptxas-timeout", timeout_,
                   fmt::format("seconds ptxas may take before it is killed, 1 to {} (default {})",
                               kMaxTimeout, kDefaultPtxasTimeout.count()));
  }

  int run() override {
    const std::chrono::seconds timeout(parse_uint("--ptxas-timeout", timeout_, 1, kMaxTimeout));
    if (ptx_file_.empty()) return assemble_and_report(source_->build(), timeout);
    return assemble_and_report(from_file(), timeout);
  }

 private:
  CheckedPtx from_file() const {
    std::string arch;
    for (const CLI::Option* o : sub_.get_options()) {
      const std::string name = o->get_name();
      if (o->count() == 0 || name == "--ptx" || name == "--ptxas-timeout" || name == "--help")
        continue;
      if (name == "--arch") {
        arch = o->results().front();
        if (!is_gpu_target(arch)) {
          throw UsageError(fmt::format("--arch must be a GPU target, {}; got '{}'", kGpuTargets,
                                       printable(arch)));
        }
        continue;
      }
      throw UsageError(
          o->get_positional()
              ? fmt::format("--ptx FILE assembles the file and takes no kernel, got '{}'",
                            o->results().front())
              : fmt::format("--ptx FILE takes no kernel options but --arch, got {}", name));
    }
    CheckedPtx in{read_text_file(ptx_file_), arch};
    if (!in.arch.empty()) return in;
    const std::optional<std::string> target = ptx_target(in.ptx);
    if (!target) {
      throw UsageError(fmt::format(
          "'{}' has no .target line (is it PTX?): give the target as --arch, e.g. sm_90",
          ptx_file_));
    }
    if (!is_gpu_target(*target)) {
      throw UsageError(
          fmt::format("'{}' has .target '{}', which is not a GPU target ({}): give one as --arch",
                      ptx_file_, printable(*target), kGpuTargets));
    }
    in.arch = *target;
    return in;
  }

  static constexpr std::uint64_t kMaxTimeout = 86400;
  const CLI::App& sub_;
  std::unique_ptr<PtxSource> source_;
  std::string ptx_file_;
  std::string timeout_ = std::to_string(kDefaultPtxasTimeout.count());
};

}  // namespace

Registered add_check(CLI::App& app, std::unique_ptr<PtxSource> source) {
  auto* sub = app.add_subcommand(
      "check", "assemble a kernel (or --ptx FILE) with ptxas: registers, spills, smem");
  return {sub, std::make_unique<CheckCommand>(*sub, std::move(source))};
}

}  // namespace ptxdsl::cli
