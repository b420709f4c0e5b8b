"""ptxdsl's norms as PyTorch operators: `layer_norm` and `rms_norm` (F.layer_norm's and
F.rms_norm's arguments), and `LayerNorm` / `RMSNorm`, drop-ins for torch.nn's modules.

Each is a torch.library custom op with an autograd formula and a fake (meta) implementation, so it
runs under torch.compile(fullgraph=True) and inside CUDA graphs. Launches go to torch's current
stream of the tensor's device; a backward's workspace comes from the library's stream-ordered pool
on that stream (legal inside a graph capture), for that call alone.
Rows are every leading dimension; the normalized dimensions are flattened into one row."""

import math
from typing import Optional

import torch
from torch import Tensor

from . import _lib, _native

_CODES = {torch.float32: _lib.F32, torch.float16: _lib.F16, torch.bfloat16: _lib.BF16}


def _code(dtype):
    return _CODES[dtype]


def _current_raw_stream():
    """torch's current stream of a device as a CUstream handle: torch's own raw accessor where it
    has one (the one its compiled code calls), else the public one; 0 is the legacy stream."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda index: torch.cuda.current_stream(index).cuda_stream


_raw_stream = _current_raw_stream()


# ---- the launches, on (rows, width) tensors whose rows are contiguous ----
# An absent weight, bias or residual is None (the kernels' variant without it); so is h without a
# residual (the custom ops return an empty tensor there, as for dw or db not asked for). Each is
# called directly in eager mode and through its custom op (below) under torch.compile.


def _ptr(t):
    return t.data_ptr() if t is not None else None


def _weight_code(x, weight):
    return _CODES[weight.dtype if weight is not None else x.dtype]


def _none(x):
    return x.new_empty(0)


def _launch(name, *args):
    status = _lib.function(name)(*args)
    if status:
        _lib.check(status)


def _layer_norm_forward_impl(x, weight, bias, residual, eps):
    rows, width = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(rows, dtype=torch.float32, device=x.device)
    rstd = torch.empty(rows, dtype=torch.float32, device=x.device)
    h = torch.empty_like(x) if residual is not None else None
    index = x.get_device()
    _launch("ptxdsl_layer_norm_forward", index, _CODES[x.dtype], _weight_code(x, weight), rows,
            width, 0, x.data_ptr(), _ptr(weight), _ptr(bias), _ptr(residual),
            h.data_ptr() if residual is not None else None, y.data_ptr(), mean.data_ptr(),
            rstd.data_ptr(), eps, _raw_stream(index))
    return y, mean, rstd, h


def _layer_norm_backward_impl(dy, dh, x, weight, mean, rstd, weight_grad, bias_grad):
    rows, width = x.shape
    dx = torch.empty_like(x)
    dw = torch.empty_like(weight) if weight_grad else _none(x)
    db = torch.empty_like(weight) if bias_grad else _none(x)
    index = x.get_device()
    _launch("ptxdsl_layer_norm_backward", index, _CODES[x.dtype], _weight_code(x, weight), rows,
            width, 0, dy.data_ptr(), _ptr(dh), x.data_ptr(), _ptr(weight), mean.data_ptr(),
            rstd.data_ptr(), dx.data_ptr(), dw.data_ptr() if weight_grad else None,
            db.data_ptr() if bias_grad else None, None, 0, _raw_stream(index))
    return dx, dw, db


def _rms_norm_forward_impl(x, weight, residual, eps):
    rows, width = x.shape
    y = torch.empty_like(x)
    rstd = torch.empty(rows, dtype=torch.float32, device=x.device)
    h = torch.empty_like(x) if residual is not None else None
    index = x.get_device()
    _launch("ptxdsl_rms_norm_forward", index, _CODES[x.dtype], _weight_code(x, weight), rows,
            width, 0, x.data_ptr(), _ptr(weight), _ptr(residual),
            h.data_ptr() if residual is not None else None, y.data_ptr(), rstd.data_ptr(), eps,
            _raw_stream(index))
    return y, rstd, h


def _rms_norm_backward_impl(dy, dh, x, weight, rstd, weight_grad):
    rows, width = x.shape
    dx = torch.empty_like(x)
    dw = torch.empty_like(weight) if weight_grad else _none(x)
    index = x.get_device()
    _launch("ptxdsl_rms_norm_backward", index, _CODES[x.dtype], _weight_code(x, weight), rows,
            width, 0, dy.data_ptr(), _ptr(dh), x.data_ptr(), _ptr(weight), rstd.data_ptr(),
            dx.data_ptr(), dw.data_ptr() if weight_grad else None, None, 0, _raw_stream(index))
    return dx, dw


# ---- autograd: one formula for each norm, for the eager Function and the custom op ----


def _h_grad(ctx, dh):
    """h's gradient from its other uses after a residual add, which the backward kernel adds into
    dx in the same pass (None where h has no other use: autograd gives no gradient or an empty
    one)."""
    if not ctx.has_residual or dh is None or dh.numel() == 0:
        return None
    return dh.contiguous()


def _layer_norm_setup(ctx, inputs, output):
    x, weight, bias, residual, _ = inputs
    _, mean, rstd, h = output
    # The backward normalizes what the forward did: h with the residual add.
    ctx.save_for_backward(h if residual is not None else x, weight, mean, rstd)
    ctx.has_bias = bias is not None
    ctx.has_residual = residual is not None
    ctx.mark_non_differentiable(mean, rstd)


def _layer_norm_grad_with(backward):
    def grad(ctx, dy, _dmean, _drstd, dh):
        x, weight, mean, rstd = ctx.saved_tensors
        # dw and db only where autograd asks for either (the kernels' dx-only variant otherwise):
        # the kernels write db beside dw for a norm with a bias.
        weight_grad = weight is not None and (ctx.needs_input_grad[1] or
                                              (ctx.has_bias and ctx.needs_input_grad[2]))
        bias_grad = weight_grad and ctx.has_bias
        if dy is None:
            dy = torch.zeros_like(x)
        dx, dw, db = backward(dy.contiguous(), _h_grad(ctx, dh), x, weight, mean, rstd,
                              weight_grad, bias_grad)
        return (dx, dw if weight_grad else None, db if bias_grad else None,
                dx if ctx.has_residual else None, None)
    return grad


def _rms_norm_setup(ctx, inputs, output):
    x, weight, residual, _ = inputs
    _, rstd, h = output
    ctx.save_for_backward(h if residual is not None else x, weight, rstd)
    ctx.has_residual = residual is not None
    ctx.mark_non_differentiable(rstd)


def _rms_norm_grad_with(backward):
    def grad(ctx, dy, _drstd, dh):
        x, weight, rstd = ctx.saved_tensors
        weight_grad = weight is not None and ctx.needs_input_grad[1]
        if dy is None:
            dy = torch.zeros_like(x)
        dx, dw = backward(dy.contiguous(), _h_grad(ctx, dh), x, weight, rstd, weight_grad)
        return dx, dw if weight_grad else None, dx if ctx.has_residual else None, None
    return grad


# ---- eager mode: autograd Functions over the launches, no dispatcher in between ----
# The classic form (forward with ctx) costs less a call than setup_context's; gradients of the
# outputs nobody uses stay None rather than tensors of zeros (a fill launch each).


class _LayerNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, residual, eps):
        ctx.set_materialize_grads(False)
        output = _layer_norm_forward_impl(x, weight, bias, residual, eps)
        _layer_norm_setup(ctx, (x, weight, bias, residual, eps), output)
        return output

    backward = staticmethod(_layer_norm_grad_with(_layer_norm_backward_impl))


class _RmsNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, residual, eps):
        ctx.set_materialize_grads(False)
        output = _rms_norm_forward_impl(x, weight, residual, eps)
        _rms_norm_setup(ctx, (x, weight, residual, eps), output)
        return output

    backward = staticmethod(_rms_norm_grad_with(_rms_norm_backward_impl))


# ---- torch.compile: custom ops with fake implementations, which graphs and Inductor see ----


@torch.library.custom_op("ptxdsl::layer_norm_forward", mutates_args=(), device_types="cuda")
def _layer_norm_forward(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor],
                        residual: Optional[Tensor],
                        eps: float) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    y, mean, rstd, h = _layer_norm_forward_impl(x, weight, bias, residual, eps)
    return y, mean, rstd, h if h is not None else _none(x)


@_layer_norm_forward.register_fake
def _(x, weight, bias, residual, eps):
    rows = x.shape[0]
    return (torch.empty_like(x), x.new_empty(rows, dtype=torch.float32),
            x.new_empty(rows, dtype=torch.float32),
            torch.empty_like(x) if residual is not None else _none(x))


@torch.library.custom_op("ptxdsl::layer_norm_backward", mutates_args=(), device_types="cuda")
def _layer_norm_backward(dy: Tensor, dh: Optional[Tensor], x: Tensor, weight: Optional[Tensor],
                         mean: Tensor, rstd: Tensor, weight_grad: bool,
                         bias_grad: bool) -> tuple[Tensor, Tensor, Tensor]:
    return _layer_norm_backward_impl(dy, dh, x, weight, mean, rstd, weight_grad, bias_grad)


@_layer_norm_backward.register_fake
def _(dy, dh, x, weight, mean, rstd, weight_grad, bias_grad):
    return (torch.empty_like(x), torch.empty_like(weight) if weight_grad else _none(x),
            torch.empty_like(weight) if bias_grad else _none(x))


_layer_norm_forward.register_autograd(_layer_norm_grad_with(_layer_norm_backward),
                                      setup_context=_layer_norm_setup)


@torch.library.custom_op("ptxdsl::rms_norm_forward", mutates_args=(), device_types="cuda")
def _rms_norm_forward(x: Tensor, weight: Optional[Tensor], residual: Optional[Tensor],
                      eps: float) -> tuple[Tensor, Tensor, Tensor]:
    y, rstd, h = _rms_norm_forward_impl(x, weight, residual, eps)
    return y, rstd, h if h is not None else _none(x)


@_rms_norm_forward.register_fake
def _(x, weight, residual, eps):
    return (torch.empty_like(x), x.new_empty(x.shape[0], dtype=torch.float32),
            torch.empty_like(x) if residual is not None else _none(x))


@torch.library.custom_op("ptxdsl::rms_norm_backward", mutates_args=(), device_types="cuda")
def _rms_norm_backward(dy: Tensor, dh: Optional[Tensor], x: Tensor, weight: Optional[Tensor],
                       rstd: Tensor, weight_grad: bool) -> tuple[Tensor, Tensor]:
    return _rms_norm_backward_impl(dy, dh, x, weight, rstd, weight_grad)


@_rms_norm_backward.register_fake
def _(dy, dh, x, weight, rstd, weight_grad):
    return torch.empty_like(x), torch.empty_like(weight) if weight_grad else _none(x)


_rms_norm_forward.register_autograd(_rms_norm_grad_with(_rms_norm_backward),
                                    setup_context=_rms_norm_setup)


def _needs_grad(*tensors):
    if not torch.is_grad_enabled():
        return False
    for t in tensors:
        if t is not None and t.requires_grad:
            return True
    return False


# ---- the model options (weight offset, casting, per-head rows) and the quantized forward ----
# Both norms through the C ABI's one extensible entry (ptxdsl_norm_forward_ex / _backward_ex). x
# is (rows, width) and contiguous, or per head (tokens, heads, width) with any strides whose
# rows do not overlap (a view of a fused QKV buffer): the kernels then read and write the rows
# where they lie, y, h and dx with x's strides over a buffer of its span.

# The quantized formats: the library's name (its --quant) and torch's dtype of the codes.
_QUANT_DTYPES = {
    "fp8-e4m3": getattr(torch, "float8_e4m3fn", None),
    "fp8-e5m2": getattr(torch, "float8_e5m2", None),
    "int8": torch.int8,
}
# The scale modes: the library's name (its --quant-scale) and the shape of the scales the kernel
# writes for rows of the shape `rows` (a tuple) and `width` elements: one a row, none (static:
# the caller's scale_in is read, and returned), or one a 128 elements of a row (DeepGEMM's
# [rows][width / 128]).
_SCALE_SHAPES = {"per-token": lambda rows, width: rows,
                 "static": lambda rows, width: (0,),
                 "group128": lambda rows, width: rows + (width // 128,)}


def _layout(x):
    """(rows, stride, row_groups, group_stride) of x as the kernels take it: rows `stride`
    apart (0: the width), or per head (one token: stride = its span)."""
    if x.dim() == 2:
        return x.shape[0], 0, 1, 0
    tokens, heads, width = x.shape
    group_stride = x.stride(1) if heads > 1 else 0
    stride = x.stride(0) if tokens > 1 else max(heads - 1, 0) * group_stride + width
    return tokens * heads, stride, heads if heads > 1 else 1, group_stride


def _empty_rows(x, dtype=None):
    """An output laid out as x's rows, of x's dtype or `dtype`."""
    dtype = x.dtype if dtype is None else dtype
    if x.dim() == 2:
        return torch.empty(x.shape, dtype=dtype, device=x.device)
    return torch.empty_strided(x.shape, x.stride(), dtype=dtype, device=x.device)


def _norm_forward_ex_impl(layer, x, weight, bias, residual, eps, weight_offset, casting,
                          quant="none", scale="per-token", scale_in=None, deterministic="1"):
    """The forward; scales None where it writes none (no quant, a static scale read from
    scale_in). `deterministic` is the backward's, passed so that the library checks it here."""
    rows, stride, groups, group_stride = _layout(x)
    width = x.shape[-1]
    quantized = quant != "none"
    y = _empty_rows(x, _QUANT_DTYPES[quant] if quantized else None)
    scales = (torch.empty(_SCALE_SHAPES[scale]((rows,), width), dtype=torch.float32,
                          device=x.device) if quantized and scale != "static" else None)
    mean = torch.empty(rows, dtype=torch.float32, device=x.device) if layer else None
    rstd = torch.empty(rows, dtype=torch.float32, device=x.device)
    h = _empty_rows(x) if residual is not None else None
    index = x.get_device()
    _launch("ptxdsl_norm_forward_ex", index, _lib.LAYER_NORM if layer else _lib.RMS_NORM,
            _CODES[x.dtype], _weight_code(x, weight), rows, width, stride,
            _lib.norm_options(weight_offset, casting, quant, groups, group_stride, deterministic,
                              scale if quantized else "per-token", "row-major", _ptr(scale_in)),
            x.data_ptr(), _ptr(weight), _ptr(bias), _ptr(residual), _ptr(h), y.data_ptr(),
            _ptr(scales),
            _ptr(mean), rstd.data_ptr(), eps, _raw_stream(index))
    return y, scales, mean, rstd, h


