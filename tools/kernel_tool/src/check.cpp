// `check`: assemble with ptxas and print registers, spills, stack and shared memory per entry.
#include "ptxdsl/cli/check.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <stdexcept>

#include "ptxdsl/dsl/ptxas.hpp"

namespace ptxdsl::cli {
namespace {

// The target of a PTX module's `.target sm_90[, ...]` line, or empty when it has none.
std::string ptx_target(std::string_view ptx) {
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
  return {};
}

int assemble_and_report(const CheckedPtx& in) {
  const PtxasResult r = run_ptxas(in.ptx, in.arch);
  if (!r.ok()) {
    std::fputs(r.log.c_str(), stderr);
    throw std::runtime_error(
        fmt::format("ptxas -arch={} failed with exit status {}", in.arch, r.exit_code));
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
  }

  int run() override {
    if (ptx_file_.empty()) return assemble_and_report(source_->build());
    return assemble_and_report(from_file());
  }

 private:
  CheckedPtx from_file() const {
    std::string arch;
    for (const CLI::Option* o : sub_.get_options()) {
      if (o->count() == 0 || o->get_name() == "--ptx" || o->get_name() == "--help") continue;
      if (o->get_name() == "--arch") {
        arch = o->results().front();
        continue;
      }
      throw UsageError(
          o->get_positional()
              ? fmt::format("--ptx FILE assembles the file and takes no kernel, got '{}'",
                            o->results().front())
              : fmt::format("--ptx FILE takes no kernel options but --arch, got {}",
                            o->get_name()));
    }
    CheckedPtx in{read_text_file(ptx_file_), arch};
    if (in.arch.empty()) in.arch = ptx_target(in.ptx);
    if (in.arch.empty()) {
      throw UsageError(fmt::format(
          "'{}' has no .target line (is it PTX?): give the target as --arch, e.g. sm_90",
          ptx_file_));
    }
    return in;
  }

  const CLI::App& sub_;
  std::unique_ptr<PtxSource> source_;
  std::string ptx_file_;
};

}  // namespace

Registered add_check(CLI::App& app, std::unique_ptr<PtxSource> source) {
  auto* sub = app.add_subcommand(
      "check", "assemble a kernel (or --ptx FILE) with ptxas: registers, spills, smem");
  return {sub, std::make_unique<CheckCommand>(*sub, std::move(source))};
}

}  // namespace ptxdsl::cli
