#!/usr/bin/env python3
"""A real training step with ptxdsl's norms in a model (docs/python.md).

    PYTHONPATH=<prefix>/lib/python python3 docs/examples/train_step.py

A small pre-norm transformer-style MLP stack in bfloat16: each block's norm is swapped for
ptxdsl.torch.RMSNorm (`block.norm = ptxdsl.torch.RMSNorm(...)`), the residual stream is added and
normalized in one kernel (rms_norm(..., residual=)), and the model trains with AdamW under
torch.compile(fullgraph=True). The same model with torch.nn.RMSNorm trains beside it from the same
weights on the same batches: the losses must agree within bf16's noise, and both must fall. Prints
PASS or FAIL; exits 77 without torch or a GPU.
"""

import copy
import sys

try:
    import torch
except ImportError:
    print("skipped: no torch")
    sys.exit(77)
if not torch.cuda.is_available():
    print("skipped: no CUDA device")
    sys.exit(77)

import ptxdsl.torch as pt

WIDTH, HIDDEN, BLOCKS, BATCH, STEPS = 1024, 2816, 4, 2048, 30


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.RMSNorm(WIDTH, eps=1e-6)
        self.up = torch.nn.Linear(WIDTH, HIDDEN, bias=False)
        self.down = torch.nn.Linear(HIDDEN, WIDTH, bias=False)

    def forward(self, x, residual):
        # Pre-norm: h = x + residual is the new residual stream; the MLP sees norm(h).
        if isinstance(self.norm, pt.RMSNorm):
            y, h = pt.rms_norm(x, (WIDTH,), self.norm.weight, self.norm.eps, residual=residual)
        else:
            h = x + residual
            y = self.norm(h)
        return self.down(torch.nn.functional.silu(self.up(y))), h


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block() for _ in range(BLOCKS))
        self.final = torch.nn.RMSNorm(WIDTH, eps=1e-6)

    def forward(self, x):
        residual = torch.zeros_like(x)
        for block in self.blocks:
            x, residual = block(x, residual)
        return self.final(x + residual)


def use_ptxdsl(model):
    """The swap a user makes: every torch.nn.RMSNorm becomes ptxdsl's, weights kept."""
    for block in model.blocks:
        norm = pt.RMSNorm(WIDTH, eps=block.norm.eps, device="cuda", dtype=torch.bfloat16)
        norm.load_state_dict(block.norm.state_dict())
        block.norm = norm
    final = pt.RMSNorm(WIDTH, eps=model.final.eps, device="cuda", dtype=torch.bfloat16)
    final.load_state_dict(model.final.state_dict())
    model.final = final
    return model


def train(model, batches, targets):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_of = torch.compile(lambda x, t: torch.nn.functional.mse_loss(model(x).float(), t),
                            fullgraph=True)
    losses = []
    for x, t in zip(batches, targets):
        loss = loss_of(x, t)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


# ---- --bench: a Llama-shaped block, timed eager, compiled and compiled with CUDA graphs ----
# Hidden 4096, 32 heads, SwiGLU MLP of 11008, 2 layers, 8 x 1024 tokens in bfloat16; each norm is
# Hugging Face's LlamaRMSNorm as it writes it (f32 inside, cast back, times the weight).
L_HIDDEN, L_HEADS, L_MLP, L_LAYERS, L_BATCH, L_SEQ = 4096, 32, 11008, 2, 8, 1024


