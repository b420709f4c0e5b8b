#!/usr/bin/env python3
"""The copy floor at the sizes of the suite: how fast a device-to-device copy of a case's bytes runs.

BENCHMARKS.md scores each case against the copy bandwidth of 1 GiB. A copy of a suite case's size
(64-256 MB moved) pays the same launch, ramp-up and tail as a norm kernel, so it shows how close to
that bandwidth any kernel moving those bytes can come. Measured as compare_peers.py measures (CUDA
events, 256 MB written before every repetition, median of >= 100).

    python3 tools/bench/copy_floor.py [--mb 64 128 256 ...]

Prints, per size (bytes read + written): µs, GB/s and % of the 1 GiB copy's bandwidth.
"""

import argparse
import sys

from compare_peers import Timer


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # The suite's forwards and backwards move 16-400 MB (read + written).
    p.add_argument("--mb", type=float, nargs="+", default=[16, 32, 64, 96, 128, 192, 256, 384, 512])
    p.add_argument("--reps", type=int, default=100)
    args = p.parse_args()
    import torch

    timer = Timer(torch, args.reps, 10, 25)  # as compare_peers: 10 calls and 25 ms of warm-up

    def copy_us(moved_bytes):
        # Whole 4 KiB: the driver's copy runs 4-11% slower on other sizes (ptxdsl bench does the same).
        half = int(moved_bytes // 2) // 4096 * 4096
        src = torch.empty(half, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        src.fill_(1)
        return timer(lambda: dst.copy_(src)), 2 * half

    gib_us, gib_bytes = copy_us(1 << 30)
    bandwidth = gib_bytes / gib_us / 1e3  # GB/s
    print(f"copy of 1 GiB (read + written): {gib_us:.1f} us, {bandwidth:.0f} GB/s")
    print(f"{'moved MB':>9} {'us':>8} {'GB/s':>7} {'% of 1 GiB copy':>16}")
    for mb in args.mb:
        us, moved = copy_us(mb * 1e6)
        gbs = moved / us / 1e3
        print(f"{mb:9.0f} {us:8.1f} {gbs:7.0f} {100 * gbs / bandwidth:15.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
