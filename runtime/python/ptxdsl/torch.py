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


def _shaped(y, h, input):
    """y, or (y, h) after a residual add, in the input's shape."""
    if input.dim() != 2:
        y = y.view(input.shape)
        h = h.view(input.shape) if h is not None else None
    return y if h is None else (y, h)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, residual=None):
    """torch.nn.functional.layer_norm on ptxdsl's kernels (CUDA tensors of float32, float16 or
    bfloat16; weight and bias in the input's dtype or float32, or None: no affine, or no bias).

    With `residual` (the input's shape and dtype), the fused residual add of flash-attention's
    layer_norm_fn(residual=...): h = input + residual is normalized, and (y, h) is returned; h is
    the next layer's residual. Gradients flow to input and residual through both outputs."""
    native = _native.ops()
    if native is not None and not torch.compiler.is_compiling():
        try:
            shape = (normalized_shape,) if type(normalized_shape) is int else normalized_shape
            y, h = native.layer_norm_call(input, shape, weight, bias, eps, residual)
            if y is not None:  # None: a case the fast path hands back to the code below
                return y if residual is None else (y, h)
        except (RuntimeError, TypeError) as e:
            _native.reraise_unless_fallback(e)
    width = _normalized_width(input, normalized_shape)
    x = _rows(input, width)
    dtype = _weight_dtype(x, weight, bias)
    w = _param(weight, x, width, "weight", dtype)
    b = _param(bias, x, width, "bias", dtype)
    if w is None and b is not None:
        raise ValueError("bias without weight is not supported: pass a weight of ones")
    r = _residual(residual, input, width)
    y, h = _layer_norm_rows(x, w, b, r, _eps(eps))
    return _shaped(y, h if r is not None else None, input)


def rms_norm(input, normalized_shape, weight=None, eps=None, residual=None):
    """torch.nn.functional.rms_norm on ptxdsl's kernels; eps None is the input dtype's epsilon,
    as torch takes it. `residual` as for layer_norm (Liger's and vLLM's fused add + RMS norm):
    returns (y, h), h = input + residual."""
    native = _native.ops()
    if native is not None and not torch.compiler.is_compiling():
        try:
            shape = (normalized_shape,) if type(normalized_shape) is int else normalized_shape
            y, h = native.rms_norm_call(input, shape, weight,
                                        _FINFO_EPS[input.dtype] if eps is None else eps, residual)
            if y is not None:  # None: a case the fast path hands back to the code below
                return y if residual is None else (y, h)
        except (RuntimeError, TypeError, KeyError, AttributeError) as e:
            _native.reraise_unless_fallback(e)
    width = _normalized_width(input, normalized_shape)
    x = _rows(input, width)
    w = _param(weight, x, width, "weight", _weight_dtype(x, weight))
    if eps is None:
        eps = torch.finfo(x.dtype).eps
    r = _residual(residual, input, width)
    y, h = _rms_norm_rows(x, w, r, _eps(eps))
    return _shaped(y, h if r is not None else None, input)


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
    _lib.call("ptxdsl_norm_prepare", _lib.integer("device", index), codes[norm], _CODES[dtype],
              _CODES[weight_dtype or dtype], _lib.integer("width", width, "int64"))


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
