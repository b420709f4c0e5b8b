"""ptxdsl's norms from JAX: `rms_norm` and `layer_norm` as XLA FFI calls, under jax.jit, jax.grad
and jax.vmap, launched on XLA's stream, with a custom VJP whose backward is ptxdsl's (the dx-only
kernel where the weight is not differentiated). The backward's workspace is one of the call's
outputs, so XLA allocates it.

Rows are every axis but the last. The handlers are libptxdsl_jax.so (runtime/python/native),
built where jax is found at build time; PTXDSL_JAX_NATIVE names it."""

import ctypes
import functools
import math
import os
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero

from . import _lib

_NAME = "libptxdsl_jax.so"
_TARGETS = ("rms_norm_forward", "layer_norm_forward", "rms_norm_backward", "layer_norm_backward")
_CODES = {jnp.dtype(jnp.float32): _lib.F32, jnp.dtype(jnp.float16): _lib.F16,
          jnp.dtype(jnp.bfloat16): _lib.BF16}
MAX_WIDTH = 262144  # PTXDSL_MAX_WIDTH of <ptxdsl/ptxdsl.h>


def _candidates():
    env = os.environ.get("PTXDSL_JAX_NATIVE")
    if env:
        return [pathlib.Path(env)]
    return _lib.native_library_candidates(_NAME)


@functools.cache
def _register():
    """Loads the handlers, binds them to the C ABI of the library _lib loaded, and registers them
    with XLA as the CUDA targets ptxdsl_<norm>_<direction>."""
    path = next((p for p in _candidates() if p.is_file()), None)
    if path is None:
        raise _lib.UnsupportedError(
            "PTXDSL_ERROR_UNSUPPORTED",
            f"ptxdsl.jax needs {_NAME}, built where CMake finds jax (looked at "
            f"{', '.join(str(p) for p in _candidates())}; PTXDSL_JAX_NATIVE names it)")
    handlers = ctypes.CDLL(str(path))
    addresses = _lib.native_function_addresses()
    if handlers.ptxdsl_jax_bind((ctypes.c_int64 * len(addresses))(*addresses)) != 0:
        raise _lib.DriverError("PTXDSL_ERROR_DRIVER",
                               f"ptxdsl.jax: {path} could not bind the C ABI's functions")
    for target in _TARGETS:
        jax.ffi.register_ffi_target("ptxdsl_" + target,
                                    jax.ffi.pycapsule(getattr(handlers, "ptxdsl_jax_" + target)),
                                    platform="CUDA")
    return handlers


def _gpus():
    """The CUDA ordinals of this process's GPUs."""
    return [d.local_hardware_id for d in jax.local_devices(backend="gpu")]


@functools.cache
def _prepare(norm, dtype, weight_dtype, width):
    """Loads the kernels of a (norm, dtype, width) on every GPU at trace time, so that XLA never
    runs a module load inside a command buffer it records."""
    for device in _gpus():
        _lib.call("ptxdsl_norm_prepare", device, norm, dtype, weight_dtype, width)


@functools.cache
def _workspace_bytes(norm, dtype, weight_dtype, width, rows):
    return max((_lib.workspace_bytes(d, norm, dtype, weight_dtype, width, rows) for d in _gpus()),
               default=0)


def _invalid(message):
    return _lib.ArgumentError("PTXDSL_ERROR_INVALID_ARGUMENT", message)