def _norm_backward_ex_impl(layer, dy, dh, x, weight, mean, rstd, weight_grad, bias_grad,
                           weight_offset, casting, deterministic="1"):
    rows, stride, groups, group_stride = _layout(x)
    if dy.stride() != x.stride():  # the kernels read dy (and dh) where x's rows lie
        dy = _empty_rows(x).copy_(dy)
    if dh is not None and dh.stride() != x.stride():
        dh = _empty_rows(x).copy_(dh)
    dx = _empty_rows(x)
    dw = torch.empty_like(weight) if weight_grad else _none(x)
    db = torch.empty_like(weight) if bias_grad else _none(x)
    index = x.get_device()
    _launch("ptxdsl_norm_backward_ex", index, _lib.LAYER_NORM if layer else _lib.RMS_NORM,
            _CODES[x.dtype], _weight_code(x, weight), rows, x.shape[-1], stride,
            _lib.norm_options(weight_offset, casting, "none", groups, group_stride, deterministic),
            dy.data_ptr(), _ptr(dh), x.data_ptr(), _ptr(weight), _ptr(mean), rstd.data_ptr(),
            dx.data_ptr(), dw.data_ptr() if weight_grad else None,
            db.data_ptr() if bias_grad else None, None, 0, _raw_stream(index))
    return dx, dw, db


