// ptxdsl.torch's compiled fast path: the eager norms as torch operators in C++, each an autograd
// Function whose forward and backward call the C ABI directly. Python reaches them through
// torch.ops.ptxdsl_native after binding the C ABI's functions of the libptxdsl.so it loaded (one
// library, one set of kernel objects), so nothing here links libptxdsl.so or libcuda.
// torch.compile keeps using the Python custom ops; these serve eager calls, where the host time
// of Python's dispatch, ctypes and autograd.Function was the whole cost of a small call.
#ifdef PTXDSL_TORCH_PYBIND
#include <pybind11/stl.h>
#include <torch/python.h>  // first: it includes Python.h, which wants to come first
#endif
#include <ATen/ATen.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "c_api.hpp"

namespace {

using at::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

ptxdsl::native::CApi api;

// A failed call as an error Python maps back to its ptxdsl exception by the status in front.
void check(std::int32_t status) {
  if (status == PTXDSL_SUCCESS) [[likely]]
    return;
  TORCH_CHECK(false, "[ptxdsl status ", status, "] ", api.last_error());
}

std::int32_t dtype_code(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return PTXDSL_F32;
    case at::kHalf:
      return PTXDSL_F16;
    case at::kBFloat16:
      return PTXDSL_BF16;
    default:
      TORCH_CHECK_TYPE(false, "ptxdsl takes float32, float16 or bfloat16 tensors, got ", t);
  }
}

// An absent weight, bias, residual or h is undefined, except in autograd's records of a
// Function's inputs and outputs, which cannot take undefined ones: there it is an empty tensor
// (recorded()). None of these is ever empty when present.
bool present(const Tensor& t) {
  return t.defined() && t.numel() != 0;
}

Tensor absent(const Tensor& x) {
  return at::empty({0}, x.options());
}

Tensor recorded(const Tensor& t, const Tensor& x) {
  return t.defined() ? t : absent(x);
}

std::int32_t weight_code(const Tensor& x, const Tensor& w) {
  return dtype_code(present(w) ? w.scalar_type() : x.scalar_type());
}

const void* ptr(const Tensor& t) {
  return present(t) ? t.data_ptr() : nullptr;
}
void* mutable_ptr(const Tensor& t) {
  return present(t) ? t.data_ptr() : nullptr;
}

ptxdsl_stream stream_of(const Tensor& x) {
  return reinterpret_cast<ptxdsl_stream>(c10::cuda::getCurrentCUDAStream(x.get_device()).stream());
}

Tensor h_of(const Tensor& x, const Tensor& residual) {
  return present(residual) ? at::empty_like(x) : Tensor();
}

Tensor per_row(const Tensor& x) {
  return at::empty({x.size(0)}, x.options().dtype(at::kFloat));
}

// The statistics a forward without autograd writes and nothing reads (rstd, and the layer norm's
// mean): one f32 buffer a device, grown as batches need and never freed (a CUDA graph may hold
// its address), so that such a call allocates y alone. Kernels on several streams may write it at
// once: nobody reads what they write.
float* discarded_stats(const Tensor& x, std::int64_t floats) {
  static std::mutex mutex;
  static auto* held = new std::vector<std::vector<Tensor>>();  // by device; never destroyed
  const std::lock_guard<std::mutex> lock(mutex);
  const auto device = static_cast<std::size_t>(x.get_device());
  if (held->size() <= device) held->resize(device + 1);
  std::vector<Tensor>& buffers = (*held)[device];
  if (buffers.empty() || buffers.back().numel() < floats) {
    const std::int64_t grown =
        buffers.empty() ? floats : std::max(floats, 2 * buffers.back().numel());
    buffers.push_back(at::empty({grown}, x.options().dtype(at::kFloat)));
  }
  return buffers.back().data_ptr<float>();
}

// The gradient reaching h from its other uses after a residual add (undefined where none).
Tensor h_grad(bool residual, const Tensor& dh) {
  return residual && dh.defined() && dh.numel() != 0 ? dh.contiguous() : Tensor();
}

Tensor dy_of(const Tensor& dy, const Tensor& x) {
  return dy.defined() ? dy.contiguous() : at::zeros_like(x);
}

