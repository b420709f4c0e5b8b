"""ptxdsl.torch on a GPU: layer_norm and rms_norm, forward and backward, against torch's own
F.layer_norm / F.rms_norm in float64 at odd shapes, under torch.compile(fullgraph=True), captured
into a CUDA graph and replayed, on two streams at once, and their argument errors. Exits 77 (CTest's
skip) when torch or a GPU is missing."""

import unittest

from cuda_torch import F, torch

import ptxdsl
import ptxdsl.torch as pt

# Error bound relative to the largest reference magnitude of each output (at least 1).
TOLERANCE = {torch.float32: 2e-5, torch.float16: 4e-3, torch.bfloat16: 3e-2}
SHAPES = [(1, 1), (3, 7), (17, 1000), (5, 4097), (2, 3, 31), (64, 8192)]
DTYPES = [(torch.float32, torch.float32), (torch.float16, torch.float16),
          (torch.bfloat16, torch.bfloat16), (torch.bfloat16, torch.float32),
          (torch.float16, torch.float32)]


def close(test, got, want, dtype, what):
    # Outputs are O(1) or larger; an exact zero (dx of one-element rows) is judged against 1.
    scale = max(want.abs().max().item(), 1.0)
    err = (got.double() - want).abs().max().item()
    test.assertTrue(torch.isfinite(got).all().item(), f"{what}: non-finite output")
    test.assertLessEqual(err / scale, TOLERANCE[dtype], f"{what}: error {err:.3g}, scale {scale:.3g}")