def _check(x, weight, bias, residual, eps):
    """The codes of (dtype, weight dtype), or ArgumentError naming what is wrong."""
    x_dtype = jnp.dtype(x.dtype)
    if x_dtype not in _CODES:
        raise _invalid(f"input must be float32, float16 or bfloat16, got {x_dtype}")
    if x.ndim == 0 or not 1 <= x.shape[-1] <= MAX_WIDTH:
        raise _invalid(f"input's last axis must have 1 to {MAX_WIDTH} elements, got shape "
                       f"{tuple(x.shape)}")
    width = x.shape[-1]
    w_dtype = x_dtype
    for name, p in (("weight", weight), ("bias", bias)):
        if p is None:
            continue
        if tuple(p.shape) != (width,):
            raise _invalid(f"{name} must have shape ({width},), got {tuple(p.shape)}")
        if jnp.dtype(p.dtype) not in (x_dtype, jnp.dtype(jnp.float32)):
            allowed = "float32" if x_dtype == jnp.float32 else f"{x_dtype} or float32"
            raise _invalid(f"{name} must be {allowed} for a {x_dtype} input, got "
                           f"{jnp.dtype(p.dtype)}")
        w_dtype = jnp.dtype(p.dtype)
    if weight is not None and bias is not None and weight.dtype != bias.dtype:
        raise _invalid(f"weight and bias must have one dtype, got {weight.dtype} and {bias.dtype}")
    if residual is not None and (residual.shape != x.shape or residual.dtype != x.dtype):
        raise _invalid(f"residual must be like the input ({tuple(x.shape)}, {x_dtype}), got "
                       f"({tuple(residual.shape)}, {residual.dtype})")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not math.isfinite(eps) \
            or eps < 0:
        raise _invalid(f"eps must be a finite float >= 0, got {eps!r}")
    return _CODES[x_dtype], _CODES[w_dtype]


def _or_empty(a, dtype):
    return jnp.zeros((0,), dtype) if a is None else a


def _out(shape, dtype):
    return jax.ShapeDtypeStruct(tuple(shape), dtype)


def _call(target, outputs, *args, **attrs):
    _register()
    return jax.ffi.ffi_call("ptxdsl_" + target, outputs, vmap_method="expand_dims")(*args, **attrs)


class _Static:
    """A Python value carried through custom_vjp's residuals as static data (no array leaves)."""

    def __init__(self, value):
        self.value = value


jax.tree_util.register_pytree_node(_Static, lambda s: ((), s.value), lambda v, _: _Static(v))


def _primal(p):
    """(value, differentiated) of one of custom_vjp's primals (None where the argument is)."""
    return (None, False) if p is None else (p.value, p.perturbed)


def _zero_or(ct, like):
    """A cotangent, with a symbolic zero (an output nobody differentiates) made real or None."""
    if not isinstance(ct, SymbolicZero):
        return ct
    return None if like is None else jnp.zeros(like.shape, like.dtype)


# ---- RMS norm ----

def _rms_forward(x, weight, residual, eps):
    codes = _check(x, weight, None, residual, eps)
    _prepare(_lib.RMS_NORM, *codes, x.shape[-1])
    return _call("rms_norm_forward",
                 (_out(x.shape, x.dtype), _out(x.shape if residual is not None else (0,), x.dtype),
                  _out(x.shape[:-1], jnp.float32)),
                 x, _or_empty(weight, x.dtype), _or_empty(residual, x.dtype), eps=np.float32(eps),
                 weight_dtype=np.int32(codes[1]))


def _rms_backward(dy, dh, x, weight, rstd, weight_grad):
    codes = _check(x, weight, None, None, 0.0)
    width, rows = x.shape[-1], math.prod(x.shape[:-1])
    ws = _workspace_bytes(_lib.RMS_NORM, *codes, width, rows) if weight_grad else 0
    dx, dw, _ = _call("rms_norm_backward",
                      (_out(x.shape, x.dtype),
                       _out(weight.shape if weight_grad else (0,), weight.dtype
                            if weight is not None else x.dtype),
                       _out((ws,), jnp.uint8)),
                      dy, _or_empty(dh, dy.dtype), x, _or_empty(weight, x.dtype), rstd,
                      weight_dtype=np.int32(codes[1]))
    return dx, (dw if weight_grad else None)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3,))
def _rms_norm(x, weight, residual, eps):
    y, h, _ = _rms_forward(x, weight, residual, eps)
    return y, h


def _rms_norm_fwd(x, weight, residual, eps):
    # With symbolic_zeros, each primal says whether it is differentiated.
    (x, _), (weight, weight_grad), (residual, _) = map(_primal, (x, weight, residual))
    y, h, rstd = _rms_forward(x, weight, residual, eps)
    saved = h if residual is not None else x
    return (y, h), (saved, weight, rstd, _Static((weight_grad, residual is not None)))


