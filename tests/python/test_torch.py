"""ptxdsl.torch on a GPU: layer_norm and rms_norm, forward and backward, against torch's own
F.layer_norm / F.rms_norm in float64 at odd shapes, under torch.compile(fullgraph=True), captured
into a CUDA graph and replayed, on two streams at once, and their argument errors; the model
options (weight offset, casting, per-head rows) against Gemma's and Llama's RMS norms as Hugging
Face writes them, and the quantized forward against torch's own casts. Exits 77 (CTest's skip)
when torch or a GPU is missing."""

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


# ---- the model options and the quantized forward ----


def gemma_rms_norm(x, weight, eps):
    """Hugging Face's GemmaRMSNorm.forward: all in float32, (1 + w), rounded once."""
    xf = x.float()
    out = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    out = out * (1.0 + weight.float())
    return out.type_as(x)


def llama_rms_norm(x, weight, eps):
    """Hugging Face's LlamaRMSNorm.forward: x̂ rounded to the input dtype before the weight."""
    hidden = x.to(torch.float32)
    variance = hidden.pow(2).mean(-1, keepdim=True)
    hidden = hidden * torch.rsqrt(variance + eps)
    return weight * hidden.to(x.dtype)


def offset_reference(layer, x, w, b, dy, eps, offset, casting="none"):
    """Outputs and gradients of y = x̂·(offset + w) (+ b) by torch in float64. casting "llama"
    rounds x̂ to x's dtype before the weight, so its dw sums dy·x̂ rounded so (the kernels' model,
    docs/kernels.md); the other outputs' tolerances cover that rounding."""
    xd = x.double().requires_grad_()
    wd = w.double().requires_grad_()
    bd = b.double().requires_grad_() if layer else None
    n = x.shape[-1]
    y = (F.layer_norm(xd, (n,), wd + offset, bd, eps) if layer
         else F.rms_norm(xd, (n,), wd + offset, eps))
    y.backward(dy.double())
    dw = wd.grad
    if casting == "llama":
        xhat = (F.layer_norm(xd.detach(), (n,), None, None, eps) if layer
                else F.rms_norm(xd.detach(), (n,), None, eps))
        rounded = xhat.float().to(x.dtype).double()
        dw = (dy.double() * rounded).reshape(-1, n).sum(0)
    return y.detach(), xd.grad, dw, (bd.grad if layer else None)


# The relative spacing of a dtype's values at most (one step of the last stored bit).
SPACING = {torch.float32: 2.0**-23, torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7}


def close_llama_dw(test, got, want, x, dy, eps, layer, what):
    """dw under casting "llama" against the reference's: the kernel rounds its float32 x̂ where the
    reference rounds the exact one, so an x̂ at a rounding boundary may take the other neighbour:
    each column may differ by one step of the row dtype in its largest |dy·x̂| beyond dw's
    tolerance."""
    n = x.shape[-1]
    xd = x.double().reshape(-1, n)
    xhat = (F.layer_norm(xd, (n,), None, None, eps) if layer else F.rms_norm(xd, (n,), None, eps))
    flip = (dy.double().reshape(-1, n) * xhat).abs().amax(0) * SPACING[x.dtype]
    scale = max(want.abs().max().item(), 1.0)
    excess = ((got.double() - want).abs() - flip).max().item()
    test.assertLessEqual(excess / scale, TOLERANCE[got.dtype],
                         f"{what}: error beyond one x̂ rounding flip {excess:.3g}, scale {scale:.3g}")


# A format's torch dtype, largest value and the relative size of one step (int8: absolute 1).
QUANT = {"fp8-e4m3": (torch.float8_e4m3fn, 448.0, 2.0**-3),
         "fp8-e5m2": (torch.float8_e5m2, 57344.0, 2.0**-2),
         "int8": (torch.int8, 127.0, None)}


def torch_quantized(y, quant, scale_mode="per-token", static_scale=None):
    """y (float32 rows) quantized by torch's own cast with the same scale and saturation: one
    scale a row, per 128 elements of a row (group128), or the given one (static)."""
    dtype, largest, _ = QUANT[quant]
    rows, width = y.shape
    if scale_mode == "static":
        scale = static_scale.reshape(1, 1, 1).expand(rows, 1, 1)
        groups = y.view(rows, 1, width)
    else:
        groups = y.view(rows, -1, 128) if scale_mode == "group128" else y.view(rows, 1, width)
        absmax = groups.abs().amax(-1, keepdim=True)
        scale = absmax / largest
    divisor = torch.where(scale == 0, torch.ones_like(scale), scale)
    q = (groups / divisor).clamp(-largest, largest).view(rows, width)
    q = torch.round(q) if dtype == torch.int8 else q
    return q.to(dtype), scale.reshape(rows, -1).squeeze(-1)