def _norm_ex_setup(ctx, inputs, output):
    layer, x, weight, bias, residual, _, weight_offset, casting, deterministic = inputs
    _, mean, rstd, h = output
    ctx.save_for_backward(h if residual is not None else x, weight,
                          mean if layer else None, rstd)
    ctx.layer, ctx.weight_offset, ctx.casting = layer, weight_offset, casting
    ctx.deterministic = deterministic
    ctx.has_bias = bias is not None
    ctx.has_residual = residual is not None
    ctx.mark_non_differentiable(mean, rstd)


def _norm_ex_grad_with(backward):
    """The gradients of (layer, x, weight, bias, residual, eps, weight_offset, casting,
    deterministic): dx uses weight_offset + w (the kernels'), dw and db are the norm's own, summed
    as `deterministic` says."""
    def grad(ctx, dy, _dmean, _drstd, dh):
        x, weight, mean, rstd = ctx.saved_tensors
        weight_grad = weight is not None and (ctx.needs_input_grad[2] or
                                              (ctx.has_bias and ctx.needs_input_grad[3]))
        bias_grad = weight_grad and ctx.has_bias
        if dy is None:
            dy = torch.zeros_like(x)
        dx, dw, db = backward(ctx.layer, dy, _h_grad(ctx, dh), x, weight,
                              mean if ctx.layer else None, rstd, weight_grad, bias_grad,
                              ctx.weight_offset, ctx.casting, ctx.deterministic)
        return (None, dx, dw if weight_grad else None, db if bias_grad else None,
                dx if ctx.has_residual else None, None, None, None, None)
    return grad


