"""ptxdsl.jax on a GPU: rms_norm and layer_norm, forward and backward, against a float64 reference
at odd shapes and every dtype pair, under jax.jit, jax.grad and jax.vmap, with the residual add,
the dx-only backward, argument errors, and a jitted training step whose losses match the same
model's with reference norms. Exits 77 (CTest's skip) when jax or a GPU is missing.

Run it again with XLA_FLAGS="--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL
--xla_gpu_graph_min_graph_size=1" to have XLA record the calls into CUDA graphs."""

import sys
import unittest

try:
    import jax
    import jax.numpy as jnp
    import numpy as np
except ImportError:
    print("skipped: no jax")
    sys.exit(77)
if not any(d.platform == "gpu" for d in jax.devices()):
    print("skipped: no GPU for jax")
    sys.exit(77)

import ptxdsl
import ptxdsl.jax as pj

# Error bound relative to the largest reference magnitude of each output (at least 1).
TOLERANCE = {jnp.float32: 2e-5, jnp.float16: 4e-3, jnp.bfloat16: 3e-2}
SHAPES = [(1, 1), (3, 7), (17, 1000), (5, 4097), (2, 3, 31), (64, 8192)]
DTYPES = [(jnp.float32, jnp.float32), (jnp.float16, jnp.float16), (jnp.bfloat16, jnp.bfloat16),
          (jnp.bfloat16, jnp.float32), (jnp.float16, jnp.float32)]


def f64(a):
    return np.asarray(jnp.asarray(a, jnp.float32), np.float64)


def close(test, got, want, dtype, what):
    scale = max(np.abs(want).max(initial=0.0), 1.0)
    got = f64(got)
    test.assertEqual(got.shape, want.shape, what)
    test.assertTrue(np.isfinite(got).all(), f"{what}: non-finite output")
    err = np.abs(got - want).max(initial=0.0)
    test.assertLessEqual(err / scale, TOLERANCE[dtype], f"{what}: error {err:.3g}, scale {scale:.3g}")


def inputs(shape, dtype, weight_dtype, seed):
    k = jax.random.split(jax.random.PRNGKey(seed), 5)
    n = shape[-1]
    x = (jax.random.normal(k[0], shape) * 2 + 0.5).astype(dtype)
    w = (jax.random.uniform(k[1], (n,)) + 0.5).astype(weight_dtype)
    b = jax.random.normal(k[2], (n,)).astype(weight_dtype)
    r = jax.random.normal(k[3], shape).astype(dtype)
    dy = jax.random.normal(k[4], shape).astype(dtype)
    return x, w, b, r, dy


def reference(layer, x, w, b, dy, eps):
    """y, dx, dw, db in float64 (numpy), the norm over the last axis."""
    x, w, dy = f64(x), f64(w), f64(dy)
    rows = x.reshape(-1, x.shape[-1])
    g = dy.reshape(rows.shape) * w
    if layer:
        mu = rows.mean(-1, keepdims=True)
        rstd = 1 / np.sqrt(((rows - mu) ** 2).mean(-1, keepdims=True) + eps)
        xhat = (rows - mu) * rstd
        y = xhat * w + f64(b)
        dx = rstd * (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True))
    else:
        rstd = 1 / np.sqrt((rows ** 2).mean(-1, keepdims=True) + eps)
        xhat = rows * rstd
        y = xhat * w
        dx = rstd * g - xhat * rstd * (g * xhat).mean(-1, keepdims=True)
    dyr = dy.reshape(rows.shape)
    return (y.reshape(x.shape), dx.reshape(x.shape), (dyr * xhat).sum(0), dyr.sum(0))


def norm_of(layer):
    if layer:
        return lambda x, w, b, r, eps: pj.layer_norm(x, w, b, eps, residual=r)
    return lambda x, w, b, r, eps: pj.rms_norm(x, w, eps, residual=r)


