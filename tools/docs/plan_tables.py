#!/usr/bin/env python3
"""Prints the norms' plans by width from what the rules choose and ptxas reports.

    python3 tools/docs/plan_tables.py build/tools/ptxdsl > tables.md

For each of ln_fwd/ln_bwd in f16 and f32, one row per width: threads a row (T), rows a CTA (R),
chunks, chunks of x (and dy) in registers, of dw/db partials in registers, dynamic shared memory,
registers (ptxas, sm_90), the prefetch setting (backward: none, the next row, or two rows through
the shared ring; forward: the batches for which the runtime launches the prefetching variant) and
the grid rule. Needs ptxas on PATH (or
/usr/local/cuda/bin).
"""

import json
import subprocess
import sys

WIDTHS = [1, 32, 100, 256, 1024, 2048, 4096, 8192, 12288, 16384, 32768, 65536]


def plan(cli, kernel, dtype, width):
    args = [kernel, "--dtype", dtype, "--width", str(width)]
    emitted = json.loads(subprocess.run([cli, "emit", *args, "--json"], check=True,
                                        capture_output=True, text=True).stdout)
    checked = subprocess.run([cli, "check", *args], check=True, capture_output=True,
                             text=True).stdout.strip().splitlines()
    registers = checked[-1].split()[1]  # the first step's entry is listed first
    for line in checked:
        fields = line.split()
        if fields and fields[0] == emitted["steps"][0]["entry"]:
            registers = fields[1]
    return emitted, registers


def main():
    cli = sys.argv[1] if len(sys.argv) > 1 else "build/tools/ptxdsl"
    for kernel in ("ln_fwd", "ln_bwd"):
        for dtype in ("f16", "f32"):
            backward = kernel.endswith("bwd")
            print(f"### {kernel} {dtype}")
            head = ["width", "T", "R", "block", "chunks", "in regs"]
            head += ["acc regs"] if backward else []
            head += ["shared B", "regs", "prefetch", "grid"]
            print("| " + " | ".join(head) + " |")
            print("|" + "---|" * len(head))
            for width in WIDTHS:
                e, regs = plan(cli, kernel, dtype, width)
                c = e["chosen"]
                step = e["steps"][0]
                t, r = c["threads_per_row"], c["rows_per_cta"]
                chunks = -(-(-(-width // c["vector_elems"])) // t)
                row = [width, t, r, t * r, chunks, c["register_chunks"]]
                row += [c["accumulator_register_chunks"]] if backward else []
                prefetch = ["no", "next row", "2 rows, ring"][c["prefetch_rows"]]
                if c["prefetch_rows"] == 1 and c["register_chunks"] == 0:
                    prefetch = "next row, cp.async"
                if not backward:
                    prefetch = f"batch ≤ {e['prefetch_batch_limit']}" if e["prefetch_batch_limit"] \
                        else "no"
                row += [step["dynamic_shared_bytes"], regs, prefetch, step["grid_rule"]["grid_x"]]
                print("| " + " | ".join(str(v) for v in row) + " |")


if __name__ == "__main__":
    main()