class _NormExFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, layer, x, weight, bias, residual, eps, weight_offset, casting, deterministic):
        ctx.set_materialize_grads(False)
        y, _, mean, rstd, h = _norm_forward_ex_impl(layer, x, weight, bias, residual, eps,
                                                    weight_offset, casting,
                                                    deterministic=deterministic)
        output = (y, mean if layer else _none(x), rstd, h if h is not None else _none(x))
        _norm_ex_setup(ctx, (layer, x, weight, bias, residual, eps, weight_offset, casting,
                             deterministic), output)
        return output

    backward = staticmethod(_norm_ex_grad_with(_norm_backward_ex_impl))


def _fake_rows(x, dtype=None):
    return _empty_rows(x, dtype)


@torch.library.custom_op("ptxdsl::norm_forward_ex", mutates_args=(), device_types="cuda")
def _norm_forward_ex(layer: bool, x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor],
                     residual: Optional[Tensor], eps: float, weight_offset: float, casting: str,
                     deterministic: str) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    y, _, mean, rstd, h = _norm_forward_ex_impl(layer, x, weight, bias, residual, eps,
                                                weight_offset, casting,
                                                deterministic=deterministic)
    return (y, mean if mean is not None else _none(x), rstd, h if h is not None else _none(x))


@_norm_forward_ex.register_fake
def _(layer, x, weight, bias, residual, eps, weight_offset, casting, deterministic):
    rows = _layout(x)[0]
    return (_fake_rows(x), x.new_empty(rows if layer else 0, dtype=torch.float32),
            x.new_empty(rows, dtype=torch.float32),
            _fake_rows(x) if residual is not None else _none(x))


@torch.library.custom_op("ptxdsl::norm_backward_ex", mutates_args=(), device_types="cuda")
def _norm_backward_ex(layer: bool, dy: Tensor, dh: Optional[Tensor], x: Tensor,
                      weight: Optional[Tensor], mean: Optional[Tensor], rstd: Tensor,
                      weight_grad: bool, bias_grad: bool, weight_offset: float, casting: str,
                      deterministic: str) -> tuple[Tensor, Tensor, Tensor]:
    return _norm_backward_ex_impl(layer, dy, dh, x, weight, mean, rstd, weight_grad, bias_grad,
                                  weight_offset, casting, deterministic)


@_norm_backward_ex.register_fake
def _(layer, dy, dh, x, weight, mean, rstd, weight_grad, bias_grad, weight_offset, casting,
      deterministic):
    return (_fake_rows(x), torch.empty_like(weight) if weight_grad else _none(x),
            torch.empty_like(weight) if bias_grad else _none(x))


_norm_forward_ex.register_autograd(_norm_ex_grad_with(_norm_backward_ex),
                                   setup_context=_norm_ex_setup)


@torch.library.custom_op("ptxdsl::norm_quant", mutates_args=(), device_types="cuda")
def _norm_quant(layer: bool, x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor],
                residual: Optional[Tensor], eps: float, weight_offset: float, casting: str,
                quant: str, scale: str,
                scale_in: Optional[Tensor]) -> tuple[Tensor, Tensor, Tensor]:
    # A static scale is read, not written: the op returns an empty tensor for it (an op may not
    # return its input), and the caller the scale_in it gave.
    y, scales, _, _, h = _norm_forward_ex_impl(layer, x, weight, bias, residual, eps,
                                               weight_offset, casting, quant, scale, scale_in)
    return (y, scales if scales is not None else x.new_empty(0, dtype=torch.float32),
            h if h is not None else _none(x))


@_norm_quant.register_fake
def _(layer, x, weight, bias, residual, eps, weight_offset, casting, quant, scale, scale_in):
    rows, width = _layout(x)[0], x.shape[-1]
    return (_fake_rows(x, _QUANT_DTYPES[quant]),
            x.new_empty(_SCALE_SHAPES[scale]((rows,), width), dtype=torch.float32),
            _fake_rows(x) if residual is not None else _none(x))


def _norm_ex_rows(layer, x, w, b, r, eps, weight_offset, casting, deterministic):
    """A norm with model options, chosen as _layer_norm_rows chooses. Returns (y, h)."""
    if torch.compiler.is_compiling():
        y, _, _, h = _norm_forward_ex(layer, x, w, b, r, eps, weight_offset, casting,
                                      deterministic)
        return y, h
    if _needs_grad(x, w, b, r):
        y, _, _, h = _NormExFunction.apply(layer, x, w, b, r, eps, weight_offset, casting,
                                           deterministic)
    else:
        y, _, _, _, h = _norm_forward_ex_impl(layer, x, w, b, r, eps, weight_offset, casting,
                                              deterministic=deterministic)
    return y, h