class Norms(unittest.TestCase):
    def check_case(self, layer, shape, dtype, weight_dtype, residual, seed):
        eps = 1e-5
        x, w, b, r, dy = inputs(shape, dtype, weight_dtype, seed)
        norm = norm_of(layer)
        h = (x.astype(jnp.float32) + r.astype(jnp.float32)).astype(dtype) if residual else x
        y_ref, dx_ref, dw_ref, db_ref = reference(layer, h, w, b, dy, eps)
        what = f"{'layer' if layer else 'rms'} {shape} {dtype.__name__}/{weight_dtype.__name__}" \
               f"{' residual' if residual else ''}"

        def loss(x, w, b, r):
            out = norm(x, w, b if layer else None, r if residual else None, eps)
            y = out[0] if residual else out
            return jnp.sum(y.astype(jnp.float32) * dy.astype(jnp.float32)), out

        (_, out), grads = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2, 3), has_aux=True))(
            x, w, b, r)
        y = out[0] if residual else out
        self.assertEqual(y.dtype, dtype)
        close(self, y, y_ref, dtype, what + " y")
        if residual:
            self.assertTrue(bool((out[1] == h).all()), what + " h")
        close(self, grads[0], dx_ref, dtype, what + " dx")
        self.assertEqual(grads[1].dtype, weight_dtype)
        close(self, grads[1], dw_ref, dtype, what + " dw")
        if layer:
            close(self, grads[2], db_ref, dtype, what + " db")
        if residual:
            close(self, grads[3], dx_ref, dtype, what + " dresidual")

    def test_forward_and_backward(self):
        seed = 0
        for layer in (False, True):
            for shape in SHAPES:
                for dtype, weight_dtype in DTYPES:
                    seed += 1
                    with self.subTest(layer=layer, shape=shape, dtype=dtype.__name__,
                                      weight_dtype=weight_dtype.__name__):
                        self.check_case(layer, shape, dtype, weight_dtype, False, seed)
                for dtype, weight_dtype in DTYPES[1:4]:
                    seed += 1
                    with self.subTest(layer=layer, shape=shape, residual=True):
                        self.check_case(layer, shape, dtype, weight_dtype, True, seed)

    def test_dx_only_and_no_weight(self):
        x, w, b, _, dy = inputs((9, 333), jnp.bfloat16, jnp.float32, 7)
        for layer in (False, True):
            norm = norm_of(layer)
            y_ref, dx_ref, _, _ = reference(layer, x, w, b, dy, 1e-6)

            def loss(x):  # the weight is closed over: not differentiated, the dx-only kernel
                y = norm(x, w, b if layer else None, None, 1e-6)
                return jnp.sum(y.astype(jnp.float32) * dy.astype(jnp.float32))

            close(self, jax.jit(jax.grad(loss))(x), dx_ref, jnp.bfloat16, f"layer={layer} dx only")
            ones = jnp.ones_like(w)
            zeros = jnp.zeros_like(b)
            y_plain, dx_plain, _, _ = reference(layer, x, ones, zeros, dy, 1e-6)
            y = jax.jit(lambda x: norm(x, None, None, None, 1e-6))(x)
            close(self, y, y_plain, jnp.bfloat16, f"layer={layer} no weight")

    def test_vmap(self):
        x, w, b, _, dy = inputs((4, 6, 257), jnp.float32, jnp.float32, 11)
        ws = jnp.stack([w * (i + 1) for i in range(4)])
        for layer in (False, True):
            norm = norm_of(layer)

            def loss(x, w):
                y = norm(x, w, b if layer else None, None, 1e-5)
                return jnp.sum(y * dy[0])

            # The weight shared, then one weight per example; per-example gradients each way.
            for in_axes, weights in (((0, None), w), ((0, 0), ws)):
                got_y = jax.jit(jax.vmap(lambda x, w: norm(x, w, b if layer else None, None, 1e-5),
                                         in_axes=in_axes))(x, weights)
                got_g = jax.jit(jax.vmap(jax.grad(loss, argnums=(0, 1)), in_axes=in_axes))(
                    x, weights)
                for i in range(4):
                    wi = weights if in_axes[1] is None else weights[i]
                    y_ref, dx_ref, dw_ref, _ = reference(layer, x[i], wi, b, dy[0], 1e-5)
                    what = f"layer={layer} vmap {in_axes} [{i}]"
                    close(self, got_y[i], y_ref, jnp.float32, what + " y")
                    close(self, got_g[0][i], dx_ref, jnp.float32, what + " dx")
                    close(self, got_g[1][i], dw_ref, jnp.float32, what + " dw")

    def test_errors(self):
        x = jnp.ones((3, 8), jnp.float32)
        cases = [
            (lambda: pj.rms_norm(x.astype(jnp.int32)), "input must be float32, float16 or bfloat16"),
            (lambda: pj.rms_norm(x, jnp.ones(7)), "weight must have shape (8,), got (7,)"),
            (lambda: pj.rms_norm(x.astype(jnp.bfloat16), jnp.ones(8, jnp.float16)),
             "weight must be bfloat16 or float32"),
            (lambda: pj.layer_norm(x, jnp.ones(8), jnp.ones(8, jnp.float16)),
             "bias must be float32 for a float32 input, got float16"),
            (lambda: pj.rms_norm(x, eps=float("nan")), "eps must be a finite float >= 0"),
            (lambda: pj.rms_norm(jnp.ones((2, 0))), "last axis must have 1 to 262144"),
            (lambda: pj.rms_norm(jnp.ones((1, 262145))), "last axis must have 1 to 262144"),
            (lambda: pj.rms_norm(x, residual=jnp.ones((3, 9))), "residual must be like the input"),
        ]
        for call, message in cases:
            with self.subTest(message=message):
                with self.assertRaises(ptxdsl.ArgumentError) as caught:
                    call()
                self.assertIn(message, str(caught.exception))

    def test_training_step(self):
        """A jitted training step of a small residual MLP; its losses match the same model's with
        reference (jax.numpy) norms."""
        width, hidden, depth = 256, 512, 3
        keys = jax.random.split(jax.random.PRNGKey(3), 2 * depth + 2)
        params = {"norm": [jnp.ones(width) for _ in range(depth)],
                  "up": [jax.random.normal(keys[i], (width, hidden)) / 16 for i in range(depth)],
                  "down": [jax.random.normal(keys[depth + i], (hidden, width)) / 22
                           for i in range(depth)]}
        x = jax.random.normal(keys[-2], (64, width))
        target = jax.random.normal(keys[-1], (64, width))

        def ref_rms(x, w, eps):
            return x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + eps) * w

        def model(params, x, rms):
            for w, up, down in zip(params["norm"], params["up"], params["down"]):
                x = x + jax.nn.gelu(rms(x, w, 1e-6) @ up) @ down
            return x

        def step_with(rms):
            @jax.jit
            def step(params):
                loss, g = jax.value_and_grad(
                    lambda p: jnp.mean((model(p, x, rms) - target) ** 2))(params)
                return loss, jax.tree_util.tree_map(lambda p, d: p - 0.05 * d, params, g)
            return step

        losses = {}
        for name, rms in (("ptxdsl", pj.rms_norm), ("reference", ref_rms)):
            p, losses[name] = params, []
            step = step_with(rms)
            for _ in range(5):
                loss, p = step(p)
                losses[name].append(float(loss))
        self.assertLess(losses["ptxdsl"][-1], losses["ptxdsl"][0])
        np.testing.assert_allclose(losses["ptxdsl"], losses["reference"], rtol=1e-4)


if __name__ == "__main__":
    unittest.main(verbosity=1)
