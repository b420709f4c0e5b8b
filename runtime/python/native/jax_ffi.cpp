// ptxdsl.jax's XLA FFI handlers: the four norm calls (layer/RMS norm, forward/backward) as typed
// FFI targets that XLA calls on its own stream, with its own buffers (the backward's workspace is
// one of XLA's outputs). They call the C ABI functions of the libptxdsl.so that Python's ctypes
// loaded, bound once through ptxdsl_jax_bind, so nothing here links libptxdsl.so or libcuda: one
// library, one set of kernel objects in the process.
//
// Rows are every axis but the last. Under jax.vmap (ffi_call's "expand_dims") a batched weight or
// weight gradient comes with a leading axis of G copies: the rows then split into G groups of
// consecutive rows, one launch each, each with its own weight and its own dw/db.
#include <cuda.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "c_api.hpp"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

ptxdsl::native::CApi api;

ffi::Error invalid(const std::string& message) {
  return ffi::Error(ffi::ErrorCode::kInvalidArgument, "ptxdsl.jax: " + message);
}

// A failed call as an XLA error carrying the library's status and message.
ffi::Error status_error(std::int32_t status) {
  if (status == PTXDSL_SUCCESS) return ffi::Error::Success();
  return ffi::Error(ffi::ErrorCode::kInternal,
                    "[ptxdsl status " + std::to_string(status) + "] " + api.last_error());
}

bool dtype_code(ffi::DataType t, std::int32_t& code) {
  switch (t) {
    case ffi::DataType::F32:
      code = PTXDSL_F32;
      return true;
    case ffi::DataType::F16:
      code = PTXDSL_F16;
      return true;
    case ffi::DataType::BF16:
      code = PTXDSL_BF16;
      return true;
    default:
      return false;
  }
}

// An absent weight, bias, residual or gradient comes as an empty buffer.
bool present(const ffi::AnyBuffer& b) {
  return b.element_count() != 0;
}

// What one buffer holds: rows of the width, one float per row, or one row of the width.
enum class Shape { Rows, PerRow, Weight };

// A buffer of a call and where each group's part of it starts.
struct Operand {
  const char* name;
  Shape shape;
  char* data = nullptr;  // null: absent
  std::int64_t count = 0;
  std::int64_t element_bytes = 0;
  std::int64_t stride = 0;  // elements from one group's part to the next (0: one part, shared)

  Operand(const char* name, Shape shape, const ffi::AnyBuffer& b) : name(name), shape(shape) {
    if (!present(b)) return;
    data = static_cast<char*>(const_cast<void*>(b.untyped_data()));
    count = static_cast<std::int64_t>(b.element_count());
    element_bytes = static_cast<std::int64_t>(ffi::ByteWidth(b.element_type()));
  }
  void* at(std::int64_t group) const {
    return data == nullptr ? nullptr : data + group * stride * element_bytes;
  }
};

// A call's rows: `rows` rows of `width` in `groups` groups of consecutive rows, one launch each
// (1 group outside jax.vmap over the weight).
struct Rows {
  std::int64_t width = 0;
  std::int64_t rows = 0;
  std::int64_t groups = 1;
  std::int32_t dtype = 0;
  std::int32_t weight_dtype = 0;  // of the weight, bias and their gradients
  std::int64_t per_group() const { return rows / groups; }
};

