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


def main():
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