def _rms_norm_bwd(eps, saved, cts):
    x, weight, rstd, flags = saved
    weight_grad, has_residual = flags.value
    dy, dh = _zero_or(cts[0], x), _zero_or(cts[1], None) if has_residual else None
    dx, dw = _rms_backward(dy, dh, x, weight, rstd, weight_grad)
    return dx, dw, (dx if has_residual else None)


_rms_norm.defvjp(_rms_norm_fwd, _rms_norm_bwd, symbolic_zeros=True)


def rms_norm(x, weight=None, eps=1e-6, residual=None):
    """y = x / sqrt(mean(x²) + eps) * weight over the last axis. With `residual`, normalizes
    h = x + residual and returns (y, h), the residual stream's add fused into the norm."""
    y, h = _rms_norm(x, weight, residual, float(eps))
    return (y, h) if residual is not None else y


# ---- layer norm ----

def _layer_norm_forward(x, weight, bias, residual, eps):
    codes = _check(x, weight, bias, residual, eps)
    _prepare(_lib.LAYER_NORM, *codes, x.shape[-1])
    rows = x.shape[:-1]
    return _call("layer_norm_forward",
                 (_out(x.shape, x.dtype), _out(x.shape if residual is not None else (0,), x.dtype),
                  _out(rows, jnp.float32), _out(rows, jnp.float32)),
                 x, _or_empty(weight, x.dtype), _or_empty(bias, x.dtype),
                 _or_empty(residual, x.dtype), eps=np.float32(eps), weight_dtype=np.int32(codes[1]))


def _layer_norm_backward(dy, dh, x, weight, bias, mean, rstd, weight_grad, bias_grad):
    codes = _check(x, weight, bias, None, 0.0)
    width, rows = x.shape[-1], math.prod(x.shape[:-1])
    p_dtype = weight.dtype if weight is not None else bias.dtype if bias is not None else x.dtype
    ws = _workspace_bytes(_lib.LAYER_NORM, *codes, width, rows) if weight_grad or bias_grad else 0
    dx, dw, db, _ = _call("layer_norm_backward",
                          (_out(x.shape, x.dtype), _out((width,) if weight_grad else (0,), p_dtype),
                           _out((width,) if bias_grad else (0,), p_dtype),
                           _out((ws,), jnp.uint8)),
                          dy, _or_empty(dh, dy.dtype), x, _or_empty(weight, x.dtype), mean, rstd,
                          weight_dtype=np.int32(codes[1]))
    return dx, (dw if weight_grad else None), (db if bias_grad else None)


@functools.partial(jax.custom_vjp, nondiff_argnums=(4,))
def _layer_norm(x, weight, bias, residual, eps):
    y, h, _, _ = _layer_norm_forward(x, weight, bias, residual, eps)
    return y, h


def _layer_norm_fwd(x, weight, bias, residual, eps):
    (x, _), (weight, weight_grad), (bias, bias_grad), (residual, _) = map(
        _primal, (x, weight, bias, residual))
    y, h, mean, rstd = _layer_norm_forward(x, weight, bias, residual, eps)
    saved = h if residual is not None else x
    flags = (weight_grad, bias_grad, residual is not None)
    return (y, h), (saved, weight, bias, mean, rstd, _Static(flags))


def _layer_norm_bwd(eps, saved, cts):
    x, weight, bias, mean, rstd, flags = saved
    weight_grad, bias_grad, has_residual = flags.value
    dy, dh = _zero_or(cts[0], x), _zero_or(cts[1], None) if has_residual else None
    dx, dw, db = _layer_norm_backward(dy, dh, x, weight, bias, mean, rstd, weight_grad, bias_grad)
    return dx, dw, db, (dx if has_residual else None)


_layer_norm.defvjp(_layer_norm_fwd, _layer_norm_bwd, symbolic_zeros=True)


def layer_norm(x, weight=None, bias=None, eps=1e-5, residual=None):
    """y = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias over the last axis. With `residual`,
    normalizes h = x + residual and returns (y, h)."""
    y, h = _layer_norm(x, weight, bias, residual, float(eps))
    return (y, h) if residual is not None else y