def _layer_norm_rows(x, w, b, r, eps):
    """The layer norm of (rows, width) tensors as the context calls for it: the custom op while
    torch.compile traces; else a direct launch (with an autograd Function only where a gradient is
    asked). Returns (y, h); h is None or empty without r (the caller knows which)."""
    if torch.compiler.is_compiling():
        y, _, _, h = _layer_norm_forward(x, w, b, r, eps)
        return y, h
    if _needs_grad(x, w, b, r):
        y, _, _, h = _LayerNormFunction.apply(x, w, b, r, eps)
    else:
        y, _, _, h = _layer_norm_forward_impl(x, w, b, r, eps)
    return y, h


def _rms_norm_rows(x, w, r, eps):
    """The RMS norm of (rows, width) tensors, chosen as _layer_norm_rows chooses."""
    if torch.compiler.is_compiling():
        y, _, h = _rms_norm_forward(x, w, r, eps)
        return y, h
    if _needs_grad(x, w, r):
        y, _, h = _RmsNormFunction.apply(x, w, r, eps)
    else:
        y, _, h = _rms_norm_forward_impl(x, w, r, eps)
    return y, h


# ---- the functions users call ----


def _normalized_width(x, normalized_shape):
    if isinstance(normalized_shape, int):
        if x.dim() >= 1 and x.shape[-1] == normalized_shape:
            return normalized_shape
        shape = (normalized_shape,)
    else:
        shape = tuple(normalized_shape)
        if shape and x.dim() >= len(shape) and x.shape[-len(shape):] == shape:
            return math.prod(shape)
    raise ValueError(f"normalized_shape {list(shape)} must be the last dimensions of the "
                     f"input, whose shape is {list(x.shape)}")