// Reads the rows off x (its last axis) and `out` (the first result, which has every row), the
// groups off the weight-shaped buffers, and sets each operand's stride; an operand of any other
// size is an error naming it.
ffi::Error layout(const ffi::AnyBuffer& x, std::int32_t weight_dtype, const ffi::AnyBuffer& out,
                  std::span<Operand> operands, Rows& r) {
  r.weight_dtype = weight_dtype;
  const auto dims = x.dimensions();
  if (dims.size() == 0) return invalid("the input must have at least one axis, got a scalar");
  r.width = dims.back();
  if (r.width == 0) return invalid("the input's last axis must not be empty");
  r.rows = static_cast<std::int64_t>(out.element_count()) / r.width;
  if (!dtype_code(x.element_type(), r.dtype)) {
    return invalid("the input must be float32, float16 or bfloat16");
  }
  for (const Operand& op : operands) {
    if (op.shape == Shape::Weight && op.data != nullptr) {
      if (op.count % r.width != 0) {
        return invalid(std::string(op.name) + " must have the input's last axis (" +
                       std::to_string(r.width) + " elements), got " + std::to_string(op.count));
      }
      r.groups = std::max(r.groups, op.count / r.width);
    }
  }
  if (r.rows % r.groups != 0) {
    return invalid(std::to_string(r.rows) + " rows do not split into the weight's " +
                   std::to_string(r.groups) + " vmapped copies");
  }
  for (Operand& op : operands) {
    if (op.data == nullptr) continue;
    const std::int64_t full = op.shape == Shape::Rows     ? r.rows * r.width
                              : op.shape == Shape::PerRow ? r.rows
                                                          : r.groups * r.width;
    if (op.count == full) {
      op.stride = full / r.groups;
    } else if (r.groups > 1 && op.count * r.groups == full) {
      op.stride = 0;  // not vmapped: every group reads the same
    } else {
      return invalid(std::string(op.name) + " has " + std::to_string(op.count) +
                     " elements where " + std::to_string(full) +
                     " were expected (jax.vmap over only some inputs of a call is supported for "
                     "the weight, bias and their gradients only)");
    }
  }
  return ffi::Error::Success();
}

ffi::Error RmsNormForwardImpl(CUstream stream, std::int32_t device, ffi::AnyBuffer x,
                              ffi::AnyBuffer w, ffi::AnyBuffer residual,
                              ffi::Result<ffi::AnyBuffer> y, ffi::Result<ffi::AnyBuffer> h,
                              ffi::Result<ffi::AnyBuffer> rstd, float eps,
                              std::int32_t weight_dtype) {
  std::array ops{Operand("x", Shape::Rows, x),
                 Operand("weight", Shape::Weight, w),
                 Operand("residual", Shape::Rows, residual),
                 Operand("y", Shape::Rows, *y),
                 Operand("h", Shape::Rows, *h),
                 Operand("rstd", Shape::PerRow, *rstd)};
  Rows r;
  if (ffi::Error e = layout(x, weight_dtype, *y, ops, r); e.failure()) return e;
  for (std::int64_t g = 0; g < r.groups && r.per_group() > 0; ++g) {
    const std::int32_t status = api.rms_norm_forward(
        device, r.dtype, r.weight_dtype, r.per_group(), r.width, 0, ops[0].at(g), ops[1].at(g),
        ops[2].at(g), ops[4].at(g), ops[3].at(g), static_cast<float*>(ops[5].at(g)), eps, stream);
    if (status != PTXDSL_SUCCESS) return status_error(status);
  }
  return ffi::Error::Success();
}

ffi::Error LayerNormForwardImpl(CUstream stream, std::int32_t device, ffi::AnyBuffer x,
                                ffi::AnyBuffer w, ffi::AnyBuffer b, ffi::AnyBuffer residual,
                                ffi::Result<ffi::AnyBuffer> y, ffi::Result<ffi::AnyBuffer> h,
                                ffi::Result<ffi::AnyBuffer> mean, ffi::Result<ffi::AnyBuffer> rstd,
                                float eps, std::int32_t weight_dtype) {
  std::array ops{Operand("x", Shape::Rows, x),          Operand("weight", Shape::Weight, w),
                 Operand("bias", Shape::Weight, b),     Operand("residual", Shape::Rows, residual),
                 Operand("y", Shape::Rows, *y),         Operand("h", Shape::Rows, *h),
                 Operand("mean", Shape::PerRow, *mean), Operand("rstd", Shape::PerRow, *rstd)};
  Rows r;
  if (ffi::Error e = layout(x, weight_dtype, *y, ops, r); e.failure()) return e;
  for (std::int64_t g = 0; g < r.groups && r.per_group() > 0; ++g) {
    const std::int32_t status = api.layer_norm_forward(
        device, r.dtype, r.weight_dtype, r.per_group(), r.width, 0, ops[0].at(g), ops[1].at(g),
        ops[2].at(g), ops[3].at(g), ops[5].at(g), ops[4].at(g), static_cast<float*>(ops[6].at(g)),
        static_cast<float*>(ops[7].at(g)), eps, stream);
    if (status != PTXDSL_SUCCESS) return status_error(status);
  }
  return ffi::Error::Success();
}

