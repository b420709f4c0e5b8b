// The exported functions: every argument check that needs no driver (the C layer's own, then the
// norms' check_call), then the norms' C++ API, which asks the driver about the pointers and picks
// vectors by alignment.
#include "ptxdsl/ptxdsl.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
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

static_assert(PTXDSL_NORM_OPTIONS_MIN_SIZE ==
                  offsetof(ptxdsl_norm_options, residual_in_f32) + sizeof(int32_t),
              "ptxdsl.h's least options size must end at the 0.1 fields' last");
static_assert(PTXDSL_NORM_OPTIONS_SCALE_OFFSET ==
                  offsetof(ptxdsl_norm_options, deterministic) + sizeof(const char*),
              "the scale fields must follow deterministic: a field is appended, never inserted");

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

NormKey key_arg(bool layer, std::int32_t device, std::int32_t dtype, std::int32_t weight_dtype,
                std::int64_t width, const runtime::NormModelOptions& model = {}) {
  NormKey k;
  k.device = static_cast<int>(range_arg("device", device, 0, INT32_MAX));
  k.type.layer = layer;
  k.type.dtype = dtype_arg("dtype", dtype);
  k.type.weight_dtype = dtype_arg("weight_dtype", weight_dtype);
  kernels::check_weight_dtype(k.type.dtype, k.type.weight_dtype);
  k.type.width = range_arg("width", width, 1, kernels::kMaxWidth);
  k.type.model = model;
  return k;
}

// What a caller's ptxdsl_norm_options asks for: the object's model options, the forward's
// residual dtype and its scale input. NULL: the plain norm.
struct ModelArgs {
  runtime::NormModelOptions model;
  bool residual_in_f32 = false;
  kernels::Determinism::Level determinism = kernels::Determinism::RunToRun;  // the backward's
  const float* quant_scale_in = nullptr;                                     // the forward's
};

// The backward's determinism by the knob's own names and parser ("0", "1", "portable").
kernels::Determinism::Level determinism_arg(const char* name) {
  if (name == nullptr) return kernels::Determinism::RunToRun;
  std::optional<kernels::Determinism> d;
  for (const kernels::KnobInfo& info : kernels::knob_table()) {
    if (info.name != "deterministic") continue;
    try {
      kernels::parse_knob(info, name, d);
    } catch (const Error& e) {
      throw CallError(PTXDSL_ERROR_INVALID_ARGUMENT,
                      fmt::format("options->deterministic: {}", e.what()));
    }
  }
  return d.value().level;
}

// A name parsed by the kernels' own parser (which lists the names it takes), the field named;
// NULL is `unset`, the field's default.
template <class Parse>
auto named_arg(const char* field, const char* name, Parse parse, std::string_view unset = "none") {
  try {
    return parse(name == nullptr ? unset : std::string_view(name));
  } catch (const Error& e) {
    throw CallError(PTXDSL_ERROR_INVALID_ARGUMENT, fmt::format("options->{}: {}", field, e.what()));
  }
}

ModelArgs model_arg(const ptxdsl_norm_options* options) {
  ModelArgs m;
  if (options == nullptr) return m;
  if (options->size < PTXDSL_NORM_OPTIONS_MIN_SIZE) {
    throw CallError(PTXDSL_ERROR_INVALID_ARGUMENT,
                    fmt::format("options->size must be at least {} (sizeof(ptxdsl_norm_options)), "
                                "got {}",
                                PTXDSL_NORM_OPTIONS_MIN_SIZE, options->size));
  }
  // Fields of a newer header than this library's: refused unless they are left at zero.
  const auto* bytes = reinterpret_cast<const unsigned char*>(options);
  for (std::size_t i = sizeof(ptxdsl_norm_options); i < options->size; ++i) {
    if (bytes[i] != 0) {
      throw CallError(PTXDSL_ERROR_UNSUPPORTED,
                      fmt::format("options->size is {}, and byte {} is not zero: a field this "
                                  "library ({} bytes of options) does not know (a newer "
                                  "ptxdsl.h than libptxdsl.so?)",
                                  options->size, i, sizeof(ptxdsl_norm_options)));
    }
  }
  ptxdsl_norm_options o{};
  std::memcpy(&o, options, std::min<std::size_t>(options->size, sizeof o));
  m.model.weight_offset = o.weight_offset;
  m.model.casting = named_arg("casting", o.casting, kernels::parse_casting);
  m.model.quant = named_arg("quant", o.quant, kernels::parse_quant);
  m.model.row_groups = o.row_groups == 0 ? 1 : o.row_groups;
  m.model.group_stride = o.group_stride;
  m.residual_in_f32 = o.residual_in_f32 != 0;
  m.determinism = determinism_arg(o.deterministic);
  m.model.quant_scale =
      named_arg("quant_scale", o.quant_scale, kernels::parse_quant_scale, "per-token");
  m.model.quant_scale_layout = named_arg("quant_scale_layout", o.quant_scale_layout,
                                         kernels::parse_quant_scale_layout, "row-major");
  m.quant_scale_in = o.quant_scale_in;
  return m;
}

