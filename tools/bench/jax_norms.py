#!/usr/bin/env python3
"""ptxdsl.jax under jax.jit beside XLA's own fused norms and a copy of each case's bytes, at the
standard suite's shapes (BENCHMARKS.md), in one run: the forward (fwd), the backward alone from the
forward's statistics (bwd: ptxdsl's backward FFI call against XLA's fusion of the same formula),
and a training step's forward + vjp (fwd+bwd: y returned beside the gradients; XLA may fuse its
forward into its backward here, as dy does not depend on y).

    PYTHONPATH=runtime/python PTXDSL_LIBRARY=build/runtime/capi/libptxdsl.so \
        PTXDSL_JAX_NATIVE=build/runtime/python/native/libptxdsl_jax.so \
        python3 tools/bench/jax_norms.py [--only TEXT] [--reps 15]

JAX has no events on XLA's stream, so each case is timed on the wall, from dispatch to
block_until_ready, as two jitted programs: one of K calls on K distinct inputs (K·bytes ≥ 2 GiB, so
that each call reads from DRAM, as a flushed L2 does) and one of 2K calls that goes over the same
inputs twice. The difference of their least times over --reps interleaved runs, over K, is the time
of a call, without the program's own dispatch and synchronization (a few hundred µs, which a
program of a few large calls would otherwise spread over them); the least, because the host's
noise only ever adds to a wall time. The copy is XLA's elementwise `~` over uint32 arrays of
half the case's bytes (read once, written once), timed the same way: `copy/us` is then comparable
with `ptxdsl bench`'s copy ratio of the same case, and `us` with its µs.

`c abi us` (where torch is present): the same kernels on the same inputs (shared through DLPack)
from the C ABI (through ptxdsl.torch; bwd: the C ABI's backward itself, its workspace given),
timed the same way with CUDA graphs of K and 2K calls
replayed in place of the jitted programs (no host time in either): `jax/c` is the FFI's cost.
"""

import argparse
import math
import os
import time

# torch and JAX share the GPU here: neither may take most of its memory up front.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax
import jax.numpy as jnp

import ptxdsl.jax as pj

STANDARD = [  # (norm, dtype, rows, width): BENCHMARKS.md's standard suite
    ("ln", jnp.float16, 4096, 1024), ("ln", jnp.float16, 4096, 2048),
    ("ln", jnp.float16, 4096, 4096), ("ln", jnp.float16, 4096, 8192),
    ("ln", jnp.float16, 4096, 16384), ("ln", jnp.float16, 1151, 8192),
    ("ln", jnp.bfloat16, 16384, 8192), ("ln", jnp.float32, 4096, 8192),
    ("rms", jnp.float32, 2048, 8192), ("rms", jnp.float32, 256, 4096),
    ("rms", jnp.bfloat16, 4096, 4096), ("rms", jnp.bfloat16, 16384, 8192),
    ("rms", jnp.float16, 4096, 8192), ("rms", jnp.bfloat16, 4096, 16384),
]
EPS = 1e-5


def case_bytes(norm, direction, rows, width, s):
    """BENCHMARKS.md's byte counts (weights in the input's dtype)."""
    if norm == "ln":
        return (2 * rows * width * s + 2 * width * s + 8 * rows if direction == "fwd"
                else 3 * rows * width * s + 3 * width * s + 8 * rows)
    return (2 * rows * width * s + width * s if direction == "fwd"
            else 3 * rows * width * s + 2 * width * s + 4 * rows)


def xla_rms(x, w):
    xf = x.astype(jnp.float32)
    return (xf * jax.lax.rsqrt(jnp.mean(xf * xf, -1, keepdims=True) + EPS) * w).astype(x.dtype)


def xla_ln(x, w, b):
    xf = x.astype(jnp.float32)
    mu = jnp.mean(xf, -1, keepdims=True)
    var = jnp.mean((xf - mu) ** 2, -1, keepdims=True)
    return ((xf - mu) * jax.lax.rsqrt(var + EPS) * w + b).astype(x.dtype)


def timed(fn, args, calls, reps):
    """Wall µs per call (slope()): fn maps K per-call inputs to K outputs; the lists among args
    are the K calls' inputs, the other arguments are shared."""
    twice = tuple(a + a if isinstance(a, list) else a for a in args)

    def wall(a):
        start = time.perf_counter()
        jax.block_until_ready(fn(*a))
        return time.perf_counter() - start

    for a in (args, twice, args, twice):  # compiles both programs, then warms them up
        wall(a)
    return slope([lambda: wall(args), lambda: wall(twice)], calls, reps)


def slope(programs, calls, reps):
    """(least time of programs[1] − least time of programs[0]) / calls, in µs, over reps
    interleaved runs of each."""
    least = [math.inf, math.inf]
    for _ in range(reps):
        for i, run in enumerate(programs):
            least[i] = min(least[i], run())
    return (least[1] - least[0]) / calls * 1e6


