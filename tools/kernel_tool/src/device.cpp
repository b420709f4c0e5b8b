#include "ptxdsl/cli/device.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "ptxdsl/runtime/driver.hpp"

namespace ptxdsl::cli {

void require_driver_one_line() {
  std::string why;
  if (runtime::driver_available(&why)) return;
  std::replace(why.begin(), why.end(), '\n', ' ');
  throw std::runtime_error(why.empty() ? std::string("no CUDA driver found") : why);
}

std::string describe_device(const runtime::DeviceInfo& info) {
  return fmt::format("{} (sm_{}{}, {} SMs)", info.name, info.model.cc_major, info.model.cc_minor,
                     info.model.sm_count);
}

runtime::Function load_kernel(const runtime::Context& ctx, Module& m, const std::string& entry) {
  return runtime::Function(runtime::ModuleCache::global().get(ctx, m.emit(), entry),
                           m.find(entry).contract());
}

}  // namespace ptxdsl::cli
