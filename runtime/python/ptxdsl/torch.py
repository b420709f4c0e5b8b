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

from . import _lib

_CODES = {torch.float32: _lib.F32, torch.float16: _lib.F16, torch.bfloat16: _lib.BF16}


def _code(dtype):
    return _CODES[dtype]


def _stream(t):
    return torch.cuda.current_stream(t.device).cuda_stream or None


# ---- the operators, on (rows, width) tensors whose rows are contiguous ----
# An absent weight, bias or residual is None (the kernels' variant without it); an output the
# variant does not write (h without a residual, dw or db not asked for) is an empty tensor.


def _ptr(t):
    return t.data_ptr() if t is not None else None


def _weight_code(x, weight):
    return _code(weight.dtype if weight is not None else x.dtype)


def _none(x):
    return x.new_empty(0)


def _h_grad(ctx, dh):
    """h's gradient from its other uses after a residual add, which the backward kernel adds into
    dx in the same pass (None where h has no other use: autograd gives no gradient or an empty
    one)."""
    if not ctx.has_residual or dh is None or dh.numel() == 0:
        return None
    return dh.contiguous()


@torch.library.custom_op("ptxdsl::layer_norm_forward", mutates_args=(), device_types="cuda")
def _layer_norm_forward(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor],
                        residual: Optional[Tensor],
                        eps: float) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    rows, width = x.shape
    y = torch.empty_like(x)
    mean = x.new_empty(rows, dtype=torch.float32)
    rstd = x.new_empty(rows, dtype=torch.float32)
    h = torch.empty_like(x) if residual is not None else _none(x)
    _lib.call("ptxdsl_layer_norm_forward", x.device.index, _code(x.dtype), _weight_code(x, weight),
              rows, width, 0, x.data_ptr(), _ptr(weight), _ptr(bias), _ptr(residual),
              h.data_ptr() if residual is not None else None, y.data_ptr(), mean.data_ptr(),
              rstd.data_ptr(), eps, _stream(x))
    return y, mean, rstd, h


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
    rows, width = x.shape
    dx = torch.empty_like(x)
    dw = torch.empty_like(weight) if weight_grad else _none(x)
    db = torch.empty_like(weight) if bias_grad else _none(x)
    _lib.call("ptxdsl_layer_norm_backward", x.device.index, _code(x.dtype),
              _weight_code(x, weight), rows, width, 0, dy.data_ptr(), _ptr(dh), x.data_ptr(),
              _ptr(weight),
              mean.data_ptr(), rstd.data_ptr(), dx.data_ptr(),
              dw.data_ptr() if weight_grad else None, db.data_ptr() if bias_grad else None,
              None, 0, _stream(x))
    return dx, dw, db


@_layer_norm_backward.register_fake
def _(dy, dh, x, weight, mean, rstd, weight_grad, bias_grad):
    return (torch.empty_like(x), torch.empty_like(weight) if weight_grad else _none(x),
            torch.empty_like(weight) if bias_grad else _none(x))


def _layer_norm_setup(ctx, inputs, output):
    x, weight, bias, residual, _ = inputs
    _, mean, rstd, h = output
    # The backward normalizes what the forward did: h with the residual add.
    ctx.save_for_backward(h if residual is not None else x, weight, mean, rstd)
    ctx.has_bias = bias is not None
    ctx.has_residual = residual is not None
    ctx.mark_non_differentiable(mean, rstd)


def _layer_norm_grad(ctx, dy, _dmean, _drstd, dh):
    x, weight, mean, rstd = ctx.saved_tensors
    # dw and db only where autograd asks for either (the kernels' dx-only variant otherwise): the
    # kernels write db beside dw for a norm with a bias.
    weight_grad = weight is not None and (ctx.needs_input_grad[1] or
                                          (ctx.has_bias and ctx.needs_input_grad[2]))
    bias_grad = weight_grad and ctx.has_bias
    dx, dw, db = _layer_norm_backward(dy.contiguous(), _h_grad(ctx, dh), x, weight, mean, rstd,
                                      weight_grad, bias_grad)
    return (dx, dw if weight_grad else None, db if bias_grad else None,
            dx if ctx.has_residual else None, None)


_layer_norm_forward.register_autograd(_layer_norm_grad, setup_context=_layer_norm_setup)