def xla_rms_backward(x, w, b, dy, stats):
    """The RMS norm's dx and dw from the forward's rstd, in f32, as XLA fuses it."""
    _, rstd = stats
    xf, dyf, wf = x.astype(jnp.float32), dy.astype(jnp.float32), w.astype(jnp.float32)
    xhat = xf * rstd[:, None]
    wdy = dyf * wf
    c = jnp.mean(xhat * wdy, -1, keepdims=True)
    return ((rstd[:, None] * (wdy - xhat * c)).astype(x.dtype),
            jnp.sum(dyf * xhat, 0).astype(w.dtype))


def xla_ln_backward(x, w, b, dy, stats):
    """The layer norm's dx, dw and db from the forward's mean and rstd, in f32."""
    mean, rstd = stats
    xf, dyf, wf = x.astype(jnp.float32), dy.astype(jnp.float32), w.astype(jnp.float32)
    xhat = (xf - mean[:, None]) * rstd[:, None]
    wdy = dyf * wf
    c1 = jnp.mean(xhat * wdy, -1, keepdims=True)
    c2 = jnp.mean(wdy, -1, keepdims=True)
    return ((rstd[:, None] * (wdy - xhat * c1 - c2)).astype(x.dtype),
            jnp.sum(dyf * xhat, 0).astype(w.dtype), jnp.sum(dyf, 0).astype(w.dtype))


def ours_backward(norm):
    """ptxdsl's backward FFI call alone, from the forward's statistics (mean unused by RMS)."""
    if norm == "rms":
        return lambda x, w, b, dy, stats: pj._rms_backward(dy, None, x, w, stats[1], True)
    return lambda x, w, b, dy, stats: pj._layer_norm_backward(dy, None, x, w, b, *stats, True,
                                                              True)


def statistics_of(norm, x, w, b):
    """(mean, rstd) of ptxdsl's forward of x (mean None for RMS): what a backward reads."""
    if norm == "rms":
        return None, pj._rms_forward(x, w, None, EPS)[2]
    _, _, mean, rstd = pj._layer_norm_forward(x, w, b, None, EPS)
    return mean, rstd


def programs(norm, direction):
    """(ptxdsl's program, XLA's program), each mapping lists of per-call inputs (xs, dys,
    stats) and the shared w, b to outputs."""
    if direction == "bwd":
        theirs = xla_rms_backward if norm == "rms" else xla_ln_backward
        return [jax.jit(lambda xs, w, b, dys, stats, f=f: [
            f(x, w, b, dy, st) for x, dy, st in zip(xs, dys, stats)])
            for f in (ours_backward(norm), theirs)]
    if norm == "rms":
        ours = lambda x, w, b: pj.rms_norm(x, w, EPS)
        theirs = lambda x, w, b: xla_rms(x, w)
    else:
        ours = lambda x, w, b: pj.layer_norm(x, w, b, EPS)
        theirs = xla_ln
    if direction == "fwd":
        return ([jax.jit(lambda xs, w, b, dys, stats, f=f: [f(x, w, b) for x in xs])
                 for f in (ours, theirs)])

    # A training step's forward and backward: y is returned, so that neither program skips the
    # forward's output (ptxdsl's FFI forward always writes it; XLA would otherwise compute only
    # the statistics its backward needs).
    def backward(f):
        def one(x, w, b, dy):
            if norm == "ln":
                y, vjp = jax.vjp(f, x, w, b)
            else:
                y, vjp = jax.vjp(lambda x, w: f(x, w, b), x, w)
            return y, vjp(dy)
        return jax.jit(lambda xs, w, b, dys, stats: [one(x, w, b, dy)
                                                     for x, dy in zip(xs, dys)])
    return backward(ours), backward(theirs)


def c_abi_backward(norm, x, w, b, dy, stats, keep):
    """One call of the C ABI's backward on torch tensors, its outputs and workspace given (and
    kept in `keep`), on the current stream."""
    import torch
    from ptxdsl import _lib
    mean, rstd = stats
    code = {torch.float32: _lib.F32, torch.float16: _lib.F16, torch.bfloat16: _lib.BF16}[x.dtype]
    rows, width = x.shape
    which = _lib.RMS_NORM if norm == "rms" else _lib.LAYER_NORM
    need = _lib.workspace_bytes(x.get_device(), which, code, code, width, rows)
    dx, dw, db = torch.empty_like(x), torch.empty_like(w), torch.empty_like(w)
    space = torch.empty(max(need, 1), device=x.device, dtype=torch.uint8)
    keep += [dx, dw, db, space]
    p = lambda t: t.data_ptr()
    stream = torch.cuda.current_stream().cuda_stream
    if norm == "rms":
        _lib.call("ptxdsl_rms_norm_backward", 0, code, code, rows, width, 0, p(dy), None, p(x),
                  p(w), p(rstd), p(dx), p(dw), p(space), need, stream)
    else:
        _lib.call("ptxdsl_layer_norm_backward", 0, code, code, rows, width, 0, p(dy), None, p(x),
                  p(w), p(mean), p(rstd), p(dx), p(dw), p(db), p(space), need, stream)


