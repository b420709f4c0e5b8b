#pragma once

#include <string>

#include "ptxdsl/dsl/ir.hpp"
#include "ptxdsl/dsl/module.hpp"

namespace ptxdsl::detail {

// Why `in` is not PTX that ptxas takes for this target and version, or empty when it is: the
// types, modifier combinations, operand forms and target features of its row of the instruction
// table that the builder's types cannot express. Every rule here was checked against the
// toolkit's ptxas (tests/dsl/ holds one case per rule).
std::string check_instr(const Instr& in, Arch arch, PtxVersion version);

// The modifier rules the instruction table's rows name (empty: the form is legal).
std::string check_math(const Instr& in);  // the arithmetic scheme of the row's MathForms
std::string check_setp(const Instr& in);
std::string check_cvt(const Instr& in);
std::string check_cvt_pack(const Instr& in);
std::string check_cvt_pair(const Instr& in);
std::string check_memory(const Instr& in);  // ld, st
std::string check_cp_async(const Instr& in);

}  // namespace ptxdsl::detail
