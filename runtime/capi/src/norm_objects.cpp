#include "norm_objects.hpp"

#include <map>
#include <string>

#include <fmt/format.h>

#include "ptxdsl/runtime/driver.hpp"
#include "status.hpp"

namespace ptxdsl::capi {
namespace {

struct Objects {
  std::mutex mutex;
  std::map<int, std::unique_ptr<runtime::Context>> contexts;
  std::map<NormKey, std::unique_ptr<NormObject>> norms;
};

// Never destroyed: objects released at exit would call into a driver that may be gone already.
Objects& objects() {
  static Objects* all = new Objects;
  return *all;
}

const runtime::Context& context_for(Objects& all, int device) {
  if (const auto found = all.contexts.find(device); found != all.contexts.end()) {
    return *found->second;
  }
  std::string why;
  if (!runtime::driver_available(&why)) throw CallError(PTXDSL_ERROR_NO_DRIVER, why);
  const int count = runtime::device_count();
  if (device < 0 || device >= count) {
    throw CallError(PTXDSL_ERROR_INVALID_ARGUMENT,
                    fmt::format("device must be in [0, {}) (the devices the driver sees), got {}",
                                count, device));
  }
  return *all.contexts.emplace(device, std::make_unique<runtime::Context>(device)).first->second;
}

}  // namespace

NormObject& norm_object(const NormKey& key) {
  Objects& all = objects();
  const std::lock_guard<std::mutex> lock(all.mutex);
  if (const auto found = all.norms.find(key); found != all.norms.end()) return *found->second;
  // Entered only once built: a key whose context or object fails keeps no entry.
  auto made = std::make_unique<NormObject>();
  const runtime::Context& ctx = context_for(all, key.device);
  runtime::NormOptions options;
  if (key.determinism != kernels::Determinism::RunToRun) {
    options.backward_knobs = kernels::NormKnobs{};
    options.backward_knobs->deterministic = key.determinism;
  }
  made->norm = std::make_unique<runtime::Norm>(ctx, key.type, options);
  return *all.norms.emplace(key, std::move(made)).first->second;
}

HeldObjects held_objects() {
  Objects& all = objects();
  const std::lock_guard<std::mutex> lock(all.mutex);
  return {all.contexts.size(), all.norms.size()};
}

}  // namespace ptxdsl::capi