// The backward's dw/db bits (ptxdsl_norm_options.deterministic: "0", "1" or "portable"): "1" is
// the plain entry's; the others go through ptxdsl_norm_backward_ex with these options, which
// point into `deterministic` (it must outlive the call).
bool plain_determinism(const std::string& deterministic) {
  return deterministic == "1";
}
ptxdsl_norm_options determinism_options(const std::string& deterministic) {
  ptxdsl_norm_options o{};
  o.size = sizeof o;
  o.deterministic = deterministic.c_str();
  return o;
}

// A forward's outputs: the statistics as tensors for autograd (kept), or written to
// discarded_stats (undefined here).
struct RmsNormOutputs {
  Tensor y, rstd, h;
};

RmsNormOutputs rms_norm_launch(const Tensor& x, const Tensor& w, const Tensor& residual, double eps,
                               bool keep_stats) {
  RmsNormOutputs o{at::empty_like(x), keep_stats ? per_row(x) : Tensor(), h_of(x, residual)};
  float* rstd = keep_stats ? o.rstd.data_ptr<float>() : discarded_stats(x, x.size(0));
  check(api.rms_norm_forward(x.get_device(), dtype_code(x.scalar_type()), weight_code(x, w),
                             x.size(0), x.size(1), 0, x.data_ptr(), ptr(w), ptr(residual),
                             mutable_ptr(o.h), o.y.data_ptr(), rstd, static_cast<float>(eps),
                             stream_of(x)));
  return o;
}

// The layer norm's statistics: the rows' means, then their rstd, in one allocation (one fewer a
// call than two tensors).
struct LayerNormOutputs {
  Tensor y, stats, h;
};

LayerNormOutputs layer_norm_launch(const Tensor& x, const Tensor& w, const Tensor& b,
                                   const Tensor& residual, double eps, bool keep_stats) {
  const std::int64_t rows = x.size(0);
  LayerNormOutputs o{at::empty_like(x),
                     keep_stats ? at::empty({2 * rows}, x.options().dtype(at::kFloat)) : Tensor(),
                     h_of(x, residual)};
  float* mean = keep_stats ? o.stats.data_ptr<float>() : discarded_stats(x, 2 * rows);
  float* rstd = mean + rows;
  check(api.layer_norm_forward(x.get_device(), dtype_code(x.scalar_type()), weight_code(x, w),
                               x.size(0), x.size(1), 0, x.data_ptr(), ptr(w), ptr(b), ptr(residual),
                               mutable_ptr(o.h), o.y.data_ptr(), mean, rstd,
                               static_cast<float>(eps), stream_of(x)));
  return o;
}

struct RmsNorm : torch::autograd::Function<RmsNorm> {
  static variable_list forward(AutogradContext* ctx, const Tensor& x, const Tensor& w,
                               const Tensor& residual, double eps,
                               const std::string& deterministic) {
    ctx->set_materialize_grads(false);
    auto [y, rstd, h] = rms_norm_launch(x, w, residual, eps, true);
    // The backward normalizes what the forward did: h with the residual add.
    ctx->save_for_backward({present(residual) ? h : x, w, rstd});
    ctx->saved_data["residual"] = present(residual);
    ctx->saved_data["deterministic"] = deterministic;
    return {y, recorded(h, x)};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const Tensor &x = saved[0], &w = saved[1], &rstd = saved[2];
    const bool residual = ctx->saved_data["residual"].toBool();
    const bool weight_grad = present(w) && ctx->needs_input_grad(1);
    const Tensor dy = dy_of(grads[0], x);
    const Tensor dh = h_grad(residual, grads[1]);
    const std::string deterministic = ctx->saved_data["deterministic"].toStringRef();
    Tensor dx = at::empty_like(x);
    Tensor dw = weight_grad ? at::empty_like(w) : Tensor();
    if (plain_determinism(deterministic)) {
      check(api.rms_norm_backward(x.get_device(), dtype_code(x.scalar_type()), weight_code(x, w),
                                  x.size(0), x.size(1), 0, dy.data_ptr(), ptr(dh), x.data_ptr(),
                                  ptr(w), rstd.data_ptr<float>(), dx.data_ptr(), mutable_ptr(dw),
                                  nullptr, 0, stream_of(x)));
    } else {
      const ptxdsl_norm_options options = determinism_options(deterministic);
      check(api.norm_backward_ex(x.get_device(), PTXDSL_RMS_NORM, dtype_code(x.scalar_type()),
                                 weight_code(x, w), x.size(0), x.size(1), 0, &options,
                                 dy.data_ptr(), ptr(dh), x.data_ptr(), ptr(w), nullptr,
                                 rstd.data_ptr<float>(), dx.data_ptr(), mutable_ptr(dw), nullptr,
                                 nullptr, 0, stream_of(x)));
    }
    return {dx, dw, residual ? dx : Tensor(), Tensor(), Tensor()};
  }
};

