#pragma once

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
  int exit_code = -1;  // 0 on success; ptxas exits 255 on any error
  std::string log;     // stderr and stdout of ptxas
  std::vector<PtxasEntry> entries;
  bool ok() const { return exit_code == 0; }
};

// `$PTXDSL_PTXAS`, else the ptxas found when ptxdsl was built, else `ptxas` on PATH.
std::string ptxas_path();
// Runs `ptxas -arch=<arch> -v` on the text; throws ptxdsl::Error only if ptxas cannot be started.
PtxasResult run_ptxas(std::string_view ptx, std::string_view arch);
// The entries of a `ptxas -v` log; throws ptxdsl::Error naming a line whose number does not fit.
std::vector<PtxasEntry> parse_ptxas_report(std::string_view log);

}  // namespace ptxdsl
