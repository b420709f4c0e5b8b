// The exported functions: every argument check that needs no driver (the C layer's own, then the
// norms' check_call), then the norms' C++ API, which asks the driver about the pointers and picks
// vectors by alignment.
#include "ptxdsl/ptxdsl.h"

#include <cstdint>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "norm_objects.hpp"
#include "ptxdsl/runtime/driver.hpp"
#include "status.hpp"

static_assert(PTXDSL_VERSION_MAJOR == PTXDSL_PROJECT_VERSION_MAJOR &&
                  PTXDSL_VERSION_MINOR == PTXDSL_PROJECT_VERSION_MINOR &&
                  PTXDSL_VERSION_PATCH == PTXDSL_PROJECT_VERSION_PATCH,
              "ptxdsl.h's version must be the project's (CMakeLists.txt)");
static_assert(PTXDSL_MAX_WIDTH == ptxdsl::kernels::kMaxWidth,
              "ptxdsl.h's widest row must be the kernels' (kernels/norm.hpp)");

namespace ptxdsl::capi {
namespace {

using kernels::DType;
using runtime::DeviceView;

DType dtype_arg(const char* name, std::int32_t value) {
  switch (value) {
    case PTXDSL_F32:
      return DType::F32;
    case PTXDSL_F16:
      return DType::F16;
    case PTXDSL_BF16:
      return DType::BF16;
    default:
      throw CallError(PTXDSL_ERROR_INVALID_ARGUMENT,
                      fmt::format("{} must be PTXDSL_F32 (0), PTXDSL_F16 (1) or PTXDSL_BF16 (2), "
                                  "got {}",
                                  name, value));
  }
}

bool norm_arg(std::int32_t value) {
  if (value != PTXDSL_LAYER_NORM && value != PTXDSL_RMS_NORM) {
    throw CallError(
        PTXDSL_ERROR_INVALID_ARGUMENT,
        fmt::format("norm must be PTXDSL_LAYER_NORM (0) or PTXDSL_RMS_NORM (1), got {}", value));
  }
  return value == PTXDSL_LAYER_NORM;
}

std::uint32_t range_arg(const char* name, std::int64_t value, std::int64_t lo, std::int64_t hi) {
  if (value < lo || value > hi) {
    throw CallError(PTXDSL_ERROR_INVALID_ARGUMENT,
                    fmt::format("{} must be in [{}, {}], got {}", name, lo, hi, value));
  }
  return static_cast<std::uint32_t>(value);
}

// The object's key, and the shape of one call, from the arguments every norm call shares.
struct Shape {
  NormKey key;
  std::uint32_t batch = 0, stride = 0;
};

NormKey key_arg(bool layer, std::int32_t device, std::int32_t dtype, std::int32_t weight_dtype,
                std::int64_t width) {
  NormKey k;
  k.layer = layer;
  k.device = static_cast<int>(range_arg("device", device, 0, INT32_MAX));
  k.dtype = dtype_arg("dtype", dtype);
  k.weight_dtype = dtype_arg("weight_dtype", weight_dtype);
  kernels::check_weight_dtype(k.dtype, k.weight_dtype);
  k.width = range_arg("width", width, 1, kernels::kMaxWidth);
  return k;
}

Shape shape_arg(bool layer, std::int32_t device, std::int32_t dtype, std::int32_t weight_dtype,
                std::int64_t batch, std::int64_t width, std::int64_t stride) {
  Shape s;
  s.key = key_arg(layer, device, dtype, weight_dtype, width);
  s.batch = range_arg("batch", batch, 0, kernels::kMaxBatch);
  s.stride = range_arg("stride", stride, 0, UINT32_MAX);
  return s;
}

// A pointer the kernels read or write; NULL is refused.
DeviceView pointer_arg(const char* name, const void* p) {
  if (p == nullptr) {
    throw CallError(PTXDSL_ERROR_INVALID_ARGUMENT, fmt::format("{} is NULL", name));
  }
  return DeviceView(reinterpret_cast<std::uint64_t>(p));
}
// A pointer whose NULL picks a variant (no weights, no residual add, no dw): an empty view.
DeviceView optional_arg(const void* p) {
  return DeviceView(reinterpret_cast<std::uint64_t>(p));
}

// The variant the pointers ask for (runtime::variant_of), checked at any batch: ptxdsl::Error is
// PTXDSL_ERROR_INVALID_ARGUMENT.
template <class Args>
void check_variant(const Args& a) {
  ptxdsl::runtime::variant_of(a);
}

// Everything else the call would be refused for without a device (runtime::check_call), so that
// no argument error waits for the driver to load.
template <class Args>
void check_call(const NormKey& key, const Args& a) {
  ptxdsl::runtime::check_call(key.dtype, key.weight_dtype, key.width, a);
}

runtime::Workspace workspace_arg(void* workspace, std::uint64_t bytes) {
  if (workspace == nullptr && bytes != 0) {
    throw CallError(PTXDSL_ERROR_INVALID_ARGUMENT,
                    fmt::format("workspace is NULL but workspace_bytes is {} (NULL takes the "
                                "library's; pass 0)",
                                bytes));
  }
  return {reinterpret_cast<std::uint64_t>(workspace), bytes};
}

}  // namespace
}  // namespace ptxdsl::capi