ffi::Error RmsNormBackwardImpl(CUstream stream, std::int32_t device, ffi::AnyBuffer dy,
                               ffi::AnyBuffer dh, ffi::AnyBuffer x, ffi::AnyBuffer w,
                               ffi::AnyBuffer rstd, ffi::Result<ffi::AnyBuffer> dx,
                               ffi::Result<ffi::AnyBuffer> dw,
                               ffi::Result<ffi::AnyBuffer> workspace, std::int32_t weight_dtype) {
  std::array ops{Operand("dy", Shape::Rows, dy),       Operand("dh", Shape::Rows, dh),
                 Operand("x", Shape::Rows, x),         Operand("weight", Shape::Weight, w),
                 Operand("rstd", Shape::PerRow, rstd), Operand("dx", Shape::Rows, *dx),
                 Operand("dw", Shape::Weight, *dw)};
  Rows r;
  if (ffi::Error e = layout(x, weight_dtype, *dx, ops, r); e.failure()) return e;
  for (std::int64_t g = 0; g < r.groups && r.per_group() > 0; ++g) {
    const std::int32_t status = api.rms_norm_backward(
        device, r.dtype, r.weight_dtype, r.per_group(), r.width, 0, ops[0].at(g), ops[1].at(g),
        ops[2].at(g), ops[3].at(g), static_cast<const float*>(ops[4].at(g)), ops[5].at(g),
        ops[6].at(g), workspace->untyped_data(), workspace->size_bytes(), stream);
    if (status != PTXDSL_SUCCESS) return status_error(status);
  }
  return ffi::Error::Success();
}

ffi::Error LayerNormBackwardImpl(CUstream stream, std::int32_t device, ffi::AnyBuffer dy,
                                 ffi::AnyBuffer dh, ffi::AnyBuffer x, ffi::AnyBuffer w,
                                 ffi::AnyBuffer mean, ffi::AnyBuffer rstd,
                                 ffi::Result<ffi::AnyBuffer> dx, ffi::Result<ffi::AnyBuffer> dw,
                                 ffi::Result<ffi::AnyBuffer> db,
                                 ffi::Result<ffi::AnyBuffer> workspace, std::int32_t weight_dtype) {
  std::array ops{Operand("dy", Shape::Rows, dy),       Operand("dh", Shape::Rows, dh),
                 Operand("x", Shape::Rows, x),         Operand("weight", Shape::Weight, w),
                 Operand("mean", Shape::PerRow, mean), Operand("rstd", Shape::PerRow, rstd),
                 Operand("dx", Shape::Rows, *dx),      Operand("dw", Shape::Weight, *dw),
                 Operand("db", Shape::Weight, *db)};
  Rows r;
  if (ffi::Error e = layout(x, weight_dtype, *dx, ops, r); e.failure()) return e;
  for (std::int64_t g = 0; g < r.groups && r.per_group() > 0; ++g) {
    const std::int32_t status = api.layer_norm_backward(
        device, r.dtype, r.weight_dtype, r.per_group(), r.width, 0, ops[0].at(g), ops[1].at(g),
        ops[2].at(g), ops[3].at(g), static_cast<const float*>(ops[4].at(g)),
        static_cast<const float*>(ops[5].at(g)), ops[6].at(g), ops[7].at(g), ops[8].at(g),
        workspace->untyped_data(), workspace->size_bytes(), stream);
    if (status != PTXDSL_SUCCESS) return status_error(status);
  }
  return ffi::Error::Success();
}

}  // namespace

