#!/usr/bin/env python3
"""The GEMM kernel tool's kernels against torch.matmul (cuBLAS), measured the same way, in one run.

    python3 tools/bench/gemm_vs_cublas.py --gemm build/docs/examples/gemm [--reps 100]
        [--kernels gemm:sm_90,gemm_sm90:sm_90a] [--shapes 4096x4096x4096,8192x8192x8192]

For each shape and kernel: the tool emits the kernel and its launch contract (`emit --json -o`),
CuPy loads the PTX, the driver encodes the tensor maps the contract lists over torch's bf16
tensors (cuTensorMapEncodeTiled through ctypes), and cuLaunchKernel launches it (C = A·Bᵀ);
the result is checked against
torch.matmul(a, b.T) (a float32 reference: relative Frobenius error ≤ 1e-2); then both are timed
by the norms' method (compare_peers.py's Timer: CUDA events around each call, warm-up, L2 flushed,
the median of --reps, at least 100). Prints µs, TFLOP/s
(2·m·n·k over the time) and ours ÷ cuBLAS; exits 1 if a result is wrong.
"""

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile

import cupy as cp
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_peers import Timer  # noqa: E402

SHAPES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
          (8192, 4096, 4096), (8192, 14336, 4096), (8192, 4096, 14336), (1000, 776, 520)]
KERNELS = "gemm:sm_90,gemm_sm90:sm_90a"

_driver = ctypes.CDLL("libcuda.so.1")
# cuda.h's CUtensorMapDataType and CUtensorMapSwizzle values.
TENSOR_MAP_TYPES = {"u8": 0, "u16": 1, "u32": 2, "s32": 3, "u64": 4, "s64": 5, "f16": 6,
                    "f32": 7, "f64": 8, "bf16": 9, "e4m3": 0, "e5m2": 0}
SWIZZLES = {0: 0, 32: 1, 64: 2, 128: 3}
L2_PROMOTIONS = {0: 0, 64: 1, 128: 2, 256: 3}


def check(result, what):
    if result != 0:
        raise RuntimeError(f"{what} failed with CUresult {result}")


def tensor_map(desc, address):
    """A CUtensorMap (128 bytes, 128-byte aligned) of `desc` (emit --json's) at `address`."""
    storage = (ctypes.c_uint8 * 256)()
    at = (ctypes.addressof(storage) + 127) // 128 * 128
    rank = len(desc["dims"])
    u64s, u32s = ctypes.c_uint64 * 5, ctypes.c_uint32 * 5
    check(_driver.cuTensorMapEncodeTiled(
        ctypes.c_void_p(at), TENSOR_MAP_TYPES[desc["element"]], rank, ctypes.c_void_p(address),
        u64s(*desc["dims"]), u64s(*desc["strides_bytes"]), u32s(*desc["box"]), u32s(*[1] * rank),
        0, SWIZZLES[desc["swizzle_bytes"]], L2_PROMOTIONS[desc.get("l2_promotion_bytes", 0)],
        1 if desc["nan_fill"] else 0),
        f"cuTensorMapEncodeTiled {desc}")
    return storage, at


def emit(gemm, kernel, m, n, k, arch):
    ptx = os.path.join(tempfile.mkdtemp(), f"{kernel}.ptx")
    cmd = [gemm, "emit", kernel, "--m", str(m), "--n", str(n), "--k", str(k), "--arch", arch,
           "--json", "-o", ptx]
    contract = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    contract["ptx_file"] = ptx
    return contract


def launcher(contract, pointers):
    """Launches the contract's steps on `pointers` (by buffer name) through cuLaunchKernel: each
    parameter a pointer's address or a tensor map's bytes."""
    module = cp.RawModule(path=contract["ptx_file"])
    maps = {name: tensor_map(desc, pointers[desc["buffer"]])
            for name, desc in contract.get("tensor_maps", {}).items()}
    steps = []
    for step in contract["steps"]:
        function = module.get_function(step["entry"])
        if step["dynamic_shared_bytes"] > 48 * 1024:
            function.max_dynamic_shared_size_bytes = step["dynamic_shared_bytes"]
        values = [maps[p["name"]] if p.get("tensor_map") else ctypes.c_uint64(pointers[p["name"]])
                  for p in step["params"]]
        params = (ctypes.c_void_p * len(values))(
            *[v[1] if isinstance(v, tuple) else ctypes.addressof(v) for v in values])
        # CuPy's RawKernel holds its CUfunction in .kernel (a cupy.cuda.function.Function).
        handle = function.kernel.ptr if hasattr(function, "kernel") else function.ptr
        steps.append((handle, step["grid"], step["block"], step["dynamic_shared_bytes"],
                      values, params))

    def run():
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        for handle, grid, block, shared, _, params in steps:
            check(_driver.cuLaunchKernel(ctypes.c_void_p(handle), *grid, *block, shared,
                                         stream, params, None), "cuLaunchKernel")
    return run


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gemm", default="build/docs/examples/gemm")
    p.add_argument("--kernels", default=KERNELS,
                   help=f"KERNEL:ARCH, comma-separated (default {KERNELS})")
    p.add_argument("--shapes", default=None,
                   help="MxNxK, comma-separated (default: the issue's squares and LLM shapes)")
    p.add_argument("--reps", type=int, default=100)
    args = p.parse_args()
    kernels = [tuple(k.split(":")) for k in args.kernels.split(",")]
    shapes = SHAPES if args.shapes is None else [
        tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    timer = Timer(torch, args.reps, 10, 25)
    print(f"{torch.cuda.get_device_name()}: {', '.join(f'{k} ({a})' for k, a in kernels)} "
          f"against torch.matmul (cuBLAS), bf16 in, bf16 out, medians of {timer.reps}")
    print("| m × n × k | kernel | ours µs | ours TFLOP/s | cuBLAS µs | cuBLAS TFLOP/s | "
          "ours ÷ cuBLAS |")
    print("|---|---|---:|---:|---:|---:|---:|")
    wrong = 0
    for m, n, k in shapes:
        torch.manual_seed(m + n + k)
        a = torch.randn(m, k, device="cuda").bfloat16()
        b = torch.randn(n, k, device="cuda").bfloat16()
        want = a.float() @ b.float().T
        theirs = timer(lambda: torch.matmul(a, b.T))
        flops = 2.0 * m * n * k
        for kernel, arch in kernels:
            c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
            run = launcher(emit(args.gemm, kernel, m, n, k, arch),
                           {"a": a.data_ptr(), "b": b.data_ptr(), "c": c.data_ptr()})
            run()
            torch.cuda.synchronize()
            error = ((c.float() - want).norm() / want.norm()).item()
            ours = timer(run)
            ok = error <= 1e-2
            wrong += not ok
            print(f"| {m} × {n} × {k} | {kernel} | {ours:.1f} | {flops / ours / 1e6:.1f} | "
                  f"{theirs:.1f} | {flops / theirs / 1e6:.1f} | {theirs / ours:.2f} |"
                  + ("" if ok else f" WRONG (relative error {error:.2e})"), flush=True)
            del c
        del a, b, want
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
