#include "empty_kernel.hpp"

#include "ptxdsl/cli/device.hpp"
#include "ptxdsl/dsl.hpp"

namespace ptxdsl::cli {

runtime::Function empty_kernel(const runtime::Context& ctx) {
  Module m(Arch::Sm80);
  Kernel& k = m.kernel("ptxdsl_empty");
  k.require_threads(kEmptyKernelThreads);
  return load_kernel(ctx, m, "ptxdsl_empty");
}

}  // namespace ptxdsl::cli