def c_abi_program(norm, direction, xs, w, b, dys, stats):
    """A function replaying, as one CUDA graph, the C ABI's kernels on the JAX arrays of a case
    (shared through DLPack), as programs() runs them: the forward and the forward + vjp through
    ptxdsl.torch, the backward alone through the C ABI itself."""
    import torch
    import ptxdsl.torch as pt
    t = lambda a: None if a is None else torch.from_dlpack(a)
    tx, tw, tb, tdy = [t(x) for x in xs], t(w), t(b), [t(d) for d in dys]
    tstats = [(t(m), t(r)) for m, r in stats]
    grad = direction == "fwd+bwd"
    params = [tw.detach().requires_grad_(grad)] + (
        [tb.detach().requires_grad_(grad)] if norm == "ln" else [])

    def one(i, x, dy):
        if direction == "bwd":
            kept = []
            c_abi_backward(norm, x, tw, tb, dy, tstats[i], kept)
            return kept
        x = x.detach().requires_grad_(grad)
        width = x.shape[-1]
        y = (pt.layer_norm(x, (width,), params[0], params[1], EPS) if norm == "ln"
             else pt.rms_norm(x, (width,), params[0], EPS))
        return [y] + list(torch.autograd.grad(y, [x] + params, dy) if grad else [])

    # Every call's outputs stay alive, as the jitted program's do: a graph whose calls reused
    # one output buffer would write to L2 alone.
    outputs = []

    def calls():
        outputs.clear()
        with torch.set_grad_enabled(grad):
            for i, x in enumerate(tx):
                outputs.append(one(i, x, tdy[i] if tdy else None))

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        calls()  # JIT-compiles and warms the allocator before capture
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        calls()

    def replay(*unused):
        graph.replay()
        torch.cuda.synchronize()
    return replay


def c_abi_timed(norm, direction, xs, w, b, dys, stats, calls, reps):
    """timed() of c_abi_program: graphs of the K calls and of the 2K calls, replayed."""
    once = c_abi_program(norm, direction, xs, w, b, dys, stats)
    twice = c_abi_program(norm, direction, xs + xs, w, b, dys + dys, stats + stats)

    def wall(fn):
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    for fn in (once, twice, once, twice):
        wall(fn)
    return slope([lambda: wall(once), lambda: wall(twice)], calls, reps)


def torch_present():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="cases whose name contains TEXT")
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    key = jax.random.PRNGKey(1)
    copy = jax.jit(lambda arrays, *unused: [~a for a in arrays])
    print(f"{jax.devices()[0].device_kind}, jax {jax.__version__}")
    with_c = torch_present()
    print(f"{'case':<32} {'ptxdsl us':>10} {'xla us':>10} {'copy us':>9} {'copy/us':>8} "
          f"{'xla/ptxdsl':>10}" + (f" {'c abi us':>9} {'jax/c':>6}" if with_c else ""))
    for norm, dtype, rows, width in STANDARD:
        s = jnp.dtype(dtype).itemsize
        for direction in ("fwd", "bwd", "fwd+bwd"):
            name = f"{norm}_{direction} {jnp.dtype(dtype).name} {rows}x{width}"
            if args.only not in name:
                continue
            nbytes = sum(case_bytes(norm, d, rows, width, s) for d in direction.split("+"))
            calls = max(2, min(128, math.ceil(2**31 / nbytes)))
            ks = jax.random.split(key, 2 * calls + 2)
            xs = [(jax.random.normal(ks[i], (rows, width)) * 0.3).astype(dtype)
                  for i in range(calls)]
            dys = [(jax.random.normal(ks[calls + i], (rows, width)) * 0.1).astype(dtype)
                   for i in range(calls)] if direction != "fwd" else []
            w = (1 + 0.1 * jax.random.normal(ks[-2], (width,))).astype(dtype)
            b = jax.random.uniform(ks[-1], (width,)).astype(dtype)
            stats = [statistics_of(norm, x, w, b) for x in xs] if direction == "bwd" else []
            ours, theirs = programs(norm, direction)
            us = timed(ours, (xs, w, b, dys, stats), calls, args.reps)
            xla_us = timed(theirs, (xs, w, b, dys, stats), calls, args.reps)
            c_us = (c_abi_timed(norm, direction, xs, w, b, dys, stats, calls, args.reps)
                    if with_c else None)
            del xs, dys, stats
            half = [jnp.zeros(nbytes // 8, jnp.uint32) + i for i in range(calls)]
            copy_us = timed(copy, (half,), calls, args.reps)
            del half
            print(f"{name:<32} {us:>10.1f} {xla_us:>10.1f} {copy_us:>9.1f} {copy_us / us:>8.2f} "
                  f"{xla_us / us:>10.2f}" + (f" {c_us:>9.1f} {us / c_us:>6.2f}" if with_c else ""),
                  flush=True)


if __name__ == "__main__":
    main()