class LlamaRMSNorm(torch.nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class LlamaLayer(torch.nn.Module):
    """Pre-norm attention (scaled dot-product, causal; no rotary: a stand-in) and SwiGLU MLP, with
    the residual stream added before each norm as Hugging Face's decoder layer does."""

    def __init__(self):
        super().__init__()
        self.input_layernorm = LlamaRMSNorm(L_HIDDEN)
        self.qkv = torch.nn.Linear(L_HIDDEN, 3 * L_HIDDEN, bias=False)
        self.o = torch.nn.Linear(L_HIDDEN, L_HIDDEN, bias=False)
        self.post_attention_layernorm = LlamaRMSNorm(L_HIDDEN)
        self.gate_up = torch.nn.Linear(L_HIDDEN, 2 * L_MLP, bias=False)
        self.down = torch.nn.Linear(L_MLP, L_HIDDEN, bias=False)

    def norm(self, which, x, residual):
        """(norm(x + residual), x + residual): ptxdsl's fused kernel once the norms are swapped."""
        if isinstance(which, pt.RMSNorm):
            return pt.rms_norm(x, (L_HIDDEN,), which.weight, which.eps, residual=residual)
        h = x + residual
        return which(h), h

    def forward(self, x, residual):
        y, residual = self.norm(self.input_layernorm, x, residual)
        b, s, _ = y.shape
        q, k, v = self.qkv(y).view(b, s, 3, L_HEADS, -1).permute(2, 0, 3, 1, 4)
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = self.o(a.transpose(1, 2).reshape(b, s, L_HIDDEN))
        y, residual = self.norm(self.post_attention_layernorm, x, residual)
        gate, up = self.gate_up(y).chunk(2, dim=-1)
        return self.down(torch.nn.functional.silu(gate) * up), residual


class Llama(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(LlamaLayer() for _ in range(L_LAYERS))
        self.norm = LlamaRMSNorm(L_HIDDEN)

    def forward(self, x):
        residual = torch.zeros_like(x)
        for layer in self.layers:
            x, residual = layer(x, residual)
        return self.norm(x + residual)


def swap_llama_norms(model):
    """Every LlamaRMSNorm becomes ptxdsl.torch.RMSNorm (same weight): the eager user's swap."""
    for parent in [model, *model.layers]:
        for name, child in list(parent.named_children()):
            if isinstance(child, LlamaRMSNorm):
                norm = pt.RMSNorm(L_HIDDEN, eps=child.variance_epsilon, device="cuda",
                                  dtype=torch.bfloat16)
                norm.load_state_dict(child.state_dict())
                setattr(parent, name, norm)
    return model


def step_ms(model, mode, x, dy, steps=20):
    """Median ms of a forward + backward step (no optimizer: it does not touch the norms)."""
    run = model if mode == "eager" else torch.compile(
        model, mode="reduce-overhead" if mode == "reduce-overhead" else None)

    def step():
        for p in model.parameters():
            p.grad = None
        run(x).backward(dy)

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


class AddNorm(torch.nn.Module):
    """One of the block's norms as it writes it: the residual add, then LlamaRMSNorm."""

    def __init__(self):
        super().__init__()
        self.norm = LlamaRMSNorm(L_HIDDEN)

    def forward(self, x, residual):
        h = x + residual
        return self.norm(h), h


def norms_ms(fused):
    """Median ms of the block's 2·L_LAYERS + 1 residual-add norms alone, forward + backward,
    compiled with CUDA graphs (the kernels' time alone, no host time) with the fusion pass
    (ptxdsl's kernels) or without (Inductor's): their difference bounds what ptxdsl's kernels can
    take off the compiled step."""
    import ptxdsl.inductor as fusion
    (fusion.enable_inductor_fusion if fused else fusion.disable_inductor_fusion)()
    torch._dynamo.reset()
    norm = AddNorm().to("cuda", torch.bfloat16)
    run = torch.compile(norm, mode="reduce-overhead")
    shape = (L_BATCH, L_SEQ, L_HIDDEN)
    x, r = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            for _ in range(2))
    dy, dh = torch.randn(shape, device="cuda", dtype=torch.bfloat16), torch.randn(
        shape, device="cuda", dtype=torch.bfloat16)

    leaves = (x, r, *norm.parameters())

    def step():
        # Gradients returned, not accumulated: .grad of a graph's earlier output is overwritten
        # memory once the next replay begins.
        torch.compiler.cudagraph_mark_step_begin()
        y, h = run(x, r)
        torch.autograd.grad((y, h), leaves, (dy, dh))

    for _ in range(5):
        step()
    times = []
    for _ in range(20):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(2 * L_LAYERS + 1):
            step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    fusion.disable_inductor_fusion()
    return sorted(times)[len(times) // 2]


def bench():
    import ptxdsl.inductor as fusion
    torch.manual_seed(0)
    model = Llama().to("cuda", torch.bfloat16)
    swapped = swap_llama_norms(copy.deepcopy(model))
    x = torch.randn(L_BATCH, L_SEQ, L_HIDDEN, device="cuda", dtype=torch.bfloat16)
    dy = torch.randn_like(x)
    # The same outputs first: the fused model against torch's, compiled, from the same weights.
    fusion.enable_inductor_fusion()
    torch._dynamo.reset()
    with torch.no_grad():
        got = torch.compile(model)(x).float()
    fusion.disable_inductor_fusion()
    torch._dynamo.reset()
    with torch.no_grad():
        want = torch.compile(model)(x).float()
    error = ((got - want).norm() / want.norm()).item()
    print(f"Llama-shaped block, {L_LAYERS} layers, hidden {L_HIDDEN}, {L_BATCH} x {L_SEQ} tokens, "
          f"bf16, forward + backward ({torch.cuda.get_device_name()})")
    print(f"compiled with the fusion pass against without: relative error {error:.2e}, "
          f"norms replaced {fusion.replaced}")
    print("| mode | torch's norms (ms) | ptxdsl's norms (ms) | speed-up |")
    print("|---|---:|---:|---:|")
    ok = error < 2e-2
    for mode in ("eager", "compile", "reduce-overhead"):
        torch._dynamo.reset()
        ours_model = swapped if mode == "eager" else model
        theirs = step_ms(model, mode, x, dy)
        if mode != "eager":
            fusion.enable_inductor_fusion()
            torch._dynamo.reset()
        ours = step_ms(ours_model, mode, x, dy)
        fusion.disable_inductor_fusion()
        print(f"| {mode} | {theirs:.2f} | {ours:.2f} | {theirs / ours:.3f}x |", flush=True)
        if mode == "compile":
            compiled_step = theirs
    theirs, ours = norms_ms(False), norms_ms(True)
    print(f"the {2 * L_LAYERS + 1} residual-add norms alone, in CUDA graphs, forward + backward: "
          f"Inductor's {theirs:.2f} ms, ptxdsl's {ours:.2f} ms; swapping them can take at most "
          f"{(theirs - ours) / compiled_step * 100:.1f}% off the compiled step")
    return 0 if ok else 1


def main():
    if "--bench" in sys.argv[1:]:
        return bench()
    torch.manual_seed(0)
    reference = Model().to("cuda", torch.bfloat16)
    ours = use_ptxdsl(copy.deepcopy(reference))
    teacher = torch.nn.Linear(WIDTH, WIDTH, device="cuda")
    batches = [torch.randn(BATCH, WIDTH, device="cuda", dtype=torch.bfloat16) for _ in range(STEPS)]
    with torch.no_grad():
        targets = [torch.tanh(teacher(x.float())) for x in batches]
    want = train(reference, batches, targets)
    got = train(ours, batches, targets)
    worst = max(abs(a - b) / max(abs(b), 1e-6) for a, b in zip(got, want))
    falls = got[-1] < 0.8 * got[0]
    print(f"loss {got[0]:.4f} -> {got[-1]:.4f} with ptxdsl.torch.RMSNorm; torch.nn.RMSNorm "
          f"{want[0]:.4f} -> {want[-1]:.4f}; worst relative difference {worst:.3f}")
    ok = falls and worst < 0.05
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