@torch.library.custom_op("ptxdsl::rms_norm_forward", mutates_args=(), device_types="cuda")
def _rms_norm_forward(x: Tensor, weight: Optional[Tensor], residual: Optional[Tensor],
                      eps: float) -> tuple[Tensor, Tensor, Tensor]:
    rows, width = x.shape
    y = torch.empty_like(x)
    rstd = x.new_empty(rows, dtype=torch.float32)
    h = torch.empty_like(x) if residual is not None else _none(x)
    _lib.call("ptxdsl_rms_norm_forward", x.device.index, _code(x.dtype), _weight_code(x, weight),
              rows, width, 0, x.data_ptr(), _ptr(weight), _ptr(residual),
              h.data_ptr() if residual is not None else None, y.data_ptr(), rstd.data_ptr(), eps,
              _stream(x))
    return y, rstd, h


@_rms_norm_forward.register_fake
def _(x, weight, residual, eps):
    return (torch.empty_like(x), x.new_empty(x.shape[0], dtype=torch.float32),
            torch.empty_like(x) if residual is not None else _none(x))


@torch.library.custom_op("ptxdsl::rms_norm_backward", mutates_args=(), device_types="cuda")
def _rms_norm_backward(dy: Tensor, dh: Optional[Tensor], x: Tensor, weight: Optional[Tensor],
                       rstd: Tensor, weight_grad: bool) -> tuple[Tensor, Tensor]:
    rows, width = x.shape
    dx = torch.empty_like(x)
    dw = torch.empty_like(weight) if weight_grad else _none(x)
    _lib.call("ptxdsl_rms_norm_backward", x.device.index, _code(x.dtype), _weight_code(x, weight),
              rows, width, 0, dy.data_ptr(), _ptr(dh), x.data_ptr(), _ptr(weight), rstd.data_ptr(),
              dx.data_ptr(), dw.data_ptr() if weight_grad else None, None, 0, _stream(x))
    return dx, dw


@_rms_norm_backward.register_fake
def _(dy, dh, x, weight, rstd, weight_grad):
    return torch.empty_like(x), torch.empty_like(weight) if weight_grad else _none(x)


def _rms_norm_setup(ctx, inputs, output):
    x, weight, residual, _ = inputs
    _, rstd, h = output
    ctx.save_for_backward(h if residual is not None else x, weight, rstd)
    ctx.has_residual = residual is not None
    ctx.mark_non_differentiable(rstd)


def _rms_norm_grad(ctx, dy, _drstd, dh):
    x, weight, rstd = ctx.saved_tensors
    weight_grad = weight is not None and ctx.needs_input_grad[1]
    dx, dw = _rms_norm_backward(dy.contiguous(), _h_grad(ctx, dh), x, weight, rstd, weight_grad)
    return dx, dw if weight_grad else None, dx if ctx.has_residual else None, None


_rms_norm_forward.register_autograd(_rms_norm_grad, setup_context=_rms_norm_setup)

# ---- the functions users call ----


def _normalized_width(x, normalized_shape):
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape or x.dim() < len(shape) or tuple(x.shape[-len(shape):]) != shape:
        raise ValueError(f"normalized_shape {list(shape)} must be the last dimensions of the "
                         f"input, whose shape is {list(x.shape)}")
    return math.prod(shape)