// A pointer as the norms take it: NULL is an empty view, which picks a variant where the tensor
// is optional and is refused by run_norm where it is not.
DeviceView pointer_arg(const void* p) {
  return DeviceView(reinterpret_cast<std::uint64_t>(p));
}

// What every norm call shares: the object's key, and the call's rows and stream.
struct CallArgs {
  NormKey key;
  runtime::NormCall call;
};

// The object a direction's calls with these options go to. What the forward wrote (quant) is not
// the backward's, which shares the object of the plain output; determinism is the backward's alone.
NormKey direction_key(bool layer, runtime::Direction direction, std::int32_t device,
                      std::int32_t dtype, std::int32_t weight_dtype, std::int64_t width,
                      const ModelArgs& model) {
  if (direction == runtime::Direction::Forward) {
    return key_arg(layer, device, dtype, weight_dtype, width, model.model);
  }
  runtime::NormModelOptions m = model.model;
  m.quant = kernels::Quant::None;
  m.quant_scale = kernels::QuantScale::PerToken;
  m.quant_scale_layout = kernels::QuantScaleLayout::RowMajor;
  NormKey k = key_arg(layer, device, dtype, weight_dtype, width, m);
  k.determinism = model.determinism;
  return k;
}

CallArgs call_args(bool layer, runtime::Direction direction, std::int32_t device,
                   std::int32_t dtype, std::int32_t weight_dtype, std::int64_t batch,
                   std::int64_t width, std::int64_t stride, ptxdsl_stream stream,
                   const ModelArgs& model = {}) {
  CallArgs a;
  a.key = direction_key(layer, direction, device, dtype, weight_dtype, width, model);
  if (direction == runtime::Direction::Forward) {
    a.call.residual_in_f32 = model.residual_in_f32;
    a.call.quant_scale_in = pointer_arg(model.quant_scale_in);
  }
  a.call.direction = direction;
  a.call.batch = range_arg("batch", batch, 0, kernels::kMaxBatch);
  a.call.stride = range_arg("stride", stride, 0, UINT32_MAX);
  a.call.stream = stream;
  return a;
}

// The workspace a backward of `batch` rows takes on the object of `key` (0 for 0 rows, which
// builds nothing).
std::uint64_t workspace_bytes_of(const NormKey& key, std::int64_t batch) {
  const std::uint32_t rows = range_arg("batch", batch, 0, kernels::kMaxBatch);
  if (rows == 0) return 0;
  NormObject& o = norm_object(key);
  const std::lock_guard<std::mutex> lock(o.mutex);
  return o.norm->workspace_bytes(rows);
}

// The one way into the norms: the variant its pointers ask for (runtime::variant_of), the dtype
// pair and the model options at any batch; from batch 1 on, the pointers the call must give, its
// workspace, and everything else the call would be refused for without a device
// (runtime::check_call), so that no argument error waits for the driver to load; then its
// object's call. ptxdsl::Error is PTXDSL_ERROR_INVALID_ARGUMENT.
void run_norm(const CallArgs& a) {
  const runtime::NormCall& c = a.call;
  runtime::variant_of(a.key.type.layer, c);
  if (c.batch == 0) {
    runtime::check_call(a.key.type, c);  // the dtype pair and the model options
    return;
  }
  for (const runtime::NormTensor& t : runtime::norm_tensors(a.key.type.layer, c.direction)) {
    if (t.required && (c.*t.view).address == 0) {
      throw CallError(PTXDSL_ERROR_INVALID_ARGUMENT,
                      fmt::format("{} is NULL", kernels::arg_name(t.arg)));
    }
  }
  if (c.workspace.address == 0 && c.workspace.bytes != 0) {
    throw CallError(PTXDSL_ERROR_INVALID_ARGUMENT,
                    fmt::format("workspace is NULL but workspace_bytes is {} (NULL takes the "
                                "library's; pass 0)",
                                c.workspace.bytes));
  }
  runtime::check_call(a.key.type, c);
  NormObject& o = norm_object(a.key);
  const std::lock_guard<std::mutex> lock(o.mutex);
  o.norm->call(c);
}

