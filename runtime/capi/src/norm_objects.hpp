#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "ptxdsl/kernels/norm.hpp"
#include "ptxdsl/runtime/context.hpp"
#include "ptxdsl/runtime/norms.hpp"

// The norm objects behind the C calls: one per (device, norm, dtype, weight dtype, width, model
// options, determinism), built
// on first use and kept until the process exits, shared by every thread.
namespace ptxdsl::capi {

struct NormKey {
  int device = 0;
  runtime::NormType type;
  // The backward's dw/db determinism (kernels::Determinism): its own kernels where not the default.
  kernels::Determinism::Level determinism = kernels::Determinism::RunToRun;
  auto operator<=>(const NormKey&) const = default;
};

// One object; `mutex` serializes the calls on it (it holds one launch-argument block).
struct NormObject {
  std::mutex mutex;
  std::unique_ptr<runtime::Norm> norm;
};

// The object for `key`, built (with the device's primary context) if it is new. Throws CallError
// for a device the driver does not have, NO_DRIVER without a driver, and whatever the object's
// constructor throws (a width or dtype pair the kernels refuse).
NormObject& norm_object(const NormKey& key);

// How many contexts and norm objects are kept (for tests: a failed build keeps nothing).
struct HeldObjects {
  std::size_t contexts = 0;
  std::size_t norms = 0;
};
HeldObjects held_objects();

}  // namespace ptxdsl::capi
