#!/usr/bin/env python3
"""Launch ptxdsl's PTX from CuPy by its `emit --json` contract alone (docs/cli.md, "emit").

    python3 docs/examples/cupy_launch.py [--ptxdsl build/tools/ptxdsl]

Emits RMS norm forward kernels, loads each PTX with cupy.RawModule and launches it the way the
contract says: parameters in its order and types, its block and grid, and its alignment rules
(each pointer's `align`, the stride's `multiple`). Tensors whose addresses or stride break a rule
get a kernel with narrower vectors (`--vector-elems`) instead of a misaligned-address fault, which
would end the CUDA context. Every output is checked against a float64 reference; prints PASS or
FAIL and exits non-zero on FAIL.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import cupy as cp
import numpy as np

EPS = 1e-5
DTYPES = {"f32": cp.float32, "f16": cp.float16}


def emit(ptxdsl, width, dtype, batch, vector_elems=None):
    """The contract for `batch` rows; the PTX goes to a file of its own (contract["ptx_file"]),
    which is what cupy.RawModule(path=...) loads."""
    ptx = os.path.join(tempfile.mkdtemp(), "kernel.ptx")
    cmd = [ptxdsl, "emit", "rms_fwd", "--width", str(width), "--dtype", dtype, "--json",
           "--batch", str(batch), "-o", ptx]
    if vector_elems:
        cmd += ["--vector-elems", str(vector_elems)]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def breaks_rules(step, pointers, scalars):
    """The contract's alignment rules this launch would break, as sentences (empty: none)."""
    broken = []
    for p in step["params"]:
        if p["pointer"] and pointers[p["name"]] % p["align"] != 0:
            broken.append(f"{p['name']} at 0x{pointers[p['name']]:x} is not {p['align']}-byte aligned")
        if not p["pointer"] and "multiple" in p and scalars[p["name"]] % p["multiple"] != 0:
            broken.append(f"{p['name']} = {scalars[p['name']]} is not a multiple of {p['multiple']}")
    return broken


def launch(contract, pointers, scalars):
    module = cp.RawModule(path=contract["ptx_file"])
    for step in contract["steps"]:
        kernel = module.get_function(step["entry"])
        types = {"u32": np.uint32, "u64": np.uint64, "f32": np.float32}
        args = [np.uint64(pointers[p["name"]]) if p["pointer"] else types[p["type"]](scalars[p["name"]])
                for p in step["params"]]
        kernel(tuple(step["grid"]), tuple(step["block"]), tuple(args),
               shared_mem=step["dynamic_shared_bytes"])


def run_case(ptxdsl, batch, width, stride, dtype):
    rng = np.random.default_rng(batch * 7919 + width)
    storage = cp.asarray(rng.standard_normal((batch, stride)) * 0.3).astype(DTYPES[dtype])
    x = storage[:, :width]  # rows `stride` elements apart
    w = cp.asarray(1 + 0.1 * rng.standard_normal(width)).astype(DTYPES[dtype])
    y = cp.full((batch, stride), cp.nan, dtype=DTYPES[dtype])
    rstd = cp.full(batch, cp.nan, dtype=cp.float32)
    pointers = {"x": x.data.ptr, "w": w.data.ptr, "y": y.data.ptr, "rstd": rstd.data.ptr}
    scalars = {"batch": batch, "stride": stride, "eps": EPS}

    contract = emit(ptxdsl, width, dtype, batch)
    broken = breaks_rules(contract["steps"][0], pointers, scalars)
    note = ""
    if broken:  # narrower vectors: the widest that the rules of this launch allow
        elems = contract["chosen"]["vector_elems"]
        while broken and elems > 1:
            elems //= 2
            contract = emit(ptxdsl, width, dtype, batch, elems)
            broken = breaks_rules(contract["steps"][0], pointers, scalars)
        note = f" (vectors of {elems}: the widest vectors' rules were broken)"
    if broken:
        print(f"FAIL {dtype} {batch}x{width} stride {stride}: " + "; ".join(broken))
        return False
    launch(contract, pointers, scalars)

    x64 = x.astype(cp.float64)
    ref_rstd = 1 / cp.sqrt((x64 * x64).mean(axis=1) + EPS)
    ref = x64 * ref_rstd[:, None] * w.astype(cp.float64)
    err = float(cp.abs(y[:, :width].astype(cp.float64) - ref).max())
    bound = 1e-5 if dtype == "f32" else 2e-2
    ok = math.isfinite(err) and err <= bound and bool(cp.isfinite(rstd).all())
    print(f"{'PASS' if ok else 'FAIL'} {dtype} {batch}x{width} stride {stride}{note}: "
          f"max |y - ref| {err:.2e} (bound {bound:.0e})")
    return ok


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ptxdsl", default=os.environ.get("PTXDSL_CLI", "build/tools/ptxdsl"))
    args = p.parse_args()
    cases = [(1000, 4096, 4096, "f16"), (37, 31, 31, "f32"), (64, 1000, 1003, "f16"),
             (5, 4100, 4104, "f32")]
    results = [run_case(args.ptxdsl, *c) for c in cases]
    print("PASS" if all(results) else "FAIL")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
