#!/usr/bin/env python3
"""Host time of each ptxdsl.torch entry point beside eager PyTorch's and torch.compile's, in one run.

    PYTHONPATH=runtime/python PTXDSL_LIBRARY=build/runtime/capi/libptxdsl.so \
        python3 tools/bench/python_host_cost.py [--rows 8] [--width 4096] [--dtype bfloat16]
                                                [--calls 2000] [--profile] [--decode]
                                                [--breakdown]

Host time is CPU wall over --calls calls at a shape whose kernels take less time than their launch,
so that the GPU idles and the loop measures the Python, dispatch and launch path alone (the method
of docs/performance.md, "Host cost"). --decode adds end-to-end time per call at decode shapes
(rows 1-64, the given width). --profile prints cProfile's top entries of one ptxdsl forward loop.
--breakdown prints only the host time of each piece of a no-grad forward (allocations, the C ABI
through ctypes, the native call, the Python wrapper), each as its own loop, and of the backwards.
"""

import argparse
import cProfile
import pstats
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import ptxdsl.torch as pt


def host_us(fns, calls, repeats=5):
    """The least wall time per call of `calls` back-to-back calls of each of fns (one function or
    a list), over `repeats` rounds that take the functions in turn, in µs: the host's noise only
    ever adds to a wall time, and the rounds spread a slow spell over every column alike."""
    single = callable(fns)
    fns = [fns] if single else list(fns)
    for fn in fns:
        for _ in range(max(calls // 10, 20)):
            fn()
    torch.cuda.synchronize()
    least = [float("inf")] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
            least[i] = min(least[i], (time.perf_counter() - start) / calls * 1e6)
    return least[0] if single else least


def inputs(rows, width, dtype, grad):
    x = torch.randn(rows, width, device="cuda", dtype=dtype, requires_grad=grad)
    r = torch.randn(rows, width, device="cuda", dtype=dtype, requires_grad=grad)
    w = torch.rand(width, device="cuda", dtype=dtype, requires_grad=grad)
    b = torch.randn(width, device="cuda", dtype=dtype, requires_grad=grad)
    dy = torch.randn(rows, width, device="cuda", dtype=dtype)
    return x, r, w, b, dy


def torch_rms(x, w, eps=1e-6):
    return F.rms_norm(x, (x.shape[-1],), w, eps)


def torch_ln(x, w, b, eps=1e-5):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


def torch_add_rms(x, r, w, eps=1e-6):
    h = x + r
    return F.rms_norm(h, (h.shape[-1],), w, eps), h


def ptxdsl_rms(x, w, eps=1e-6):
    return pt.rms_norm(x, (x.shape[-1],), w, eps)


def ptxdsl_ln(x, w, b, eps=1e-5):
    return pt.layer_norm(x, (x.shape[-1],), w, b, eps)


def ptxdsl_add_rms(x, r, w, eps=1e-6):
    return pt.rms_norm(x, (x.shape[-1],), w, eps, residual=r)


# (entry, torch's function, ptxdsl's, arguments picked from inputs())
ENTRIES = [
    ("rms_norm", torch_rms, ptxdsl_rms, lambda x, r, w, b: (x, w)),
    ("layer_norm", torch_ln, ptxdsl_ln, lambda x, r, w, b: (x, w, b)),
    ("rms_norm residual", torch_add_rms, ptxdsl_add_rms, lambda x, r, w, b: (x, r, w)),
]


def forward_only(fn, args):
    def call():
        with torch.no_grad():
            fn(*args)
    return call


def forward_backward(fn, args, dy):
    def call():
        out = fn(*args)
        y = out[0] if isinstance(out, tuple) else out
        y.backward(dy)
    return call


def compiled(fn):
    return torch.compile(fn, fullgraph=True, dynamic=False)


def table(rows, width, dtype, calls):
    print(f"host µs per call, {rows} x {width} {dtype}, {calls} calls, least of 5 rounds "
          f"({torch.cuda.get_device_name()})")
    print(f"| entry | mode | eager torch | torch.compile | ptxdsl |")
    print(f"|---|---|---:|---:|---:|")
    for name, torch_fn, ptxdsl_fn, pick in ENTRIES:
        for mode in ("forward, no grad", "forward + backward"):
            grad = mode != "forward, no grad"
            x, r, w, b, dy = inputs(rows, width, dtype, grad)
            args = pick(x, r, w, b)
            make = (lambda f: forward_backward(f, args, dy)) if grad else (
                lambda f: forward_only(f, args))
            eager, comp, ours = host_us(
                [make(torch_fn), make(compiled(torch_fn)), make(ptxdsl_fn)], calls)
            print(f"| {name} | {mode} | {eager:.1f} | {comp:.1f} | {ours:.1f} |", flush=True)


def decode(width, dtype, calls):
    print(f"\nend-to-end µs per call, forward no grad, rms_norm residual, width {width} {dtype}")
    print("| rows | eager torch | torch.compile | ptxdsl |")
    print("|---:|---:|---:|---:|")
    for rows in (1, 8, 32, 64):
        x, r, w, b, dy = inputs(rows, width, dtype, False)
        times = host_us([forward_only(f, (x, r, w))
                         for f in (torch_add_rms, compiled(torch_add_rms), ptxdsl_add_rms)],
                        calls)
        print(f"| {rows} | " + " | ".join(f"{t:.1f}" for t in times) + " |", flush=True)


def profile(rows, width, dtype, calls):
    x, r, w, b, dy = inputs(rows, width, dtype, False)
    call = forward_only(ptxdsl_rms, (x, w))
    host_us(call, 100, 1)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        call()
    profiler.disable()
    torch.cuda.synchronize()
    print("\ncProfile of ptxdsl rms_norm forward, no grad:")
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(25)
    x, r, w, b, dy = inputs(rows, width, dtype, True)
    call = forward_backward(ptxdsl_rms, (x, w), dy)
    host_us(call, 100, 1)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls // 4):
        call()
    profiler.disable()
    torch.cuda.synchronize()
    print("\ncProfile of ptxdsl rms_norm forward + backward:")
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(25)


def breakdown(rows, width, dtype, calls):
    import ctypes
    from ptxdsl import _lib, _native
    x, r, w, b, dy = inputs(rows, width, dtype, False)
    y, rstd = torch.empty_like(x), torch.empty(rows, device="cuda", dtype=torch.float32)
    code = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}[dtype]
    stream = torch.cuda.current_stream().cuda_stream
    forward = _lib.function("ptxdsl_rms_norm_forward")
    native = _native.ops()
    pieces = [
        ("empty Python loop", lambda: None),
        ("torch.no_grad() enter/exit", lambda: torch.no_grad().__enter__()),
        ("torch.compiler.is_compiling()", torch.compiler.is_compiling),
        ("torch.empty_like(x)", lambda: torch.empty_like(x)),
        ("torch.empty(rows, f32)", lambda: torch.empty(rows, device="cuda",
                                                       dtype=torch.float32)),
        ("torch.cuda.current_stream()", torch.cuda.current_stream),
        ("C ABI through ctypes, outputs given", lambda: forward(
            0, code, code, rows, width, 0, x.data_ptr(), w.data_ptr(), None, None,
            y.data_ptr(), ctypes.cast(rstd.data_ptr(), ctypes.POINTER(ctypes.c_float)), 1e-6,
            stream)),
        ("x.data_ptr() x4", lambda: (x.data_ptr(), w.data_ptr(), y.data_ptr(), rstd.data_ptr())),
    ]
    if native is not None:
        shape = (width,)
        pieces.append((f"native rms_norm_call ({native.entry})",
                       lambda: native.rms_norm_call(x, shape, w, 1e-6, None)))
    pieces += [
        ("ptxdsl.torch.rms_norm", lambda: pt.rms_norm(x, (width,), w, 1e-6)),
        ("F.rms_norm (eager)", lambda: F.rms_norm(x, (width,), w, 1e-6)),
    ]
    print(f"\nhost µs of the pieces of a no-grad rms_norm forward, {rows} x {width} {dtype} "
          f"(each its own loop, grad off, the loops in turn)")
    print("| piece | µs |")
    print("|---|---:|")
    with torch.no_grad():
        times = host_us([fn for _, fn in pieces], calls)
    for (name, _), t in zip(pieces, times):
        print(f"| {name} | {t:.2f} |")


def breakdown_backward(rows, width, dtype, calls):
    """The C ABI's backwards through ctypes, their workspace from the library's pool or given,
    beside autograd's backward of ptxdsl.torch and of eager's norm (the graph kept)."""
    from ptxdsl import _lib
    x, r, w, b, dy = inputs(rows, width, dtype, False)
    code = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}[dtype]
    stream = torch.cuda.current_stream().cuda_stream
    y, dx, dw, db = (torch.empty_like(t) for t in (x, x, w, b))
    mean, rstd = (torch.empty(rows, device="cuda", dtype=torch.float32) for _ in range(2))
    p = lambda t: t.data_ptr()
    _lib.function("ptxdsl_layer_norm_forward")(0, code, code, rows, width, 0, p(x), p(w), p(b),
                                               None, None, p(y), p(mean), p(rstd), 1e-5, stream)
    ln, rms = (_lib.function(f"ptxdsl_{n}_norm_backward") for n in ("layer", "rms"))
    work = {n: _lib.workspace_bytes(0, c, code, code, width, rows)
            for n, c in (("ln", _lib.LAYER_NORM), ("rms", _lib.RMS_NORM))}
    space = torch.empty(max(work.values()) + 16, device="cuda", dtype=torch.uint8)

    def ln_call(given):
        return lambda: ln(0, code, code, rows, width, 0, p(dy), None, p(x), p(w), p(mean),
                          p(rstd), p(dx), p(dw), p(db), p(space) if given else None,
                          work["ln"] if given else 0, stream)

    def rms_call(given):
        return lambda: rms(0, code, code, rows, width, 0, p(dy), None, p(x), p(w), p(rstd),
                           p(dx), p(dw), p(space) if given else None,
                           work["rms"] if given else 0, stream)

    def autograd(fn, args):
        leaves = [t.detach().requires_grad_(True) for t in args]
        out = fn(*leaves)
        return lambda: torch.autograd.grad(out, leaves, dy, retain_graph=True)

    pieces = [
        ("C ABI layer_norm backward, the pool's workspace", ln_call(False)),
        ("C ABI layer_norm backward, workspace given", ln_call(True)),
        ("C ABI rms_norm backward, the pool's workspace", rms_call(False)),
        ("C ABI rms_norm backward, workspace given", rms_call(True)),
        ("ptxdsl.torch layer_norm, autograd backward", autograd(ptxdsl_ln, (x, w, b))),
        ("F.layer_norm, autograd backward", autograd(torch_ln, (x, w, b))),
        ("ptxdsl.torch rms_norm, autograd backward", autograd(ptxdsl_rms, (x, w))),
        ("F.rms_norm, autograd backward", autograd(torch_rms, (x, w))),
    ]
    times = host_us([fn for _, fn in pieces], calls)
    print(f"\nhost µs of backwards, {rows} x {width} {dtype} (the loops in turn)")
    print("| piece | µs |")
    print("|---|---:|")
    for (name, _), t in zip(pieces, times):
        print(f"| {name} | {t:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--dtype", default="bfloat16",
                        choices=["float32", "float16", "bfloat16"])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--decode", action="store_true")
    parser.add_argument("--breakdown", action="store_true")
    args = parser.parse_args()
    dtype = getattr(torch, args.dtype)
    if args.breakdown:
        breakdown(args.rows, args.width, dtype, args.calls)
        breakdown_backward(args.rows, args.width, dtype, args.calls)
        return
    table(args.rows, args.width, dtype, args.calls)
    if args.decode:
        decode(args.width, dtype, args.calls)
    if args.profile:
        profile(args.rows, args.width, dtype, args.calls)


if __name__ == "__main__":
    main()