using namespace ptxdsl::capi;

extern "C" {

int32_t ptxdsl_version(void) {
  return PTXDSL_VERSION;
}

const char* ptxdsl_status_name(int32_t status) {
  switch (status) {
    case PTXDSL_SUCCESS:
      return "PTXDSL_SUCCESS";
    case PTXDSL_ERROR_INVALID_ARGUMENT:
      return "PTXDSL_ERROR_INVALID_ARGUMENT";
    case PTXDSL_ERROR_UNSUPPORTED:
      return "PTXDSL_ERROR_UNSUPPORTED";
    case PTXDSL_ERROR_NO_DRIVER:
      return "PTXDSL_ERROR_NO_DRIVER";
    case PTXDSL_ERROR_DRIVER:
      return "PTXDSL_ERROR_DRIVER";
    case PTXDSL_ERROR_OUT_OF_MEMORY:
      return "PTXDSL_ERROR_OUT_OF_MEMORY";
    case PTXDSL_ERROR_INTERNAL:
      return "PTXDSL_ERROR_INTERNAL";
    default:
      return "unknown status";
  }
}

int32_t ptxdsl_init(void) {
  return guarded(__func__, [] {
    std::string why;
    if (!ptxdsl::runtime::driver_available(&why)) throw CallError(PTXDSL_ERROR_NO_DRIVER, why);
  });
}

int32_t ptxdsl_device_count(int32_t* count) {
  return guarded(__func__, [&] {
    if (count == nullptr) throw CallError(PTXDSL_ERROR_INVALID_ARGUMENT, "count is NULL");
    *count = 0;
    std::string why;
    if (!ptxdsl::runtime::driver_available(&why)) throw CallError(PTXDSL_ERROR_NO_DRIVER, why);
    *count = ptxdsl::runtime::device_count();
  });
}

int32_t ptxdsl_layer_norm_forward(int32_t device, int32_t dtype, int32_t weight_dtype,
                                  int64_t batch, int64_t width, int64_t stride, const void* x,
                                  const void* w, const void* b, const void* residual,
                                  void* residual_out, void* y, float* mean, float* rstd, float eps,
                                  ptxdsl_stream stream) {
  return guarded(__func__, [&] {
    const Shape s = shape_arg(true, device, dtype, weight_dtype, batch, width, stride);
    ptxdsl::runtime::LayerNormForwardArgs a{.w = optional_arg(w),
                                            .b = optional_arg(b),
                                            .residual = optional_arg(residual),
                                            .h = optional_arg(residual_out),
                                            .batch = s.batch,
                                            .stride = s.stride,
                                            .eps = eps,
                                            .stream = stream};
    check_variant(a);
    if (s.batch == 0) return;
    a.x = pointer_arg("x", x);
    a.y = pointer_arg("y", y);
    a.mean = pointer_arg("mean", mean);
    a.rstd = pointer_arg("rstd", rstd);
    check_call(s.key, a);
    NormObject& o = norm_object(s.key);
    const std::lock_guard<std::mutex> lock(o.mutex);
    o.layer->forward(a);
  });
}

int32_t ptxdsl_layer_norm_backward(int32_t device, int32_t dtype, int32_t weight_dtype,
                                   int64_t batch, int64_t width, int64_t stride, const void* dy,
                                   const void* dh, const void* x, const void* w, const float* mean,
                                   const float* rstd, void* dx, void* dw, void* db, void* workspace,
                                   uint64_t workspace_bytes, ptxdsl_stream stream) {
  return guarded(__func__, [&] {
    const Shape s = shape_arg(true, device, dtype, weight_dtype, batch, width, stride);
    ptxdsl::runtime::LayerNormBackwardArgs a{.w = optional_arg(w),
                                             .dw = optional_arg(dw),
                                             .db = optional_arg(db),
                                             .dh = optional_arg(dh),
                                             .batch = s.batch,
                                             .stride = s.stride,
                                             .stream = stream};
    check_variant(a);
    if (s.batch == 0) return;
    a.dy = pointer_arg("dy", dy);
    a.x = pointer_arg("x", x);
    a.mean = pointer_arg("mean", mean);
    a.rstd = pointer_arg("rstd", rstd);
    a.dx = pointer_arg("dx", dx);
    a.workspace = workspace_arg(workspace, workspace_bytes);
    check_call(s.key, a);
    NormObject& o = norm_object(s.key);
    const std::lock_guard<std::mutex> lock(o.mutex);
    o.layer->backward(a);
  });
}

int32_t ptxdsl_rms_norm_forward(int32_t device, int32_t dtype, int32_t weight_dtype, int64_t batch,
                                int64_t width, int64_t stride, const void* x, const void* w,
                                const void* residual, void* residual_out, void* y, float* rstd,
                                float eps, ptxdsl_stream stream) {
  return guarded(__func__, [&] {
    const Shape s = shape_arg(false, device, dtype, weight_dtype, batch, width, stride);
    ptxdsl::runtime::RmsNormForwardArgs a{.w = optional_arg(w),
                                          .residual = optional_arg(residual),
                                          .h = optional_arg(residual_out),
                                          .batch = s.batch,
                                          .stride = s.stride,
                                          .eps = eps,
                                          .stream = stream};
    check_variant(a);
    if (s.batch == 0) return;
    a.x = pointer_arg("x", x);
    a.y = pointer_arg("y", y);
    a.rstd = pointer_arg("rstd", rstd);
    check_call(s.key, a);
    NormObject& o = norm_object(s.key);
    const std::lock_guard<std::mutex> lock(o.mutex);
    o.rms->forward(a);
  });
}

int32_t ptxdsl_rms_norm_backward(int32_t device, int32_t dtype, int32_t weight_dtype, int64_t batch,
                                 int64_t width, int64_t stride, const void* dy, const void* dh,
                                 const void* x, const void* w, const float* rstd, void* dx,
                                 void* dw, void* workspace, uint64_t workspace_bytes,
                                 ptxdsl_stream stream) {
  return guarded(__func__, [&] {
    const Shape s = shape_arg(false, device, dtype, weight_dtype, batch, width, stride);
    ptxdsl::runtime::RmsNormBackwardArgs a{.w = optional_arg(w),
                                           .dw = optional_arg(dw),
                                           .dh = optional_arg(dh),
                                           .batch = s.batch,
                                           .stride = s.stride,
                                           .stream = stream};
    check_variant(a);
    if (s.batch == 0) return;
    a.dy = pointer_arg("dy", dy);
    a.x = pointer_arg("x", x);
    a.rstd = pointer_arg("rstd", rstd);
    a.dx = pointer_arg("dx", dx);
    a.workspace = workspace_arg(workspace, workspace_bytes);
    check_call(s.key, a);
    NormObject& o = norm_object(s.key);
    const std::lock_guard<std::mutex> lock(o.mutex);
    o.rms->backward(a);
  });
}

int32_t ptxdsl_norm_workspace_bytes(int32_t device, int32_t norm, int32_t dtype,
                                    int32_t weight_dtype, int64_t width, int64_t batch,
                                    uint64_t* bytes) {
  return guarded(__func__, [&] {
    if (bytes == nullptr) throw CallError(PTXDSL_ERROR_INVALID_ARGUMENT, "bytes is NULL");
    *bytes = 0;
    const NormKey key = key_arg(norm_arg(norm), device, dtype, weight_dtype, width);
    const std::uint32_t rows = range_arg("batch", batch, 0, ptxdsl::kernels::kMaxBatch);
    if (rows == 0) return;
    NormObject& o = norm_object(key);
    const std::lock_guard<std::mutex> lock(o.mutex);
    *bytes = o.norm().workspace_bytes(rows);
  });
}

int32_t ptxdsl_norm_prepare(int32_t device, int32_t norm, int32_t dtype, int32_t weight_dtype,
                            int64_t width) {
  return guarded(__func__, [&] {
    const NormKey key = key_arg(norm_arg(norm), device, dtype, weight_dtype, width);
    NormObject& o = norm_object(key);
    const std::lock_guard<std::mutex> lock(o.mutex);
    o.norm().prepare();
  });
}

}  // extern "C"
