#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

// Assemble PTX text with the toolkit's ptxas (a separate process) and read its resource report.
// Used by the tests and `ptxdsl check`; never by a host program at run time.
namespace ptxdsl {

struct PtxasEntry {
  std::string name;
  std::uint32_t registers = 0;
  std::uint32_t spill_store_bytes = 0;
  std::uint32_t spill_load_bytes = 0;
  std::uint32_t stack_frame_bytes = 0;
  std::uint32_t shared_bytes = 0;
};

struct PtxasResult {
  int exit_code = -1;  // 0 on success; ptxas exits 255 on any error; 128 + a signal that ended it
  bool timed_out = false;  // killed when the timeout passed
  std::string log;         // stderr and stdout of ptxas (the first 16 MiB)
  std::vector<PtxasEntry> entries;
  bool ok() const { return exit_code == 0; }
};

// `$PTXDSL_PTXAS`, else the ptxas found when ptxdsl was built, else `ptxas` on PATH.
std::string ptxas_path();
// How long run_ptxas waits by default: far longer than any of our kernels takes.
inline constexpr std::chrono::seconds kDefaultPtxasTimeout{300};
// Runs `ptxas -arch=<arch> -v` on the text (as a process of its own, without a shell), killing it
// after `timeout`; throws ptxdsl::Error only if ptxas cannot be started or `arch` is not one word.
PtxasResult run_ptxas(std::string_view ptx, std::string_view arch,
                      std::chrono::seconds timeout = kDefaultPtxasTimeout);
// The entries of a `ptxas -v` log, in time linear in its length; throws ptxdsl::Error naming a line
// whose number does not fit.
std::vector<PtxasEntry> parse_ptxas_report(std::string_view log);
// Whether a log has the `ptxas info` lines that `ptxas -v` always prints (a program that is not
// ptxas prints none).
bool has_ptxas_report(std::string_view log);

}  // namespace ptxdsl
