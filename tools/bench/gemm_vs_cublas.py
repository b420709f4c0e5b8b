#!/usr/bin/env python3
"""The GEMM kernel tool's kernels against torch.matmul (cuBLAS), measured the same way, in one run.

    python3 tools/bench/gemm_vs_cublas.py --gemm build/docs/examples/gemm [--reps 100]

For each shape: the tool emits the kernel and its launch contract (`emit --json -o`), CuPy loads
the PTX and launches it on torch's bf16 tensors (C = A·Bᵀ); the result is checked against
torch.matmul(a, b.T) (a float32 reference: relative Frobenius error ≤ 1e-2); then both are timed
by the norms' method (compare_peers.py's Timer: CUDA events around each call, warm-up, L2 flushed,
the median of --reps, at least 100). Prints µs, TFLOP/s
(2·m·n·k over the time) and ours ÷ cuBLAS; exits 1 if a result is wrong.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import cupy as cp
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_peers import Timer  # noqa: E402

SHAPES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
          (8192, 4096, 4096), (8192, 14336, 4096), (8192, 4096, 14336), (1000, 776, 520)]


def emit(gemm, kernel, m, n, k, arch):
    ptx = os.path.join(tempfile.mkdtemp(), f"{kernel}.ptx")
    cmd = [gemm, "emit", kernel, "--m", str(m), "--n", str(n), "--k", str(k), "--arch", arch,
           "--json", "-o", ptx]
    contract = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    contract["ptx_file"] = ptx
    return contract


def launcher(contract, pointers):
    module = cp.RawModule(path=contract["ptx_file"])
    steps = []
    for step in contract["steps"]:
        function = module.get_function(step["entry"])
        if step["dynamic_shared_bytes"] > 48 * 1024:
            function.max_dynamic_shared_size_bytes = step["dynamic_shared_bytes"]
        args = tuple(np.uint64(pointers[p["name"]]) for p in step["params"])
        steps.append((function, tuple(step["grid"]), tuple(step["block"]), args,
                      step["dynamic_shared_bytes"]))

    def run():
        for function, grid, block, args, shared in steps:
            function(grid, block, args, shared_mem=shared)
    return run


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gemm", default="build/docs/examples/gemm")
    p.add_argument("--kernel", default="gemm")
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--reps", type=int, default=100)
    args = p.parse_args()
    timer = Timer(torch, args.reps, 10, 25)
    print(f"{torch.cuda.get_device_name()}: {args.kernel} ({args.arch}) against torch.matmul "
          f"(cuBLAS), bf16 in, bf16 out, medians of {timer.reps}")
    print("| m × n × k | ours µs | ours TFLOP/s | cuBLAS µs | cuBLAS TFLOP/s | ours ÷ cuBLAS |")
    print("|---|---:|---:|---:|---:|---:|")
    wrong = 0
    for m, n, k in SHAPES:
        torch.manual_seed(m + n + k)
        a = torch.randn(m, k, device="cuda").bfloat16()
        b = torch.randn(n, k, device="cuda").bfloat16()
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        run = launcher(emit(args.gemm, args.kernel, m, n, k, args.arch),
                       {"a": a.data_ptr(), "b": b.data_ptr(), "c": c.data_ptr()})
        run()
        torch.cuda.synchronize()
        want = a.float() @ b.float().T
        error = ((c.float() - want).norm() / want.norm()).item()
        ours = timer(run)
        theirs = timer(lambda: torch.matmul(a, b.T))
        flops = 2.0 * m * n * k
        ok = error <= 1e-2
        wrong += not ok
        print(f"| {m} × {n} × {k} | {ours:.1f} | {flops / ours / 1e6:.1f} | {theirs:.1f} | "
              f"{flops / theirs / 1e6:.1f} | {theirs / ours:.2f} |"
              + ("" if ok else f" WRONG (relative error {error:.2e})"), flush=True)
        del a, b, c, want
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