// A forward's tensors (absent ones null) onto `a`, then run_norm: what every forward entry does.
void run_forward(CallArgs a, const void* x, const void* w, const void* b, const void* residual,
                 void* residual_out, void* y, float* y_scale, float* mean, float* rstd, float eps) {
  a.call.x = pointer_arg(x);
  a.call.w = pointer_arg(w);
  a.call.b = pointer_arg(b);
  a.call.residual = pointer_arg(residual);
  a.call.h = pointer_arg(residual_out);
  a.call.y = pointer_arg(y);
  a.call.y_scale = pointer_arg(y_scale);
  a.call.mean = pointer_arg(mean);
  a.call.rstd = pointer_arg(rstd);
  a.call.eps = eps;
  run_norm(a);
}

// A backward's tensors and workspace (absent ones null) onto `a`, then run_norm.
void run_backward(CallArgs a, const void* dy, const void* dh, const void* x, const void* w,
                  const float* mean, const float* rstd, void* dx, void* dw, void* db,
                  void* workspace, std::uint64_t workspace_bytes) {
  a.call.dy = pointer_arg(dy);
  a.call.dh = pointer_arg(dh);
  a.call.x = pointer_arg(x);
  a.call.w = pointer_arg(w);
  a.call.mean = pointer_arg(mean);
  a.call.rstd = pointer_arg(rstd);
  a.call.dx = pointer_arg(dx);
  a.call.dw = pointer_arg(dw);
  a.call.db = pointer_arg(db);
  a.call.workspace = {reinterpret_cast<std::uint64_t>(workspace), workspace_bytes};
  run_norm(a);
}

}  // namespace
}  // namespace ptxdsl::capi

using namespace ptxdsl::capi;
using ptxdsl::runtime::Direction;

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
    run_forward(call_args(true, Direction::Forward, device, dtype, weight_dtype, batch, width,
                          stride, stream),
                x, w, b, residual, residual_out, y, nullptr, mean, rstd, eps);
  });
}

int32_t ptxdsl_layer_norm_backward(int32_t device, int32_t dtype, int32_t weight_dtype,
                                   int64_t batch, int64_t width, int64_t stride, const void* dy,
                                   const void* dh, const void* x, const void* w, const float* mean,
                                   const float* rstd, void* dx, void* dw, void* db, void* workspace,
                                   uint64_t workspace_bytes, ptxdsl_stream stream) {
  return guarded(__func__, [&] {
    run_backward(call_args(true, Direction::Backward, device, dtype, weight_dtype, batch, width,
                           stride, stream),
                 dy, dh, x, w, mean, rstd, dx, dw, db, workspace, workspace_bytes);
  });
}

int32_t ptxdsl_rms_norm_forward(int32_t device, int32_t dtype, int32_t weight_dtype, int64_t batch,
                                int64_t width, int64_t stride, const void* x, const void* w,
                                const void* residual, void* residual_out, void* y, float* rstd,
                                float eps, ptxdsl_stream stream) {
  return guarded(__func__, [&] {
    run_forward(call_args(false, Direction::Forward, device, dtype, weight_dtype, batch, width,
                          stride, stream),
                x, w, nullptr, residual, residual_out, y, nullptr, nullptr, rstd, eps);
  });
}

int32_t ptxdsl_rms_norm_backward(int32_t device, int32_t dtype, int32_t weight_dtype, int64_t batch,
                                 int64_t width, int64_t stride, const void* dy, const void* dh,
                                 const void* x, const void* w, const float* rstd, void* dx,
                                 void* dw, void* workspace, uint64_t workspace_bytes,
                                 ptxdsl_stream stream) {
  return guarded(__func__, [&] {
    run_backward(call_args(false, Direction::Backward, device, dtype, weight_dtype, batch, width,
                           stride, stream),
                 dy, dh, x, w, nullptr, rstd, dx, dw, nullptr, workspace, workspace_bytes);
  });
}

