#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "ptxdsl/kernels/norm.hpp"

// The tuning knobs as the command line spells them, in one table: `--help`, `list`, the parser,
// `emit --json` and `bench --suite`'s refusal all read it.
namespace ptxdsl::cli {

struct KnobFlag {
  std::string_view flag;   // "--threads-per-row"
  std::string_view json;   // "threads_per_row", in `emit --json`
  std::string_view value;  // "N", "0|1|2": how `list` shows the value
  std::optional<std::uint32_t> kernels::NormKnobs::*member;
  bool zero_allowed;      // counts and switches take 0
  std::string_view help;  // one line
};

std::span<const KnobFlag> knob_flags();

}  // namespace ptxdsl::cli