struct LayerNorm : torch::autograd::Function<LayerNorm> {
  static variable_list forward(AutogradContext* ctx, const Tensor& x, const Tensor& w,
                               const Tensor& b, const Tensor& residual, double eps,
                               const std::string& deterministic) {
    ctx->set_materialize_grads(false);
    auto [y, stats, h] = layer_norm_launch(x, w, b, residual, eps, true);
    ctx->save_for_backward({present(residual) ? h : x, w, stats});
    ctx->saved_data["residual"] = present(residual);
    ctx->saved_data["bias"] = present(b);
    ctx->saved_data["deterministic"] = deterministic;
    return {y, recorded(h, x)};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const Tensor &x = saved[0], &w = saved[1];
    const float* mean = saved[2].data_ptr<float>();
    const bool residual = ctx->saved_data["residual"].toBool();
    const bool bias = ctx->saved_data["bias"].toBool();
    // dw and db only where autograd asks for either: the kernels write db beside dw.
    const bool weight_grad =
        present(w) && (ctx->needs_input_grad(1) || (bias && ctx->needs_input_grad(2)));
    const bool bias_grad = weight_grad && bias;
    const Tensor dy = dy_of(grads[0], x);
    const Tensor dh = h_grad(residual, grads[1]);
    const std::string deterministic = ctx->saved_data["deterministic"].toStringRef();
    Tensor dx = at::empty_like(x);
    Tensor dw = weight_grad ? at::empty_like(w) : Tensor();
    Tensor db = bias_grad ? at::empty_like(w) : Tensor();
    if (plain_determinism(deterministic)) {
      check(api.layer_norm_backward(x.get_device(), dtype_code(x.scalar_type()), weight_code(x, w),
                                    x.size(0), x.size(1), 0, dy.data_ptr(), ptr(dh), x.data_ptr(),
                                    ptr(w), mean, mean + x.size(0), dx.data_ptr(), mutable_ptr(dw),
                                    mutable_ptr(db), nullptr, 0, stream_of(x)));
    } else {
      const ptxdsl_norm_options options = determinism_options(deterministic);
      check(api.norm_backward_ex(x.get_device(), PTXDSL_LAYER_NORM, dtype_code(x.scalar_type()),
                                 weight_code(x, w), x.size(0), x.size(1), 0, &options,
                                 dy.data_ptr(), ptr(dh), x.data_ptr(), ptr(w), mean,
                                 mean + x.size(0), dx.data_ptr(), mutable_ptr(dw), mutable_ptr(db),
                                 nullptr, 0, stream_of(x)));
    }
    return {dx, dw, db, residual ? dx : Tensor(), Tensor(), Tensor()};
  }
};

// ---- the user-facing calls: ptxdsl.torch.rms_norm / layer_norm in one C++ call ----
// Only the common, valid case runs here; anything else (a CPU tensor, a wrong dtype or shape, an
// odd eps) is handed back to the Python path, which owns the checks and their messages, by
// returning undefined tensors (None in Python): no exception is thrown for it, which costs
// microseconds.

#define PTXDSL_FAST_REQUIRE(condition) \
  if (!(condition)) [[unlikely]]       \
  return std::nullopt

bool row_dtype(at::ScalarType t) {
  return t == at::kFloat || t == at::kHalf || t == at::kBFloat16;
}

std::optional<std::int64_t> width_of(const Tensor& input, at::IntArrayRef shape) {
  const auto dims = static_cast<std::int64_t>(shape.size());
  PTXDSL_FAST_REQUIRE(input.defined() && input.is_cuda() && row_dtype(input.scalar_type()));
  PTXDSL_FAST_REQUIRE(dims >= 1 && input.dim() >= dims);
  std::int64_t width = 1;
  for (std::int64_t i = 0; i < dims; ++i) {
    PTXDSL_FAST_REQUIRE(input.size(input.dim() - dims + i) == shape[i]);
    width *= shape[i];
  }
  PTXDSL_FAST_REQUIRE(width >= 1 && width <= PTXDSL_MAX_WIDTH);
  return width;
}

