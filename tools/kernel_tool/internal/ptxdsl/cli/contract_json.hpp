#pragma once

#include <string>

#include "ptxdsl/cli/json.hpp"
#include "ptxdsl/dsl/contract.hpp"
#include "ptxdsl/dsl/dim3.hpp"

namespace ptxdsl::cli {

// A launch step's fields from the kernel's contract, into the object `j` has open: entry, params
// (in the order cuLaunchKernel takes them), the block it is launched with, block_required, shared
// bytes and, where it has one, the wait for the prior grid. What `emit --json` of every tool
// shares.
void write_contract_fields(JsonWriter& j, const KernelContract& c, Dim3 block);

// The PTX itself ("ptx") or, where `emit -o` wrote it to a file, that file ("ptx_file").
void write_ptx_field(JsonWriter& j, const std::string& ptx, const std::string& ptx_file);

}  // namespace ptxdsl::cli
