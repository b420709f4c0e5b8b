// `ptxdsl info`: the driver and the device, or one line saying why there is no driver.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "cli.hpp"
#include "device.hpp"
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

namespace {

class InfoCommand : public Command {
 public:
  explicit InfoCommand(CLI::App& sub) {
    sub.add_option("--device", device_, "device ordinal (default 0)");
  }
  int run() override {
    const int ordinal = static_cast<int>(parse_uint("--device", device_, 0, 1023));
    require_driver_one_line();
    const int version = runtime::driver_version();
    const int count = runtime::device_count();
    if (ordinal >= count) {
      throw UsageError(fmt::format("--device must be in [0, {}], got {}", count - 1, ordinal));
    }
    const runtime::Context ctx(ordinal);
    const runtime::DeviceInfo& info = ctx.info();
    const DeviceModel& d = info.model;
    constexpr double kMiB = 1024.0 * 1024.0;
    fmt::print("driver             CUDA {}.{} ({} device{})\n", version / 1000, version % 1000 / 10,
               count, count == 1 ? "" : "s");
    fmt::print("device             {}: {}\n", info.ordinal, info.name);
    fmt::print("compute capability {}.{} (sm_{}{})\n", d.cc_major, d.cc_minor, d.cc_major,
               d.cc_minor);
    fmt::print("SMs                {}\n", d.sm_count);
    fmt::print("L2                 {:.0f} MiB ({} bytes)\n", d.l2_bytes / kMiB, d.l2_bytes);
    fmt::print("memory             {:.0f} MiB total, {:.0f} MiB free\n", info.total_memory / kMiB,
               ctx.free_memory() / kMiB);
    fmt::print("shared per block   {} KiB (opt-in)\n", d.shared_per_block_optin / 1024);
    return kExitOk;
  }

 private:
  std::string device_ = "0";
};

}  // namespace

Registered add_info(CLI::App& app) {
  auto* sub = app.add_subcommand("info", "the driver and the device");
  return {sub, std::make_unique<InfoCommand>(*sub)};
}

}  // namespace ptxdsl::cli
