#pragma once

#include <string>
#include <string_view>

#include "ptxdsl/dsl/ir.hpp"

namespace ptxdsl {

class Kernel;

// PTX spellings, table-driven: the one place that turns IR into text.
std::string mnemonic(const Instr& in);                       // "ld.global.nc.v4.f32"
std::string register_name(RegId id);                         // "%f12"
std::string_view special_register_name(Special s);           // "%cluster_ctarank"
std::string format_instr(const Kernel& k, const Instr& in);  // one line, no indent, with `;`
std::string emit_kernel(const Kernel& k);                    // shared decls + `.entry` ... `}`

}  // namespace ptxdsl