Tensor rows_of(const Tensor& t, std::int64_t width) {
  return (t.dim() == 2 && t.size(1) == width ? t : t.reshape({-1, width})).contiguous();
}

// A weight or bias as one contiguous row of the input's dtype or float32 beside 16-bit rows; an
// absent one undefined.
std::optional<Tensor> param_of(const std::optional<Tensor>& p, const Tensor& input,
                               std::int64_t width, at::ScalarType dtype) {
  if (!p.has_value() || !p->defined()) return Tensor();
  PTXDSL_FAST_REQUIRE(p->is_cuda() && p->get_device() == input.get_device());
  PTXDSL_FAST_REQUIRE(p->scalar_type() == dtype && p->numel() == width);
  return (p->dim() == 1 ? *p : p->reshape({width})).contiguous();
}

std::optional<at::ScalarType> weight_dtype(const Tensor& input, const std::optional<Tensor>& w,
                                           const std::optional<Tensor>& b) {
  const bool has_w = w.has_value() && w->defined(), has_b = b.has_value() && b->defined();
  const at::ScalarType t = has_w   ? w->scalar_type()
                           : has_b ? b->scalar_type()
                                   : input.scalar_type();
  PTXDSL_FAST_REQUIRE(t == input.scalar_type() ||
                      (t == at::kFloat && input.scalar_type() != at::kFloat));
  return t;
}

std::optional<Tensor> residual_of(const std::optional<Tensor>& r, const Tensor& input,
                                  std::int64_t width) {
  if (!r.has_value() || !r->defined()) return Tensor();
  PTXDSL_FAST_REQUIRE(r->is_cuda() && r->get_device() == input.get_device());
  PTXDSL_FAST_REQUIRE(r->scalar_type() == input.scalar_type() && r->sizes() == input.sizes());
  return rows_of(*r, width);
}

// The rows, weight, bias and residual as the kernels read them, absent ones undefined.
struct Operands {
  Tensor x, w, b, r;
};

std::optional<Operands> operands_of(const Tensor& input, at::IntArrayRef normalized_shape,
                                    const std::optional<Tensor>& weight,
                                    const std::optional<Tensor>& bias, double eps,
                                    const std::optional<Tensor>& residual) {
  PTXDSL_FAST_REQUIRE(std::isfinite(eps) && eps >= 0 && eps <= FLT_MAX);
  const std::optional<std::int64_t> width = width_of(input, normalized_shape);
  PTXDSL_FAST_REQUIRE(width.has_value());
  const std::optional<at::ScalarType> dtype = weight_dtype(input, weight, bias);
  PTXDSL_FAST_REQUIRE(dtype.has_value());
  std::optional<Tensor> w = param_of(weight, input, *width, *dtype);
  std::optional<Tensor> b = param_of(bias, input, *width, *dtype);
  std::optional<Tensor> r = residual_of(residual, input, *width);
  PTXDSL_FAST_REQUIRE(w.has_value() && b.has_value() && r.has_value());
  PTXDSL_FAST_REQUIRE(present(*w) || !present(*b));
  return Operands{rows_of(input, *width), std::move(*w), std::move(*b), std::move(*r)};
}

bool needs_grad(std::initializer_list<const Tensor*> tensors) {
  if (!at::GradMode::is_enabled()) return false;
  for (const Tensor* t : tensors) {
    if (t->requires_grad()) return true;
  }
  return false;
}

std::tuple<Tensor, Tensor> shaped(const Tensor& y, const Tensor& h, const Tensor& input) {
  if (y.sizes() == input.sizes()) return {y, h};
  return {y.view(input.sizes()), present(h) ? h.view(input.sizes()) : h};
}

std::tuple<Tensor, Tensor> rms_norm_call(const Tensor& input, at::IntArrayRef normalized_shape,
                                         const std::optional<Tensor>& weight, double eps,
                                         const std::optional<Tensor>& residual,
                                         const std::string& deterministic) {
  const std::optional<Operands> o =
      operands_of(input, normalized_shape, weight, std::nullopt, eps, residual);
  if (!o.has_value()) [[unlikely]]
    return {};
  if (needs_grad({&o->x, &o->w, &o->r})) {
    variable_list out =
        RmsNorm::apply(o->x, recorded(o->w, o->x), recorded(o->r, o->x), eps, deterministic);
    return shaped(out[0], out[1], input);
  }
  RmsNormOutputs out = rms_norm_launch(o->x, o->w, o->r, eps, false);
  return shaped(out.y, out.h, input);
}

