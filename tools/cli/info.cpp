// `ptxdsl info`: the driver and the device, or one line saying why there is no driver.
#include <fmt/format.h>

#include "cli.hpp"
#include "ptxdsl/cli/device.hpp"
#include "ptxdsl/runtime/driver.hpp"

namespace ptxdsl::cli {

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
