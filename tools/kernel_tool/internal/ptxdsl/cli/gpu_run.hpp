#pragma once

#include "ptxdsl/tool/run.hpp"

namespace ptxdsl::cli {

// One launch of a built definition on GPU `ordinal`, its buffers uploaded from `run` and its
// outputs downloaded after the launch; `where` receives the device's description.
tool::Outputs run_on_gpu(const tool::BuiltKernel& built, const tool::PreparedRun& run, int ordinal,
                         std::string& where);

}  // namespace ptxdsl::cli
