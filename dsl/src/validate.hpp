#pragma once

#include <string>

#include "ptxdsl/dsl/ir.hpp"
#include "ptxdsl/dsl/module.hpp"

namespace ptxdsl::detail {

// Why `in` is not PTX that ptxas takes for this target and version, or empty when it is: the
// modifier combinations, operand forms and target features the builder's types cannot express.
// Every rule here was checked against the toolkit's ptxas (tests/dsl/ holds one case per rule).
std::string check_instr(const Instr& in, Arch arch, PtxVersion version);

}  // namespace ptxdsl::detail