def _rows(x, width, name="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.device.type != "cuda":
        raise ValueError(f"{name} must be on a CUDA device, got {x.device}")
    if x.dtype not in _CODES:
        raise TypeError(f"{name} must be float32, float16 or bfloat16, got {x.dtype}")
    return x.reshape(-1, width).contiguous()


def _param(p, x, width, name, dtype):
    """A weight or bias as one contiguous row; an absent one stays None."""
    if p is None:
        return None
    if not isinstance(p, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor or None, got {type(p).__name__}")
    if p.device != x.device:
        raise ValueError(f"{name} must be on the input's device {x.device}, got {p.device}")
    if p.dtype != dtype:
        raise TypeError(f"{name} must have the dtype {dtype}, got {p.dtype}")
    if p.numel() != width:
        raise ValueError(f"{name} must have {width} elements (the normalized shape), got "
                         f"shape {list(p.shape)}")
    return p.reshape(width).contiguous()


def _weight_dtype(x, *params):
    """The dtype of the given parameters (one for all): the input's, or float32 with 16-bit input."""
    given = {p.dtype for p in params if isinstance(p, Tensor)}
    if len(given) > 1:
        raise TypeError(f"weight and bias must have one dtype, got {sorted(map(str, given))}")
    dtype = given.pop() if given else x.dtype
    if dtype != x.dtype and not (dtype == torch.float32 and x.dtype != torch.float32):
        raise TypeError(f"weight must have the input's dtype {x.dtype}, or float32 with a 16-bit "
                        f"input, got {dtype}")
    return dtype


def _residual(residual, input, width):
    """The residual add's other summand: the input's shape and dtype, or None."""
    if residual is None:
        return None
    r = _rows(residual, width, "residual")
    if residual.shape != input.shape or residual.dtype != input.dtype:
        raise ValueError(f"residual must have the input's shape {list(input.shape)} and dtype "
                         f"{input.dtype}, got {list(residual.shape)} and {residual.dtype}")
    return r


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, residual=None):
    """torch.nn.functional.layer_norm on ptxdsl's kernels (CUDA tensors of float32, float16 or
    bfloat16; weight and bias in the input's dtype or float32, or None: no affine, or no bias).

    With `residual` (the input's shape and dtype), the fused residual add of flash-attention's
    layer_norm_fn(residual=...): h = input + residual is normalized, and (y, h) is returned; h is
    the next layer's residual. Gradients flow to input and residual through both outputs."""
    width = _normalized_width(input, normalized_shape)
    x = _rows(input, width)
    dtype = _weight_dtype(x, weight, bias)
    w = _param(weight, x, width, "weight", dtype)
    b = _param(bias, x, width, "bias", dtype)
    if w is None and b is not None:
        raise ValueError("bias without weight is not supported: pass a weight of ones")
    r = _residual(residual, input, width)
    y, _, _, h = _layer_norm_forward(x, w, b, r, float(eps))
    if r is None:
        return y.view(input.shape)
    return y.view(input.shape), h.view(input.shape)


def rms_norm(input, normalized_shape, weight=None, eps=None, residual=None):
    """torch.nn.functional.rms_norm on ptxdsl's kernels; eps None is the input dtype's epsilon,
    as torch takes it. `residual` as for layer_norm (Liger's and vLLM's fused add + RMS norm):
    returns (y, h), h = input + residual."""
    width = _normalized_width(input, normalized_shape)
    x = _rows(input, width)
    w = _param(weight, x, width, "weight", _weight_dtype(x, weight))
    if eps is None:
        eps = torch.finfo(x.dtype).eps
    r = _residual(residual, input, width)
    y, _, h = _rms_norm_forward(x, w, r, float(eps))
    if r is None:
        return y.view(input.shape)
    return y.view(input.shape), h.view(input.shape)


class LayerNorm(torch.nn.LayerNorm):
    """torch.nn.LayerNorm (same arguments, parameters and state dict) on ptxdsl's kernels."""

    def forward(self, input):
        return layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)


class RMSNorm(torch.nn.RMSNorm):
    """torch.nn.RMSNorm (same arguments, parameters and state dict) on ptxdsl's kernels."""

    def forward(self, input):
        return rms_norm(input, self.normalized_shape, self.weight, self.eps)


def prepare(norm, dtype, width, weight_dtype=None, device=None):
    """JIT-compiles the kernels of norm ("layer_norm" or "rms_norm") for rows of `width` elements
    of `dtype` now, so that neither a first call nor a CUDA graph capture pays for it."""
    codes = {"layer_norm": _lib.LAYER_NORM, "rms_norm": _lib.RMS_NORM}
    if norm not in codes:
        raise ValueError(f"norm must be 'layer_norm' or 'rms_norm', got {norm!r}")
    if dtype not in _CODES or (weight_dtype is not None and weight_dtype not in _CODES):
        raise TypeError(f"dtypes must be float32, float16 or bfloat16, got {dtype} and "
                        f"{weight_dtype}")
    index = torch.device(device if device is not None else "cuda").index
    index = torch.cuda.current_device() if index is None else index
    _lib.call("ptxdsl_norm_prepare", index, codes[norm], _CODES[dtype],
              _CODES[weight_dtype or dtype], width)