// Exported, C linkage: Python finds these by name (ctypes) and hands them to XLA as capsules.
#pragma GCC visibility push(default)

// addresses: ptxdsl._lib.NATIVE_FUNCTIONS' addresses; returns 0, or 1 where one is null.
extern "C" int ptxdsl_jax_bind(const std::int64_t* addresses) {
  return api.bind(addresses) ? 0 : 1;
}

// Each handler launches its kernels on XLA's stream and nothing else, so XLA may record it into a
// command buffer (a CUDA graph); Python loads each kernel's module before XLA first runs it.
XLA_FFI_DEFINE_HANDLER_SYMBOL(ptxdsl_jax_rms_norm_forward, RmsNormForwardImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<CUstream>>()
                                  .Ctx<ffi::DeviceOrdinal>()
                                  .Arg<ffi::AnyBuffer>()  // x
                                  .Arg<ffi::AnyBuffer>()  // weight, or empty
                                  .Arg<ffi::AnyBuffer>()  // residual, or empty
                                  .Ret<ffi::AnyBuffer>()  // y
                                  .Ret<ffi::AnyBuffer>()  // h = x + residual, or empty
                                  .Ret<ffi::AnyBuffer>()  // rstd (float32)
                                  .Attr<float>("eps")
                                  .Attr<std::int32_t>("weight_dtype"),
                              {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(ptxdsl_jax_layer_norm_forward, LayerNormForwardImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<CUstream>>()
                                  .Ctx<ffi::DeviceOrdinal>()
                                  .Arg<ffi::AnyBuffer>()  // x
                                  .Arg<ffi::AnyBuffer>()  // weight, or empty
                                  .Arg<ffi::AnyBuffer>()  // bias, or empty
                                  .Arg<ffi::AnyBuffer>()  // residual, or empty
                                  .Ret<ffi::AnyBuffer>()  // y
                                  .Ret<ffi::AnyBuffer>()  // h = x + residual, or empty
                                  .Ret<ffi::AnyBuffer>()  // mean (float32)
                                  .Ret<ffi::AnyBuffer>()  // rstd (float32)
                                  .Attr<float>("eps")
                                  .Attr<std::int32_t>("weight_dtype"),
                              {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(ptxdsl_jax_rms_norm_backward, RmsNormBackwardImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<CUstream>>()
                                  .Ctx<ffi::DeviceOrdinal>()
                                  .Arg<ffi::AnyBuffer>()  // dy
                                  .Arg<ffi::AnyBuffer>()  // dh, or empty
                                  .Arg<ffi::AnyBuffer>()  // x (h with a residual)
                                  .Arg<ffi::AnyBuffer>()  // weight, or empty
                                  .Arg<ffi::AnyBuffer>()  // rstd
                                  .Ret<ffi::AnyBuffer>()  // dx
                                  .Ret<ffi::AnyBuffer>()  // dw, or empty: the dx-only kernel
                                  .Ret<ffi::AnyBuffer>()  // workspace
                                  .Attr<std::int32_t>("weight_dtype"),
                              {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(ptxdsl_jax_layer_norm_backward, LayerNormBackwardImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<CUstream>>()
                                  .Ctx<ffi::DeviceOrdinal>()
                                  .Arg<ffi::AnyBuffer>()  // dy
                                  .Arg<ffi::AnyBuffer>()  // dh, or empty
                                  .Arg<ffi::AnyBuffer>()  // x (h with a residual)
                                  .Arg<ffi::AnyBuffer>()  // weight, or empty
                                  .Arg<ffi::AnyBuffer>()  // mean
                                  .Arg<ffi::AnyBuffer>()  // rstd
                                  .Ret<ffi::AnyBuffer>()  // dx
                                  .Ret<ffi::AnyBuffer>()  // dw, or empty
                                  .Ret<ffi::AnyBuffer>()  // db, or empty
                                  .Ret<ffi::AnyBuffer>()  // workspace
                                  .Attr<std::int32_t>("weight_dtype"),
                              {ffi::Traits::kCmdBufferCompatible});

#pragma GCC visibility pop