std::tuple<Tensor, Tensor> layer_norm_call(const Tensor& input, at::IntArrayRef normalized_shape,
                                           const std::optional<Tensor>& weight,
                                           const std::optional<Tensor>& bias, double eps,
                                           const std::optional<Tensor>& residual,
                                           const std::string& deterministic) {
  const std::optional<Operands> o =
      operands_of(input, normalized_shape, weight, bias, eps, residual);
  if (!o.has_value()) [[unlikely]]
    return {};
  if (needs_grad({&o->x, &o->w, &o->b, &o->r})) {
    variable_list out = LayerNorm::apply(o->x, recorded(o->w, o->x), recorded(o->b, o->x),
                                         recorded(o->r, o->x), eps, deterministic);
    return shaped(out[0], out[1], input);
  }
  LayerNormOutputs out = layer_norm_launch(o->x, o->w, o->b, o->r, eps, false);
  return shaped(out.y, out.h, input);
}

// addresses: ptxdsl_layer_norm_forward, _backward, ptxdsl_rms_norm_forward, _backward,
// ptxdsl_last_error, ptxdsl_norm_backward_ex, as ctypes resolved them in the library Python
// loaded.
void bind(const std::vector<std::int64_t>& addresses) {
  TORCH_CHECK_VALUE(addresses.size() == ptxdsl::native::CApi::kCount, "bind takes ",
                    ptxdsl::native::CApi::kCount, " addresses, got ", addresses.size());
  TORCH_CHECK_VALUE(api.bind(addresses.data()), "bind: an address is null");
}

}  // namespace

TORCH_LIBRARY(ptxdsl_native, m) {
  m.def("bind(int[] addresses) -> ()", &bind);
  // ptxdsl.torch.rms_norm / layer_norm's arguments (eps given; deterministic: "0", "1" or
  // "portable"); (y, h), h empty without residual.
  m.def(
      "rms_norm_call(Tensor input, int[] normalized_shape, Tensor? weight, float eps, "
      "Tensor? residual, str deterministic=\"1\") -> (Tensor, Tensor)");
  m.def(
      "layer_norm_call(Tensor input, int[] normalized_shape, Tensor? weight, Tensor? bias, "
      "float eps, Tensor? residual, str deterministic=\"1\") -> (Tensor, Tensor)");
}

// Autograd's key: the Functions above build their own graph nodes.
TORCH_LIBRARY_IMPL(ptxdsl_native, CompositeImplicitAutograd, m) {
  m.impl("rms_norm_call", &rms_norm_call);
  m.impl("layer_norm_call", &layer_norm_call);
}

#ifdef PTXDSL_TORCH_PYBIND
// The same calls as a Python extension module, where Python's headers were found at build time:
// a call through pybind11 skips torch.ops' schema-driven argument parsing, most of the host time
// left of a small eager call. A library refusal comes to Python as a RuntimeError with the same
// text as through torch.ops, a fallback as (None, None).
PYBIND11_MODULE(_ptxdsl_torch, m) {
  m.def("bind", &bind);
  m.def(
      "rms_norm_call",
      [](const Tensor& input, const std::vector<std::int64_t>& shape,
         const std::optional<Tensor>& weight, double eps, const std::optional<Tensor>& residual,
         const std::string& deterministic) {
        return rms_norm_call(input, shape, weight, eps, residual, deterministic);
      },
      pybind11::arg("input"), pybind11::arg("normalized_shape"), pybind11::arg("weight"),
      pybind11::arg("eps"), pybind11::arg("residual"), pybind11::arg("deterministic") = "1");
  m.def(
      "layer_norm_call",
      [](const Tensor& input, const std::vector<std::int64_t>& shape,
         const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, double eps,
         const std::optional<Tensor>& residual, const std::string& deterministic) {
        return layer_norm_call(input, shape, weight, bias, eps, residual, deterministic);
      },
      pybind11::arg("input"), pybind11::arg("normalized_shape"), pybind11::arg("weight"),
      pybind11::arg("bias"), pybind11::arg("eps"), pybind11::arg("residual"),
      pybind11::arg("deterministic") = "1");
}
#endif