int32_t ptxdsl_norm_workspace_bytes(int32_t device, int32_t norm, int32_t dtype,
                                    int32_t weight_dtype, int64_t width, int64_t batch,
                                    uint64_t* bytes) {
  return guarded(__func__, [&] {
    if (bytes == nullptr) throw CallError(PTXDSL_ERROR_INVALID_ARGUMENT, "bytes is NULL");
    *bytes = 0;
    *bytes = workspace_bytes_of(key_arg(norm_arg(norm), device, dtype, weight_dtype, width), batch);
  });
}

int32_t ptxdsl_norm_prepare(int32_t device, int32_t norm, int32_t dtype, int32_t weight_dtype,
                            int64_t width) {
  return guarded(__func__, [&] {
    const NormKey key = key_arg(norm_arg(norm), device, dtype, weight_dtype, width);
    NormObject& o = norm_object(key);
    const std::lock_guard<std::mutex> lock(o.mutex);
    o.norm->prepare();
  });
}

int32_t ptxdsl_norm_forward_ex(int32_t device, int32_t norm, int32_t dtype, int32_t weight_dtype,
                               int64_t batch, int64_t width, int64_t stride,
                               const ptxdsl_norm_options* options, const void* x, const void* w,
                               const void* b, const void* residual, void* residual_out, void* y,
                               float* y_scale, float* mean, float* rstd, float eps,
                               ptxdsl_stream stream) {
  return guarded(__func__, [&] {
    run_forward(call_args(norm_arg(norm), Direction::Forward, device, dtype, weight_dtype, batch,
                          width, stride, stream, model_arg(options)),
                x, w, b, residual, residual_out, y, y_scale, mean, rstd, eps);
  });
}

int32_t ptxdsl_norm_backward_ex(int32_t device, int32_t norm, int32_t dtype, int32_t weight_dtype,
                                int64_t batch, int64_t width, int64_t stride,
                                const ptxdsl_norm_options* options, const void* dy, const void* dh,
                                const void* x, const void* w, const float* mean, const float* rstd,
                                void* dx, void* dw, void* db, void* workspace,
                                uint64_t workspace_bytes, ptxdsl_stream stream) {
  return guarded(__func__, [&] {
    run_backward(call_args(norm_arg(norm), Direction::Backward, device, dtype, weight_dtype, batch,
                           width, stride, stream, model_arg(options)),
                 dy, dh, x, w, mean, rstd, dx, dw, db, workspace, workspace_bytes);
  });
}

int32_t ptxdsl_norm_workspace_bytes_ex(int32_t device, int32_t norm, int32_t dtype,
                                       int32_t weight_dtype, int64_t width, int64_t batch,
                                       const ptxdsl_norm_options* options, uint64_t* bytes) {
  return guarded(__func__, [&] {
    if (bytes == nullptr) throw CallError(PTXDSL_ERROR_INVALID_ARGUMENT, "bytes is NULL");
    *bytes = 0;
    const NormKey key = direction_key(norm_arg(norm), Direction::Backward, device, dtype,
                                      weight_dtype, width, model_arg(options));
    ptxdsl::runtime::check_call(key.type, {.direction = Direction::Backward});
    *bytes = workspace_bytes_of(key, batch);
  });
}

int32_t ptxdsl_norm_prepare_ex(int32_t device, int32_t norm, int32_t dtype, int32_t weight_dtype,
                               int64_t width, const ptxdsl_norm_options* options) {
  return guarded(__func__, [&] {
    const ModelArgs args = model_arg(options);
    const bool layer = norm_arg(norm);
    // The forward's object and the backward's, one object where they are the same.
    const NormKey forward =
        direction_key(layer, Direction::Forward, device, dtype, weight_dtype, width, args);
    const NormKey backward =
        direction_key(layer, Direction::Backward, device, dtype, weight_dtype, width, args);
    for (const NormKey& key : {forward, backward}) {
      ptxdsl::runtime::check_call(key.type, {});
      NormObject& o = norm_object(key);
      const std::lock_guard<std::mutex> lock(o.mutex);
      o.norm->prepare();
      if (forward == backward) break;
    }
  });
}

}  // extern "C"