def inputs(shape, dtype, weight_dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    n = shape[-1]
    x = (torch.randn(shape, generator=g, device="cuda") * 2 + 0.5).to(dtype)
    w = (torch.rand(n, generator=g, device="cuda") + 0.5).to(weight_dtype)
    b = torch.randn(n, generator=g, device="cuda").to(weight_dtype)
    dy = torch.randn(shape, generator=g, device="cuda").to(dtype)
    return x, w, b, dy


def reference(layer, x, w, b, dy, eps):
    """Outputs and gradients by torch in float64."""
    xd = x.double().requires_grad_()
    wd = w.double().requires_grad_()
    bd = b.double().requires_grad_() if layer else None
    n = x.shape[-1]
    y = F.layer_norm(xd, (n,), wd, bd, eps) if layer else F.rms_norm(xd, (n,), wd, eps)
    y.backward(dy.double())
    return y.detach(), xd.grad, wd.grad, (bd.grad if layer else None)


def run(layer, x, w, b, dy, eps, fn=None):
    xg = x.clone().requires_grad_()
    wg = w.clone().requires_grad_()
    bg = b.clone().requires_grad_() if layer else None
    n = x.shape[-1]
    if fn is None:
        fn = pt.layer_norm if layer else pt.rms_norm
    y = fn(xg, (n,), wg, bg, eps) if layer else fn(xg, (n,), wg, eps)
    y.backward(dy)
    return y.detach(), xg.grad, wg.grad, (bg.grad if layer else None)


class NormsTest(unittest.TestCase):

    def test_the_path_asked_for(self):
        # PTXDSL_EXPECT_NATIVE=<entry> (CTest, where the fast path is built): it must have loaded,
        # through that entry; PTXDSL_TORCH_NATIVE=0: the pure-Python path runs.
        import os
        from ptxdsl import _native
        entry = os.environ.get("PTXDSL_EXPECT_NATIVE")
        if entry:
            self.assertIsNotNone(_native.ops(), "the native fast path did not load")
            self.assertEqual(_native.ops().entry, entry)
        if os.environ.get("PTXDSL_TORCH_NATIVE", "").lower() in ("0", "off"):
            self.assertIsNone(_native.ops())

    def check_case(self, layer, shape, dtype, weight_dtype, seed, fn=None):
        x, w, b, dy = inputs(shape, dtype, weight_dtype, seed)
        got = run(layer, x, w, b, dy, 1e-5, fn)
        want = reference(layer, x, w, b, dy, 1e-5)
        name = f"{'layer' if layer else 'rms'}_norm {shape} {dtype} weights {weight_dtype}"
        for what, g, r, d in zip(("y", "dx", "dw", "db"), got, want,
                                 (dtype, dtype, weight_dtype, weight_dtype)):
            if r is None:
                continue
            self.assertEqual(g.dtype, d, f"{name} {what} dtype")
            self.assertEqual(g.shape, r.shape, f"{name} {what} shape")
            close(self, g, r, d, f"{name} {what}")

    def test_match_float64_at_odd_shapes(self):
        seed = 1
        for layer in (True, False):
            for shape in SHAPES:
                for dtype, weight_dtype in DTYPES:
                    seed += 1
                    self.check_case(layer, shape, dtype, weight_dtype, seed)

    def test_without_weight_and_bias_and_over_several_dims(self):
        x = torch.randn(4, 6, 10, device="cuda", dtype=torch.float16)
        close(self, pt.layer_norm(x, (6, 10)), F.layer_norm(x.double(), (6, 10)), torch.float16,
              "layer_norm over two dims, no affine")
        close(self, pt.rms_norm(x, 10), F.rms_norm(x.double(), (10,), eps=torch.finfo(
            torch.float16).eps), torch.float16, "rms_norm, no weight, eps None")
        xt = torch.randn(10, 12, device="cuda").t()  # rows 1 element apart: not contiguous
        close(self, pt.layer_norm(xt, (10,)), F.layer_norm(xt.double(), (10,)), torch.float32,
              "a transposed input")

    def test_fused_residual_add(self):
        # (y, h) with h = x + residual, as flash-attention's layer_norm_fn(residual=...) returns
        # them; gradients through y and h to x, residual, w (and b), against float64.
        for layer in (True, False):
            for dtype in (torch.float32, torch.bfloat16):
                for shape in ((3, 7), (17, 4097)):
                    x, w, b, dy = inputs(shape, dtype, dtype, 40 + shape[-1])
                    r, _, _, dh = inputs(shape, dtype, dtype, 41 + shape[-1])
                    n = shape[-1]
                    ts = [t.clone().requires_grad_() for t in (x, r, w, b)]
                    refs = [t.double().requires_grad_() for t in (x, r, w, b)]
                    if layer:
                        y, h = pt.layer_norm(ts[0], (n,), ts[2], ts[3], 1e-5, residual=ts[1])
                    else:
                        y, h = pt.rms_norm(ts[0], (n,), ts[2], 1e-5, residual=ts[1])
                    hd = refs[0] + refs[1]
                    yd = (F.layer_norm(hd, (n,), refs[2], refs[3], 1e-5) if layer else
                          F.rms_norm(hd, (n,), refs[2], 1e-5))
                    (y.float() * dy.float()).sum().add((h.float() * dh.float()).sum()).backward()
                    (yd * dy.double()).sum().add((hd * dh.double()).sum()).backward()
                    name = f"{'layer' if layer else 'rms'}_norm residual {shape} {dtype}"
                    close(self, y, yd.detach(), dtype, f"{name} y")
                    close(self, h, hd.detach(), dtype, f"{name} h")
                    for what, g, ref in zip(("dx", "dresidual", "dw", "db"), ts, refs):
                        if ref.grad is None:
                            continue
                        close(self, g.grad, ref.grad, dtype, f"{name} {what}")

    def test_gradients_only_where_asked(self):
        # The kernels' dx-only variant where no weight needs a gradient; no affine at all.
        x, w, b, dy = inputs((9, 1000), torch.float16, torch.float16, 60)
        xg = x.clone().requires_grad_()
        pt.layer_norm(xg, (1000,), w, b).backward(dy)
        want = reference(True, x, w, b, dy, 1e-5)
        close(self, xg.grad, want[1], torch.float16, "dx with frozen w and b")
        xg = x.clone().requires_grad_()
        pt.rms_norm(xg, (1000,), None, 1e-5).backward(dy)
        xd = x.double().requires_grad_()
        F.rms_norm(xd, (1000,), None, 1e-5).backward(dy.double())
        close(self, xg.grad, xd.grad, torch.float16, "dx of an RMS norm without weight")

    def test_modules_are_drop_ins(self):
        for ours, theirs in ((pt.LayerNorm, torch.nn.LayerNorm), (pt.RMSNorm, torch.nn.RMSNorm)):
            ref = theirs(768, device="cuda")
            with torch.no_grad():
                ref.weight.uniform_(0.5, 1.5)
            mod = ours(768, device="cuda")
            mod.load_state_dict(ref.state_dict())
            x = torch.randn(33, 768, device="cuda")
            close(self, mod(x), ref.double()(x.double()), torch.float32, ours.__name__)

    def test_torch_compile_fullgraph(self):
        def block(x, w, b):
            return pt.rms_norm(pt.layer_norm(x, (x.shape[-1],), w, b) * 2, (x.shape[-1],), w)

        compiled = torch.compile(block, fullgraph=True)
        x, w, b, dy = inputs((37, 1536), torch.bfloat16, torch.bfloat16, 5)
        outs = []
        for f in (block, compiled):
            xg, wg, bg = (t.clone().requires_grad_() for t in (x, w, b))
            y = f(xg, wg, bg)
            y.backward(dy)
            outs.append((y, xg.grad, wg.grad, bg.grad))
        for what, e, c in zip(("y", "dx", "dw", "db"), *outs):
            self.assertTrue(torch.equal(e, c), f"compiled {what} differs from eager")

    def test_cuda_graph_capture_and_replay(self):
        x, w, b, dy = inputs((300, 4096), torch.float16, torch.float32, 9)
        static_x = x.clone()
        pt.prepare("layer_norm", torch.float16, 4096, torch.float32)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):  # warm up: kernels built, allocator pools primed
            for _ in range(2):
                y, mean, rstd, _ = torch.ops.ptxdsl.layer_norm_forward(static_x, w, b, None, 1e-5)
                grads = torch.ops.ptxdsl.layer_norm_backward(dy, None, static_x, w, mean, rstd,
                                                             True, True)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            y, mean, rstd, _ = torch.ops.ptxdsl.layer_norm_forward(static_x, w, b, None, 1e-5)
            dx, dw, db = torch.ops.ptxdsl.layer_norm_backward(dy, None, static_x, w, mean, rstd,
                                                              True, True)
        first = {}
        for seed in (10, 11, 10):
            new_x, _, _, _ = inputs((300, 4096), torch.float16, torch.float32, seed)
            static_x.copy_(new_x)
            graph.replay()
            torch.cuda.synchronize()
            want = reference(True, new_x, w, b, dy, 1e-5)
            for what, g, r, d in zip(("y", "dx", "dw", "db"), (y, dx, dw, db), want,
                                     (torch.float16, torch.float16, torch.float32, torch.float32)):
                close(self, g, r, d, f"replay {seed} {what}")
            # The same input replayed again gives the same bits: dw and db too (a fixed order).
            outs = [t.clone() for t in (y, mean, rstd, dx, dw, db)]
            if seed in first:
                for what, a, b_ in zip(("y", "mean", "rstd", "dx", "dw", "db"), first[seed], outs):
                    self.assertTrue(torch.equal(a, b_), f"replay {seed} {what} not bit-identical")
            first[seed] = outs

    def test_two_streams_at_once(self):
        cases = [inputs((2000, 2048), torch.bfloat16, torch.bfloat16, s) for s in (20, 21)]
        streams = [torch.cuda.Stream() for _ in cases]
        results = [None, None]
        for _ in range(3):
            torch.cuda.synchronize()
            for i, ((x, w, b, dy), s) in enumerate(zip(cases, streams)):
                with torch.cuda.stream(s):
                    y, mean, rstd, _ = torch.ops.ptxdsl.layer_norm_forward(x, w, b, None, 1e-5)
                    results[i] = (y,) + tuple(
                        torch.ops.ptxdsl.layer_norm_backward(dy, None, x, w, mean, rstd, True, True))
            torch.cuda.synchronize()
            for (x, w, b, dy), got in zip(cases, results):
                want = reference(True, x, w, b, dy, 1e-5)
                for what, g, r in zip(("y", "dx", "dw", "db"), got, want):
                    close(self, g, r, torch.bfloat16, f"two streams {what}")

    def test_bad_input_names_the_value(self):
        x = torch.randn(4, 8, device="cuda")
        with self.assertRaisesRegex(ValueError, "must be on a CUDA device, got cpu"):
            pt.layer_norm(x.cpu(), (8,))
        with self.assertRaisesRegex(TypeError, "float32, float16 or bfloat16, got torch.float64"):
            pt.rms_norm(x.double(), (8,))
        with self.assertRaisesRegex(TypeError, "got torch.float16"):
            pt.layer_norm(x, (8,), torch.ones(8, device="cuda", dtype=torch.float16))
        with self.assertRaisesRegex(ValueError, r"normalized_shape \[7\] must be the last"):
            pt.layer_norm(x, (7,))
        with self.assertRaisesRegex(ValueError, "weight must have 8 elements"):
            pt.rms_norm(x, (8,), torch.ones(9, device="cuda"))
        wide = torch.randn(2, 300000, device="cuda")
        with self.assertRaisesRegex(ptxdsl.ArgumentError, "300000"):
            pt.layer_norm(wide, (300000,))


if __name__ == "__main__":
    unittest.main(verbosity=2)