class ModelOptionsTest(unittest.TestCase):

    def test_gemma_and_llama_as_hugging_face_writes_them(self):
        for dtype in (torch.bfloat16, torch.float16):
            x, w, _, _ = inputs((37, 1151), dtype, dtype, 30)
            w = (w - 1.0).to(dtype)  # Gemma's zero-centred weight
            got = pt.rms_norm(x, (1151,), w, 1e-6, weight_offset=1.0, casting="gemma")
            close(self, got, gemma_rms_norm(x, w, 1e-6).double(), dtype, f"gemma {dtype}")
            gemma = pt.RMSNorm(1151, eps=1e-6, weight_offset=1.0, casting="gemma",
                               device="cuda", dtype=dtype)
            with torch.no_grad():
                gemma.weight.copy_(w)
            self.assertTrue(torch.equal(gemma(x), got), "the Gemma module is the function")
            x, w, _, _ = inputs((37, 1151), dtype, dtype, 31)
            got = pt.rms_norm(x, (1151,), w, 1e-6, casting="llama")
            close(self, got, llama_rms_norm(x, w, 1e-6).double(), dtype, f"llama {dtype}")

    def test_weight_offset_gradients_match_float64(self):
        for layer in (False, True):
            for shape, dtype, weight_dtype in (((17, 1000), torch.float32, torch.float32),
                                               ((5, 4097), torch.bfloat16, torch.float32),
                                               ((2, 3, 31), torch.float16, torch.float16)):
                x, w, b, dy = inputs(shape, dtype, weight_dtype, 32)
                for offset, casting in ((1.0, "none"), (-0.5, "gemma"), (1.0, "llama")):
                    name = f"{'layer' if layer else 'rms'} {shape} {dtype} {offset} {casting}"
                    xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
                    bg = b.clone().requires_grad_() if layer else None
                    n = shape[-1]
                    y = (pt.layer_norm(xg, (n,), wg, bg, 1e-5, weight_offset=offset,
                                       casting=casting) if layer
                         else pt.rms_norm(xg, (n,), wg, 1e-5, weight_offset=offset,
                                          casting=casting))
                    y.backward(dy)
                    want = offset_reference(layer, x, w, b, dy, 1e-5, offset, casting)
                    close(self, y.detach(), want[0], dtype, name + " y")
                    close(self, xg.grad, want[1], dtype, name + " dx")
                    if casting == "llama" and dtype != torch.float32:
                        close_llama_dw(self, wg.grad, want[2], x, dy, 1e-5, layer, name + " dw")
                    else:
                        close(self, wg.grad, want[2], weight_dtype, name + " dw")
                    if layer:
                        close(self, bg.grad, want[3], weight_dtype, name + " db")

    def test_modules_keep_torch_nns_state_dict(self):
        for ours, theirs in ((pt.LayerNorm, torch.nn.LayerNorm), (pt.RMSNorm, torch.nn.RMSNorm)):
            mod = ours(64, weight_offset=1.0, casting="gemma", device="cuda")
            self.assertEqual(mod.state_dict().keys(), theirs(64).state_dict().keys())
            # The applied weights, 1 + w, start at ones: w at zeros.
            self.assertTrue(torch.equal(mod.weight, torch.zeros_like(mod.weight)))
            self.assertIn("weight_offset=1.0", repr(mod))

    def test_quantized_forward_matches_torchs_own_cast(self):
        for quant, (dtype, largest, step) in QUANT.items():
            for layer in (False, True):
                x, w, b, _ = inputs((33, 1151), torch.bfloat16, torch.float32, 33)
                x[3] = 0  # a row of zeros: scale 0, codes 0
                n = 1151
                if layer:
                    q, s = pt.layer_norm_quant(x, n, w, b, 1e-5, quant=quant)
                    y = F.layer_norm(x.float(), (n,), w, b, 1e-5)
                else:
                    q, s = pt.rms_norm_quant(x, n, w, 1e-5, quant=quant)
                    y = F.rms_norm(x.float(), (n,), w, 1e-5)
                name = f"{'layer' if layer else 'rms'} {quant}"
                self.assertEqual(q.dtype, dtype, name)
                self.assertEqual(tuple(s.shape), (33,), name)
                want_q, want_s = torch_quantized(y, quant)
                torch.testing.assert_close(s, want_s, rtol=1e-5, atol=0, msg=name + " scales")
                got, want = q.float(), want_q.float()
                # One step apart at most (a tie the kernel's y and torch's round apart), rarely.
                allowed = 1.0 if step is None else (want.abs() * step).clamp_min(2.0**-9)
                self.assertTrue(((got - want).abs() <= allowed).all().item(), name)
                self.assertGreaterEqual((got == want).float().mean().item(), 0.99, name)
                if not layer:  # layer norm's row of zeros is its bias
                    self.assertTrue((got[3] == 0).all().item(), name + " a row of zeros")

    def test_static_and_group128_scales_match_torchs_own_cast(self):
        for quant, (dtype, largest, step) in QUANT.items():
            for layer in (False, True):
                x, w, b, _ = inputs((33, 1152), torch.bfloat16, torch.float32, 39)
                x[3, :128] = 0  # a group of zeros: scale 0, codes 0 (RMS norm)
                n = 1152
                y = (F.layer_norm(x.float(), (n,), w, b, 1e-5) if layer
                     else F.rms_norm(x.float(), (n,), w, 1e-5))
                static = (0.8 * y.abs().max() / largest).reshape(1)
                for mode in ("static", "group128"):
                    name = f"{'layer' if layer else 'rms'} {quant} {mode}"
                    scale_in = static if mode == "static" else None
                    if layer:
                        q, s = pt.layer_norm_quant(x, n, w, b, 1e-5, quant=quant, scale=mode,
                                                   scale_in=scale_in)
                    else:
                        q, s = pt.rms_norm_quant(x, n, w, 1e-5, quant=quant, scale=mode,
                                                 scale_in=scale_in)
                    want_q, want_s = torch_quantized(y, quant, mode, static)
                    self.assertEqual(q.dtype, dtype, name)
                    if mode == "static":
                        self.assertIs(s, scale_in, name + ": the given scale, returned")
                        element_scale = static.expand(33, n)
                    else:
                        self.assertEqual(tuple(s.shape), (33, n // 128), name)
                        torch.testing.assert_close(s, want_s, rtol=1e-5, atol=0,
                                                   msg=name + " scales")
                        element_scale = want_s.repeat_interleave(128, dim=1)
                    got, want = q.float(), want_q.float()
                    allowed = 1.0 if step is None else (want.abs() * step).clamp_min(2.0**-9)
                    self.assertTrue(((got - want).abs() <= allowed).all().item(), name)
                    self.assertGreaterEqual((got == want).float().mean().item(), 0.99, name)
                    # Dequantized, within a step of y (saturated values aside).
                    inside = y.abs() <= largest * element_scale
                    err = ((got * element_scale - y).abs() - allowed * element_scale)[inside]
                    self.assertLessEqual(err.max().item(), 1e-3, name + " dequantized")
                    if not layer and mode == "group128":
                        self.assertTrue((got[3, :128] == 0).all().item(), name + " zeros")

    def test_scale_modes_under_torch_compile_and_in_a_cuda_graph(self):
        x, w, _, _ = inputs((2, 37, 1024), torch.bfloat16, torch.bfloat16, 40)
        scale_in = torch.full((1,), 0.01, device="cuda")

        def quantize(x, w, scale_in):
            return (pt.rms_norm_quant(x, 1024, w, 1e-6, quant="fp8-e4m3", scale="group128"),
                    pt.rms_norm_quant(x, 1024, w, 1e-6, quant="int8", scale="static",
                                      scale_in=scale_in))

        compiled = torch.compile(quantize, fullgraph=True)
        (eq, es), (sq, ss) = quantize(x, w, scale_in)
        (cq, cs), (csq, css) = compiled(x, w, scale_in)
        self.assertEqual(tuple(es.shape), (2, 37, 8))
        self.assertTrue(torch.equal(eq.view(torch.uint8), cq.view(torch.uint8)))
        self.assertTrue(torch.equal(es, cs))
        self.assertTrue(torch.equal(sq, csq))
        self.assertTrue(torch.equal(ss, css))
        # A graph reads the static scale where it lies: a new value is the next replay's.
        pt.prepare("rms_norm", torch.bfloat16, 1024, quant="int8", scale="static")
        static_x, static_scale = x.clone(), scale_in.clone()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            pt.rms_norm_quant(static_x, 1024, w, 1e-6, quant="int8", scale="static",
                              scale_in=static_scale)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            gq, _ = pt.rms_norm_quant(static_x, 1024, w, 1e-6, quant="int8", scale="static",
                                      scale_in=static_scale)
        for value in (0.02, 0.005):
            static_scale.fill_(value)
            graph.replay()
            torch.cuda.synchronize()
            want, _ = pt.rms_norm_quant(x, 1024, w, 1e-6, quant="int8", scale="static",
                                        scale_in=torch.full((1,), value, device="cuda"))
            self.assertTrue(torch.equal(gq, want), f"replayed with scale {value}")

    def test_deterministic_portable_dw_and_db(self):
        for layer in (False, True):
            x, w, b, dy = inputs((300, 1000), torch.bfloat16, torch.float32, 41)
            grads = []
            for deterministic in ("portable", "portable", "1", "0"):
                name = f"{'layer' if layer else 'rms'} deterministic {deterministic}"
                xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
                bg = b.clone().requires_grad_() if layer else None
                y = (pt.layer_norm(xg, (1000,), wg, bg, 1e-5, deterministic=deterministic)
                     if layer else pt.rms_norm(xg, (1000,), wg, 1e-5,
                                               deterministic=deterministic))
                y.backward(dy)
                want = reference(layer, x, w, b, dy, 1e-5)
                close(self, wg.grad, want[2], torch.float32, name + " dw")
                close(self, xg.grad, want[1], torch.bfloat16, name + " dx")
                if layer:
                    close(self, bg.grad, want[3], torch.float32, name + " db")
                grads.append((wg.grad, bg.grad if layer else wg.grad))
            self.assertTrue(torch.equal(grads[0][0], grads[1][0]), "portable dw run to run")
            self.assertTrue(torch.equal(grads[0][1], grads[1][1]), "portable db run to run")
        # The modules take it too; a bad value is named with those allowed.
        mod = pt.RMSNorm(64, deterministic="portable", device="cuda")
        self.assertIn("deterministic='portable'", repr(mod))
        xg = torch.randn(8, 64, device="cuda", requires_grad=True)
        with self.assertRaisesRegex(ValueError, "deterministic must be 0, 1 or portable, got "
                                                "'sometimes'"):
            pt.rms_norm(xg, 64, mod.weight, deterministic="sometimes").sum().backward()
        compiled = torch.compile(lambda x, w: pt.rms_norm(x, 64, w, 1e-6,
                                                          deterministic="portable"),
                                 fullgraph=True)
        outs = []
        for f in (lambda x, w: pt.rms_norm(x, 64, w, 1e-6, deterministic="portable"), compiled):
            xg, wg = torch.ones(8, 64, device="cuda").requires_grad_(), mod.weight.detach().clone()
            wg.requires_grad_()
            f(xg, wg).sum().backward()
            outs.append(wg.grad)
        self.assertTrue(torch.equal(outs[0], outs[1]), "compiled portable dw is eager's")

    def test_quantized_forward_with_residual_and_leading_dims(self):
        x, w, _, _ = inputs((2, 3, 40), torch.float16, torch.float16, 34)
        r = torch.randn_like(x)
        q, s, h = pt.rms_norm_quant(x, 40, w, 1e-5, r, quant="int8")
        self.assertEqual((q.shape, s.shape, h.shape, h.dtype), (x.shape, (2, 3), x.shape, x.dtype))
        close(self, h, (x.double() + r.double()), torch.float16, "h")

    def test_per_head_rows_on_a_fused_qkv_buffer(self):
        tokens, q_heads, kv_heads, d = 19, 8, 2, 128
        qkv = torch.randn(tokens, (q_heads + 2 * kv_heads) * d, device="cuda",
                          dtype=torch.bfloat16, requires_grad=True)
        w = (torch.rand(d, device="cuda") * 0.2 - 0.1).to(torch.bfloat16)
        q = qkv[:, :q_heads * d].view(tokens, q_heads, d)  # a view: no copy
        y = pt.rms_norm(q, d, w, 1e-6, weight_offset=1.0, heads=True)
        self.assertEqual(y.stride(), q.stride(), "y lies as the input's rows")
        want = offset_reference(False, q.detach().contiguous(), w, None, torch.ones_like(y),
                                1e-6, 1.0)
        close(self, y.detach(), want[0], torch.bfloat16, "per-head y")
        y.backward(torch.ones_like(y))
        close(self, qkv.grad[:, :q_heads * d].view(tokens, q_heads, d), want[1], torch.bfloat16,
              "per-head dx")
        self.assertTrue((qkv.grad[:, q_heads * d:] == 0).all().item(), "k and v untouched")
        q_norm = pt.RMSNorm(d, eps=1e-6, weight_offset=1.0, heads=True, device="cuda",
                            dtype=torch.bfloat16)
        with torch.no_grad():
            q_norm.weight.copy_(w)
            self.assertTrue(torch.equal(q_norm(q), y.detach()), "the per-head module")

    def test_variants_under_torch_compile(self):
        def block(x, w):
            y = pt.rms_norm(x, (x.shape[-1],), w, 1e-6, weight_offset=1.0, casting="gemma")
            return y, pt.rms_norm_quant(y, x.shape[-1], w, 1e-6, quant="fp8-e4m3")

        compiled = torch.compile(block, fullgraph=True)
        x, w, _, dy = inputs((37, 1536), torch.bfloat16, torch.bfloat16, 35)
        outs = []
        for f in (block, compiled):
            xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
            y, (q, s) = f(xg, wg)
            y.backward(dy)
            outs.append((y, q.view(torch.uint8), s, xg.grad, wg.grad))
        for what, e, c in zip(("y", "q", "scales", "dx", "dw"), *outs):
            self.assertTrue(torch.equal(e, c), f"compiled {what} differs from eager")

    def test_quantized_forward_in_a_cuda_graph(self):
        x, w, _, _ = inputs((300, 4096), torch.bfloat16, torch.bfloat16, 36)
        static_x = x.clone()
        pt.prepare("rms_norm", torch.bfloat16, 4096, quant="fp8-e4m3", weight_offset=1.0)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):
                pt.rms_norm_quant(static_x, 4096, w, 1e-6, quant="fp8-e4m3", weight_offset=1.0)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            q, s = pt.rms_norm_quant(static_x, 4096, w, 1e-6, quant="fp8-e4m3",
                                     weight_offset=1.0)
        for seed in (37, 38):
            new_x, _, _, _ = inputs((300, 4096), torch.bfloat16, torch.bfloat16, seed)
            static_x.copy_(new_x)
            graph.replay()
            torch.cuda.synchronize()
            eager_q, eager_s = pt.rms_norm_quant(new_x, 4096, w, 1e-6, quant="fp8-e4m3",
                                                 weight_offset=1.0)
            self.assertTrue(torch.equal(q.view(torch.uint8), eager_q.view(torch.uint8)))
            self.assertTrue(torch.equal(s, eager_s))

    def test_bad_options_name_the_value(self):
        x = torch.randn(4, 8, device="cuda")
        w = torch.ones(8, device="cuda")
        with self.assertRaisesRegex(ValueError, "casting must be one of none, llama, gemma, got "
                                                "'mistral'"):
            pt.rms_norm(x, 8, w, casting="mistral")
        with self.assertRaisesRegex(ValueError, "quant must be one of fp8-e4m3, fp8-e5m2, int8"):
            pt.rms_norm_quant(x, 8, w, quant="fp4")
        with self.assertRaisesRegex(ValueError, "scale must be one of per-token"):
            pt.rms_norm_quant(x, 8, w, scale="group999")
        with self.assertRaisesRegex(TypeError, "scale='static' reads its scale from scale_in"):
            pt.rms_norm_quant(x, 8, w, scale="static")
        with self.assertRaisesRegex(ValueError, "scale_in must be a float32 tensor of one element"):
            pt.rms_norm_quant(x, 8, w, scale="static", scale_in=torch.ones(2, device="cuda"))
        with self.assertRaisesRegex(ValueError, "scale_in is a static scale's"):
            pt.rms_norm_quant(x, 8, w, scale_in=torch.ones(1, device="cuda"))
        with self.assertRaisesRegex(ValueError, "quant scale group128 takes widths that are "
                                                "multiples of 128.*got width 8"):
            pt.rms_norm_quant(x, 8, w, scale="group128")
        with self.assertRaisesRegex(ValueError, "a weight offset of 1 needs w"):
            pt.rms_norm(x, 8, None, weight_offset=1.0)
        with self.assertRaisesRegex(ValueError, "heads=True takes no residual"):
            pt.rms_norm(x.view(4, 2, 4), 4, None, residual=x.view(4, 2, 4), heads=True)
        with self.assertRaisesRegex(ValueError, "rows may not overlap"):
            pt.rms_norm(torch.randn(64, device="cuda").as_strided((4, 2, 8), (16, 4, 1)), 8, w,
                        heads=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