def _rows(x, width, name="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_cuda:
        raise ValueError(f"{name} must be on a CUDA device, got {x.device}")
    if x.dtype not in _CODES:
        raise TypeError(f"{name} must be float32, float16 or bfloat16, got {x.dtype}")
    if x.dim() != 2 or x.shape[1] != width:
        x = x.reshape(-1, width)
    return x.contiguous()


def _param(p, x, width, name, dtype):
    """A weight or bias as one contiguous row; an absent one stays None."""
    if p is None:
        return None
    if not isinstance(p, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor or None, got {type(p).__name__}")
    if p.get_device() != x.get_device():
        raise ValueError(f"{name} must be on the input's device {x.device}, got {p.device}")
    if p.dtype != dtype:
        raise TypeError(f"{name} must have the dtype {dtype}, got {p.dtype}")
    if p.numel() != width:
        raise ValueError(f"{name} must have {width} elements (the normalized shape), got "
                         f"shape {list(p.shape)}")
    return (p if p.dim() == 1 else p.reshape(width)).contiguous()


def _weight_dtype(x, weight, bias=None):
    """The dtype of the given parameters (one for both): the input's, or float32 with 16-bit
    input."""
    dtype = weight.dtype if isinstance(weight, Tensor) else None
    if isinstance(bias, Tensor):
        if dtype is not None and bias.dtype != dtype:
            raise TypeError(f"weight and bias must have one dtype, got "
                            f"{sorted(map(str, {dtype, bias.dtype}))}")
        dtype = bias.dtype
    if dtype is None or dtype == x.dtype:
        return x.dtype
    if not (dtype == torch.float32 and x.dtype != torch.float32):
        raise TypeError(f"weight must have the input's dtype {x.dtype}, or float32 with a 16-bit "
                        f"input, got {dtype}")
    return dtype


_FLOAT32_MAX = 3.4028234663852886e38
_FINFO_EPS = {dtype: torch.finfo(dtype).eps for dtype in _CODES}


def _eps(eps):
    """eps as the kernels take it, a float32: a value that would become infinite or NaN there is
    refused here (ctypes would round it silently)."""
    try:
        value = float(eps)
    except (TypeError, ValueError):
        raise TypeError(f"eps must be a number, got {type(eps).__name__}") from None
    if not abs(value) <= _FLOAT32_MAX:
        raise ValueError(f"eps must be a finite float32, got {eps!r}")
    return value


def _residual(residual, input, width):
    """The residual add's other summand: the input's shape and dtype, or None."""
    if residual is None:
        return None
    r = _rows(residual, width, "residual")
    if residual.shape != input.shape or residual.dtype != input.dtype:
        raise ValueError(f"residual must have the input's shape {list(input.shape)} and dtype "
                         f"{input.dtype}, got {list(residual.shape)} and {residual.dtype}")
    return r


def _head_rows(x, width):
    """A (..., heads, width) input as (tokens, heads, width) where it lies, without a copy: its
    leading dimensions one token dimension, each head's row contiguous, and no two rows
    overlapping."""
    if not isinstance(x, Tensor):
        raise TypeError(f"input must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_cuda:
        raise ValueError(f"input must be on a CUDA device, got {x.device}")
    if x.dtype not in _CODES:
        raise TypeError(f"input must be float32, float16 or bfloat16, got {x.dtype}")
    if x.dim() < 2 or x.shape[-1] != width:
        raise ValueError(f"with heads=True the input is (..., heads, {width}) (normalized_shape "
                         f"its last dimension), got shape {list(x.shape)}")
    heads = x.shape[-2]
    try:
        t = x.view(-1, heads, width) if x.numel() else x.reshape(0, heads, width)
    except RuntimeError:
        raise ValueError(f"with heads=True the leading dimensions {list(x.shape[:-2])} must "
                         f"merge into one token dimension without a copy (strides "
                         f"{list(x.stride())})") from None
    if width > 1 and t.stride(2) != 1:
        raise ValueError(f"with heads=True a head's {width} elements must be contiguous, got "
                         f"strides {list(x.stride())}")
    span = (heads - 1) * t.stride(1) + width
    if (heads > 1 and t.stride(1) < width) or (t.shape[0] > 1 and t.stride(0) < span):
        raise ValueError(f"with heads=True rows may not overlap: heads at least {width} "
                         f"elements apart and tokens at least (heads - 1) * head stride + "
                         f"{width}, got strides {list(x.stride())}")
    return t


# The backward determinisms the native fast path passes on (ptxdsl_norm_options.deterministic);
# any other value takes the Python path, where the library names the values it takes.
_NATIVE_DETERMINISM = ("0", "1", "portable")


def _model(weight_offset, casting, heads, residual, deterministic="1"):
    """(weight offset, determinism, whether a call has model options beyond the determinism,
    which the native fast path and the plain entries do not take), checked. deterministic True
    and False are "1" and "0"."""
    try:
        offset = float(weight_offset)
    except (TypeError, ValueError):
        raise TypeError(f"weight_offset must be a number, got "
                        f"{type(weight_offset).__name__}") from None
    if isinstance(deterministic, bool):
        deterministic = "1" if deterministic else "0"
    if not isinstance(deterministic, str):
        raise TypeError(f"deterministic must be '0', '1' or 'portable', got "
                        f"{type(deterministic).__name__}")
    if heads and residual is not None:
        raise ValueError("heads=True takes no residual (per-head rows are QK-norm's, which adds "
                         "none)")
    modelled = offset != 0.0 or casting != "none" or bool(heads)
    return offset, deterministic, modelled


def _shaped(y, h, input):
    """y, or (y, h) after a residual add, in the input's shape."""
    if y.shape != input.shape:
        y = y.view(input.shape)
        h = h.view(input.shape) if h is not None else None
    return y if h is None else (y, h)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, residual=None, *,
               weight_offset=0.0, casting="none", heads=False, deterministic="1"):
    """torch.nn.functional.layer_norm on ptxdsl's kernels (CUDA tensors of float32, float16 or
    bfloat16; weight and bias in the input's dtype or float32, or None: no affine, or no bias).

    With `residual` (the input's shape and dtype), the fused residual add of flash-attention's
    layer_norm_fn(residual=...): h = input + residual is normalized, and (y, h) is returned; h is
    the next layer's residual. Gradients flow to input and residual through both outputs.

    weight_offset F: y = x̂·(F + weight) + bias, F + weight formed in float32 (the backward's dx
    uses it too; the weight's gradient is unchanged). casting: where y is rounded to the input's
    dtype: "none" (once, from float32), "llama" (x̂ rounded before the weight, as Hugging Face's
    Llama), "gemma" (once, as Hugging Face's Gemma). heads=True: per-head rows, the input a
    (..., heads, width) view (of a fused QKV buffer) normalized where it lies, without a copy; y
    has the input's strides (docs/python.md). deterministic: the weight's and bias's gradient
    bits, "1" (the default: the same every run on one GPU), "portable" (the same on every GPU:
    partials grouped by the batch alone, summed in a fixed order) or "0" (rows by ticket where
    faster; the bits vary within float32 rounding)."""
    offset, deterministic, modelled = _model(weight_offset, casting, heads, residual,
                                             deterministic)
    native = _native.ops()
    if (native is not None and not modelled and deterministic in _NATIVE_DETERMINISM and
            not torch.compiler.is_compiling()):
        try:
            shape = (normalized_shape,) if type(normalized_shape) is int else normalized_shape
            y, h = native.layer_norm_call(input, shape, weight, bias, eps, residual,
                                          deterministic)
            if y is not None:  # None: a case the fast path hands back to the code below
                return y if residual is None else (y, h)
        except (RuntimeError, TypeError) as e:
            _native.reraise_unless_fallback(e)
    width = _normalized_width(input, normalized_shape)
    x = _head_rows(input, width) if heads else _rows(input, width)
    dtype = _weight_dtype(x, weight, bias)
    w = _param(weight, x, width, "weight", dtype)
    b = _param(bias, x, width, "bias", dtype)
    if w is None and b is not None:
        raise ValueError("bias without weight is not supported: pass a weight of ones")
    r = _residual(residual, input, width)
    if modelled or deterministic != "1":
        y, h = _norm_ex_rows(True, x, w, b, r, _eps(eps), offset, casting, deterministic)
    else:
        y, h = _layer_norm_rows(x, w, b, r, _eps(eps))
    return _shaped(y, h if r is not None else None, input)


def rms_norm(input, normalized_shape, weight=None, eps=None, residual=None, *, weight_offset=0.0,
             casting="none", heads=False, deterministic="1"):
    """torch.nn.functional.rms_norm on ptxdsl's kernels; eps None is the input dtype's epsilon,
    as torch takes it. `residual` as for layer_norm (Liger's and vLLM's fused add + RMS norm):
    returns (y, h), h = input + residual. weight_offset, casting, heads and deterministic as for
    layer_norm: Gemma's RMS norm is weight_offset=1.0, casting="gemma"; Llama's
    casting="llama"."""
    offset, deterministic, modelled = _model(weight_offset, casting, heads, residual,
                                             deterministic)
    native = _native.ops()
    if (native is not None and not modelled and deterministic in _NATIVE_DETERMINISM and
            not torch.compiler.is_compiling()):
        try:
            shape = (normalized_shape,) if type(normalized_shape) is int else normalized_shape
            y, h = native.rms_norm_call(input, shape, weight,
                                        _FINFO_EPS[input.dtype] if eps is None else eps, residual,
                                        deterministic)
            if y is not None:  # None: a case the fast path hands back to the code below
                return y if residual is None else (y, h)
        except (RuntimeError, TypeError, KeyError, AttributeError) as e:
            _native.reraise_unless_fallback(e)
    width = _normalized_width(input, normalized_shape)
    x = _head_rows(input, width) if heads else _rows(input, width)
    w = _param(weight, x, width, "weight", _weight_dtype(x, weight))
    if eps is None:
        eps = torch.finfo(x.dtype).eps
    r = _residual(residual, input, width)
    if modelled or deterministic != "1":
        y, h = _norm_ex_rows(False, x, w, None, r, _eps(eps), offset, casting, deterministic)
    else:
        y, h = _rms_norm_rows(x, w, r, _eps(eps))
    return _shaped(y, h if r is not None else None, input)


def _scale_in(scale, scale_in, x):
    """A static scale's tensor as the kernels read it (one float32 on x's device), checked; None
    where the mode reads none."""
    if scale != "static":
        if scale_in is not None:
            raise ValueError(f"scale_in is a static scale's; scale {scale!r} computes its own "
                             f"(pass scale='static', or no scale_in)")
        return None
    if not isinstance(scale_in, Tensor):
        raise TypeError(f"scale='static' reads its scale from scale_in, a float32 tensor of one "
                        f"element on the input's device; got {type(scale_in).__name__}")
    if (scale_in.dtype != torch.float32 or scale_in.numel() != 1 or
            scale_in.device != x.device):
        raise ValueError(f"scale_in must be a float32 tensor of one element on {x.device}, got "
                         f"{scale_in.dtype} of shape {list(scale_in.shape)} on "
                         f"{scale_in.device}")
    return scale_in.detach().reshape(1).contiguous()


def _quantized(layer, input, normalized_shape, weight, bias, eps, residual, quant, scale,
               scale_in, weight_offset, casting, heads):
    """The quantized forward of either norm: (y_q, scales) or (y_q, scales, h)."""
    if _QUANT_DTYPES.get(quant) is None:
        known = [name for name, dtype in _QUANT_DTYPES.items() if dtype is not None]
        raise ValueError(f"quant must be one of {', '.join(known)} (with this torch), got "
                         f"{quant!r}")
    if scale not in _SCALE_SHAPES:
        raise ValueError(f"scale must be one of {', '.join(_SCALE_SHAPES)}, got {scale!r}")
    offset, _, _ = _model(weight_offset, casting, heads, residual)
    width = _normalized_width(input, normalized_shape)
    x = _head_rows(input, width) if heads else _rows(input, width)
    given_scale = scale_in
    scale_in = _scale_in(scale, scale_in, x)
    dtype = _weight_dtype(x, weight, bias)
    w = _param(weight, x, width, "weight", dtype)
    b = _param(bias, x, width, "bias", dtype)
    if eps is None:
        eps = torch.finfo(x.dtype).eps
    r = _residual(residual, input, width)
    # No gradient flows through a quantized output.
    x, w, b, r = (t.detach() if t is not None else None for t in (x, w, b, r))
    if torch.compiler.is_compiling():
        y, scales, h = _norm_quant(layer, x, w, b, r, _eps(eps), offset, casting, quant, scale,
                                   scale_in)
    else:
        y, scales, _, _, h = _norm_forward_ex_impl(layer, x, w, b, r, _eps(eps), offset, casting,
                                                   quant, scale, scale_in)
    if scale == "static":
        scales = given_scale  # read, not written: the caller's own
    else:
        # The scales of rows shaped as the input's leading (not normalized) dimensions.
        normalized = 1 if isinstance(normalized_shape, int) else len(tuple(normalized_shape))
        leading = tuple(input.shape[:input.dim() - normalized])
        scales = scales.view(_SCALE_SHAPES[scale](leading, width))
    if y.shape != input.shape:
        y = y.view(input.shape)
        h = h.view(input.shape) if r is not None else None
    return (y, scales) if r is None else (y, scales, h)


def rms_norm_quant(input, normalized_shape, weight=None, eps=None, residual=None, *,
                   quant="fp8-e4m3", scale="per-token", scale_in=None, weight_offset=0.0,
                   casting="none", heads=False):
    """rms_norm whose y is written quantized, the input of an FP8 or INT8 matrix product:
    returns (y_q, scales), or (y_q, scales, h) with a residual (h in the input's dtype).
    quant: "fp8-e4m3" (torch.float8_e4m3fn), "fp8-e5m2" (torch.float8_e5m2), "int8"
    (torch.int8). y_q = y / scale rounded to nearest even and saturated; y ≈ y_q · scale.
    scale "per-token": one float32 a row (scales of the input's shape without its last
    dimension), scale = max|y| / the format's largest value (448, 57344, 127), 0 for a row of
    zeros (whose y_q are 0). "static": every element divided by scale_in (a float32 tensor of one
    element on the input's device, read by the kernel, so a CUDA graph replays with its value at
    the time), which is returned as the scales. "group128": one float32 per 128 elements of a
    row, as per-token over each group (DeepGEMM's 1x128 activation scales, shape the input's
    leading dimensions + (width // 128,)); the width must be a multiple of 128. No gradient
    flows through it. weight_offset, casting and heads as for rms_norm."""
    return _quantized(False, input, normalized_shape, weight, None, eps, residual, quant, scale,
                      scale_in, weight_offset, casting, heads)


def layer_norm_quant(input, normalized_shape, weight=None, bias=None, eps=1e-5, residual=None,
                     *, quant="fp8-e4m3", scale="per-token", scale_in=None, weight_offset=0.0,
                     casting="none", heads=False):
    """layer_norm whose y is written quantized, as rms_norm_quant."""
    return _quantized(True, input, normalized_shape, weight, bias, eps, residual, quant, scale,
                      scale_in, weight_offset, casting, heads)


class _ModelOptions:
    """The model options of a module (keyword arguments; no parameters or buffers, so the state
    dict is torch.nn's). With a weight offset F the weight starts at 1 − F, so that the weights
    applied, F + weight, start at ones as torch.nn's do (Gemma's zeros for F = 1)."""

    _MODEL_DEFAULTS = {"weight_offset": 0.0, "casting": "none", "heads": False,
                       "deterministic": "1"}

    def _set_model(self, weight_offset, casting, heads, deterministic="1"):
        self.weight_offset = float(weight_offset)
        self.casting = casting
        self.heads = bool(heads)
        self.deterministic = _model(weight_offset, casting, False, None, deterministic)[1]
        self.reset_parameters()

    def reset_parameters(self):
        super().reset_parameters()
        offset = getattr(self, "weight_offset", 0.0)
        if offset != 0.0 and getattr(self, "weight", None) is not None:
            with torch.no_grad():
                self.weight.sub_(offset)

    def _model_kwargs(self):
        return {"weight_offset": self.weight_offset, "casting": self.casting, "heads": self.heads,
                "deterministic": self.deterministic}

    def extra_repr(self):
        model = "".join(f", {k}={v!r}" for k, v in self._model_kwargs().items()
                        if v != self._MODEL_DEFAULTS[k])
        return super().extra_repr() + model


class LayerNorm(_ModelOptions, torch.nn.LayerNorm):
    """torch.nn.LayerNorm (same arguments, parameters and state dict) on ptxdsl's kernels, with
    layer_norm's weight_offset, casting, heads and deterministic as keyword arguments."""

    def __init__(self, *args, weight_offset=0.0, casting="none", heads=False, deterministic="1",
                 **kwargs):
        super().__init__(*args, **kwargs)
        self._set_model(weight_offset, casting, heads, deterministic)

    def forward(self, input):
        return layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps,
                          **self._model_kwargs())


class RMSNorm(_ModelOptions, torch.nn.RMSNorm):
    """torch.nn.RMSNorm (same arguments, parameters and state dict) on ptxdsl's kernels, with
    rms_norm's weight_offset, casting, heads and deterministic as keyword arguments: Gemma's is
    RMSNorm(width, eps, weight_offset=1.0, casting="gemma"), its weight zero-centred."""

    def __init__(self, *args, weight_offset=0.0, casting="none", heads=False, deterministic="1",
                 **kwargs):
        super().__init__(*args, **kwargs)
        self._set_model(weight_offset, casting, heads, deterministic)

    def forward(self, input):
        return rms_norm(input, self.normalized_shape, self.weight, self.eps,
                        **self._model_kwargs())


def prepare(norm, dtype, width, weight_dtype=None, device=None, *, weight_offset=0.0,
            casting="none", quant="none", scale="per-token", heads=1, head_stride=0,
            deterministic="1"):
    """JIT-compiles the kernels of norm ("layer_norm" or "rms_norm") for rows of `width` elements
    of `dtype` now, so that neither a first call nor a CUDA graph capture pays for it. The model
    options are the calls' (heads and head_stride: a per-head call's heads and their stride in
    elements; quant and scale: a quantized call's format and scale mode; deterministic: the
    backward's)."""
    codes = {"layer_norm": _lib.LAYER_NORM, "rms_norm": _lib.RMS_NORM}
    if norm not in codes:
        raise ValueError(f"norm must be 'layer_norm' or 'rms_norm', got {norm!r}")
    if dtype not in _CODES or (weight_dtype is not None and weight_dtype not in _CODES):
        raise TypeError(f"dtypes must be float32, float16 or bfloat16, got {dtype} and "
                        f"{weight_dtype}")
    index = torch.device(device if device is not None else "cuda").index
    index = torch.cuda.current_device() if index is None else index
    options = _lib.norm_options(weight_offset, casting, quant, heads,
                                head_stride if heads > 1 else 0, deterministic,
                                scale if quant != "none" else "per-token")
    _lib.call("ptxdsl_norm_prepare_ex", _lib.integer("device", index), codes[norm], _CODES[dtype],
              _CODES[weight_dtype or dtype], _lib.integer("width", width, "int64"), options)


def enable_inductor_fusion():
    """From now on, torch.compile replaces the norms a model writes with torch (F.rms_norm,
    F.layer_norm, their modules, Hugging Face's RMSNorm written out) and a residual add feeding
    them by ptxdsl's kernels, where ptxdsl supports the case (ptxdsl.inductor). Not done on import:
    it sets Inductor's pre-grad pass, a process-wide setting the user may own."""
    from . import inductor
    return inductor.enable_inductor_fusion()


def disable_inductor_fusion():
    """Undoes enable_inductor_fusion."""
    from . import inductor
    inductor.disable_inductor_fusion()
