"""ptxdsl.torch.enable_inductor_fusion on a GPU: torch.compile replaces torch's norms (F.rms_norm,
F.layer_norm, Hugging Face's RMSNorm written out) and the residual add before them by ptxdsl's
kernels, the compiled result matches the one without the pass (forward and gradients), and cases
ptxdsl does not take stay torch's. Exits 77 (CTest's skip) when torch or a GPU is missing."""

import unittest

from cuda_torch import F, torch

import ptxdsl.inductor as fusion
import ptxdsl.torch as pt

TOLERANCE = {torch.float32: 1e-4, torch.float16: 5e-3, torch.bfloat16: 3e-2}


class HfRMSNorm(torch.nn.Module):
    """LlamaRMSNorm as Hugging Face writes it."""

    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.rand(hidden) + 0.5)
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


def add_rms(x, r, w):
    h = x + r
    return F.rms_norm(h, (h.shape[-1],), w, 1e-6), h


def add_ln(x, r, w, b):
    h = x + r
    return F.layer_norm(h, (h.shape[-1],), w, b, 1e-5), h


def plain_rms(x, r, w):
    return F.rms_norm(x * 2, (x.shape[-1],), w, 1e-6)


class FusionTest(unittest.TestCase):

    def compiled_both_ways(self, fn, args, mode=None):
        """(outputs and gradients with the pass, the same without, replacements the pass made)."""
        results = []
        before = dict(fusion.replaced)
        for enabled in (True, False):
            if enabled:
                pt.enable_inductor_fusion()
            else:
                pt.disable_inductor_fusion()
            torch._dynamo.reset()
            leaves = [a.detach().clone().requires_grad_(a.is_floating_point()) for a in args]
            out = torch.compile(fn, fullgraph=True, mode=mode)(*leaves)
            outs = out if isinstance(out, tuple) else (out,)
            sum(o.float().sum() * (i + 1) for i, o in enumerate(outs)).backward()
            results.append([o.detach() for o in outs] + [a.grad for a in leaves])
            if enabled:
                made = {k: fusion.replaced[k] - before[k] for k in before}
        pt.disable_inductor_fusion()
        return results[0], results[1], made

    def check_close(self, got, want, dtype, what):
        for i, (g, w) in enumerate(zip(got, want)):
            if w is None:
                continue
            scale = max(w.abs().max().item(), 1.0)
            err = (g.double() - w.double()).abs().max().item()
            self.assertLessEqual(err / scale, TOLERANCE[dtype], f"{what} output {i}: {err:.3g}")

    def test_residual_add_and_rms_norm(self):
        for dtype, wdtype in ((torch.bfloat16, torch.bfloat16), (torch.float32, torch.float32),
                              (torch.float16, torch.float16)):
            x, r = (torch.randn(4, 33, 1000, device="cuda", dtype=dtype) for _ in range(2))
            w = torch.rand(1000, device="cuda", dtype=wdtype) + 0.5
            got, want, made = self.compiled_both_ways(add_rms, (x, r, w))
            self.assertEqual(made["rms_norm"], 1, f"{dtype}: {made}")
            self.assertEqual(made["residual"], 1, f"{dtype}: {made}")
            self.check_close(got, want, dtype, f"add + rms_norm {dtype}")

    def test_residual_add_and_layer_norm(self):
        x, r = (torch.randn(37, 4096, device="cuda", dtype=torch.float16) for _ in range(2))
        w, b = torch.rand(4096, device="cuda", dtype=torch.float16), torch.randn(
            4096, device="cuda", dtype=torch.float16)
        got, want, made = self.compiled_both_ways(add_ln, (x, r, w, b))
        self.assertEqual((made["layer_norm"], made["residual"]), (1, 1), str(made))
        self.check_close(got, want, torch.float16, "add + layer_norm")

    def test_hugging_face_rms_norm_module(self):
        norm = HfRMSNorm(2048).to("cuda", torch.bfloat16)

        def block(x, r):
            h = r + x
            return norm(h), h

        x, r = (torch.randn(3, 17, 2048, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        got, want, made = self.compiled_both_ways(block, (x, r))
        self.assertEqual((made["rms_norm"], made["residual"]), (1, 1), str(made))
        self.check_close(got, want, torch.bfloat16, "Hugging Face RMSNorm")

    def test_a_norm_without_residual(self):
        x, r = (torch.randn(64, 512, device="cuda", dtype=torch.float32) for _ in range(2))
        w = torch.rand(512, device="cuda") + 0.5
        got, want, made = self.compiled_both_ways(plain_rms, (x, r, w))
        self.assertEqual((made["rms_norm"], made["residual"]), (1, 0), str(made))
        self.check_close(got, want, torch.float32, "rms_norm alone")

    def test_cases_ptxdsl_does_not_take_stay_torchs(self):
        # float64 rows; f32 weights beside f32 rows mixed with bf16 (the output would be f32).
        x, r = (torch.randn(8, 256, device="cuda", dtype=torch.float64) for _ in range(2))
        w = torch.rand(256, device="cuda", dtype=torch.float64)
        got, want, made = self.compiled_both_ways(add_rms, (x, r, w))
        self.assertEqual(sum(made.values()), 0, str(made))
        norm = HfRMSNorm(256).to("cuda")  # f32 weight beside bf16 rows: Hugging Face's y is f32

        def block(x):
            return norm(x)

        xb = torch.randn(8, 256, device="cuda", dtype=torch.bfloat16)
        got, want, made = self.compiled_both_ways(block, (xb,))
        self.assertEqual(sum(made.values()), 0, str(made))
        self.assertEqual(got[0].dtype, torch.float32)

    def test_reduce_overhead_cuda_graphs(self):
        x, r = (torch.randn(16, 4096, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        w = torch.rand(4096, device="cuda", dtype=torch.bfloat16) + 0.5
        got, want, made = self.compiled_both_ways(add_rms, (x, r, w), mode="reduce-overhead")
        self.assertEqual(made["rms_norm"], 1, str(made))
        self.check_close(got, want, torch.bfloat16, "reduce-overhead")


if __name__ == "__main__":
    unittest.main(verbosity=2)
