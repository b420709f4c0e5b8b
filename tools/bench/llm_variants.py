#!/usr/bin/env python3
"""The LLM norm variants (Gemma's 1 + w, Llama's casting, quantized outputs, per-head rows) against
a copy of their own bytes and against torch.compile of the same function written in torch as the
models write it, measured the same way, in one run.

    python3 tools/bench/llm_variants.py --ptxdsl build/tools/ptxdsl [--only TEXT] [--reps 100]

Ours: `ptxdsl bench` of the one case with the variant's options (checked against its float64 or
bit-exact model, timed by docs/benchmarks.md's method beside a copy of the same bytes). The peer:
torch.compile of the function below, timed by compare_peers.py's Timer (CUDA events, L2 flushed,
median). Prints: case, ours µs, ÷ copy and its target (cases moving ≥ 64 MB) or the small-case
bound, compile µs, compile ÷ ours.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_peers import Timer  # noqa: E402

EPS = 1e-6
HEADS, HEAD_DIM = 32, 128  # per-head cases: q and k of a fused QKV buffer, 3·HEADS·HEAD_DIM wide


def torch_functions(torch):
    """name -> (forward(x, w, extra) in torch as the model writes it, what extra is)."""
    F = torch.nn.functional

    def gemma(x, w):  # Hugging Face's GemmaRMSNorm: f32 throughout, (1 + w), one rounding
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)
        return (xf * (1.0 + w.float())).type_as(x)

    def llama(x, w):  # Hugging Face's LlamaRMSNorm: x̂ rounded to x's dtype, then × w
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)
        return w * xf.to(x.dtype)

    def per_token(fmt, top):  # vLLM's rms_norm + dynamic per-token quantization
        def quantize(x, w):
            y = F.rms_norm(x.float(), (x.shape[-1],), w.float(), EPS)
            scale = y.abs().amax(-1, keepdim=True) / top
            q = (y / scale).clamp(-top, top)
            return (q.round() if fmt == torch.int8 else q).to(fmt), scale
        return quantize

    def with_residual(norm):
        def fwd(x, w, residual):
            h = x + residual
            return norm(h, w), h
        return fwd

    def qk_norm(qkv, w):  # per-head RMS norm of q and k inside the fused buffer
        t = qkv.shape[0]
        return F.rms_norm(qkv[:, :2 * HEADS * HEAD_DIM].view(t, 2 * HEADS, HEAD_DIM), (HEAD_DIM,),
                          w, EPS)

    return {
        "gemma": gemma, "llama": llama, "gemma+res": with_residual(gemma),
        "llama+res": with_residual(llama),
        "fp8-e4m3": per_token(torch.float8_e4m3fn, 448.0),
        "int8": per_token(torch.int8, 127.0),
        "fp8-e4m3+res": with_residual(per_token(torch.float8_e4m3fn, 448.0)),
        "per-head": qk_norm,
    }


# (variant, kernel, ptxdsl bench options)
VARIANTS = [
    ("gemma", "rms_fwd", ["--weight-offset", "1", "--casting", "gemma"]),
    ("gemma", "rms_bwd", ["--weight-offset", "1", "--casting", "gemma"]),
    ("llama", "rms_fwd", ["--casting", "llama"]),
    ("llama", "rms_bwd", ["--casting", "llama"]),
    ("gemma+res", "rms_fwd", ["--weight-offset", "1", "--casting", "gemma", "--residual", "add"]),
    ("llama+res", "rms_fwd", ["--casting", "llama", "--residual", "add"]),
    ("fp8-e4m3", "rms_fwd", ["--quant", "fp8-e4m3"]),
    ("int8", "rms_fwd", ["--quant", "int8"]),
    ("fp8-e4m3+res", "rms_fwd", ["--quant", "fp8-e4m3", "--residual", "add"]),
    ("per-head", "rms_fwd", ["--row-groups", str(2 * HEADS), "--group-stride", str(HEAD_DIM),
                             "--stride", str(3 * HEADS * HEAD_DIM)]),
    ("per-head", "rms_bwd", ["--row-groups", str(2 * HEADS), "--group-stride", str(HEAD_DIM),
                             "--stride", str(3 * HEADS * HEAD_DIM)]),
]
SHAPES = [(8192, 4096), (8, 4096)]  # (tokens, hidden): one case ≥ 64 MB, one decode-sized


def ours(ptxdsl, kernel, rows, width, options, reps):
    """ptxdsl bench's record of the case, or None where it failed (its message on stderr)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "case.json")
        cmd = [ptxdsl, "bench", kernel, "--dtype", "bf16", "--batch", str(rows), "--width",
               str(width), "--reps", str(reps), "--json", out] + options
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0 or not os.path.exists(out):
            print(f"  {' '.join(cmd)}: exit {done.returncode}\n{done.stdout}{done.stderr}",
                  file=sys.stderr)
            return None
        with open(out) as f:
            return json.load(f)["cases"][0]


def peer_us(torch, timer, fn, kernel, inputs):
    """torch.compile of fn: its forward under no_grad, or autograd's backward of one forward."""
    compiled = torch.compile(fn, dynamic=False)
    if kernel.endswith("fwd"):
        with torch.no_grad():
            return timer(lambda: compiled(*inputs))
    x, w = (t.detach().requires_grad_(True) for t in inputs[:2])
    y = compiled(x, w, *inputs[2:])
    dy = torch.randn_like(y) * 0.1
    return timer(lambda: torch.autograd.grad(y, (x, w), dy, retain_graph=True))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ptxdsl", default=os.environ.get("PTXDSL", "build/tools/ptxdsl"))
    p.add_argument("--only", default="")
    p.add_argument("--reps", type=int, default=100)
    args = p.parse_args()
    import torch
    torch._dynamo.config.cache_size_limit = 1024
    timer = Timer(torch, args.reps, 10, 25)
    functions = torch_functions(torch)
    print(f"{torch.cuda.get_device_name()}; bf16 rows and weights; medians of {timer.reps} reps, "
          "L2 flushed")
    print("| case | ours µs | ÷ copy (target) or bound µs | compile µs | compile ÷ ours |")
    print("|---|---:|---:|---:|---:|")
    failed = 0
    for variant, kernel, options in VARIANTS:
        for tokens, hidden in SHAPES:
            per_head = variant == "per-head"
            rows, width = (tokens * 2 * HEADS, HEAD_DIM) if per_head else (tokens, hidden)
            name = f"{kernel} {variant} {tokens}x{hidden}"
            if args.only not in name:
                continue
            record = ours(args.ptxdsl, kernel, rows, width, options, args.reps)
            g = torch.Generator(device="cuda").manual_seed(1)
            x = (0.3 * torch.randn(tokens, 3 * HEADS * HEAD_DIM if per_head else hidden,
                                   generator=g, device="cuda")).bfloat16()
            w = (0.1 * torch.randn(width, generator=g, device="cuda")).bfloat16()
            inputs = (x, w) + ((torch.randn_like(x) * 0.3,) if "+res" in variant else ())
            compiled = peer_us(torch, timer, functions[variant], kernel, inputs)
            if record is None or not record.get("pass", True):
                failed += 1
                print(f"| {name} | FAIL | | {compiled:.1f} | |", flush=True)
                continue
            us = record["us"]
            bound = (f"{record['copy_ratio']:.2f} ({record['target_copy_ratio']:.2f})"
                     if record.get("target_copy_ratio") else
                     f"{record.get('small_target_us', 0):.1f}")
            print(f"| {name} | {us:.1f} | {bound} | {compiled:.1f} | {compiled / us:.2f} |",
                  flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
