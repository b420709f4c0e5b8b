"""torch.compile sees ptxdsl's norms: a pre-grad graph pass for Inductor that replaces the norms a
model writes with torch (F.rms_norm, F.layer_norm, torch.nn's modules, Hugging Face's RMSNorm
written out in f32) by ptxdsl's custom ops, and a residual add feeding the norm by the fused
residual kernel, without a change to the model.

    import ptxdsl.torch as pt
    pt.enable_inductor_fusion()
    step = torch.compile(model)

The pass runs on the forward graph before autograd, so the custom ops' own backward formulas give
the backward graph. A norm is replaced only where ptxdsl computes it: CUDA tensors of float32,
float16 or bfloat16, the normalized dimensions last, up to 262144 elements a row, a weight (and
bias) of the row's dtype or float32 beside 16-bit rows, a constant eps, and an output of the
input's dtype and shape; anything else stays torch's."""

import logging
import math
import operator

import torch
import torch.nn.functional as F

from . import torch as pt

_log = logging.getLogger(__name__)
_MAX_WIDTH = 262144
_RMS_NORMS = {F.rms_norm, getattr(torch, "rms_norm", F.rms_norm)}
_LAYER_NORMS = {F.layer_norm, torch.layer_norm}
_ADDS = {operator.add, torch.add, operator.iadd}
_MULS = {operator.mul, torch.mul}

# Replacements made since the process started, by kind: a test and a user can see the pass work.
replaced = {"rms_norm": 0, "layer_norm": 0, "residual": 0}


# ---- what the graph calls instead: reshape to rows, the custom op, reshape back ----


def _rows(t, width):
    return t.reshape(-1, width).contiguous() if t is not None else None


def rms_norm_rows(x, weight, eps, width):
    y, _, _ = pt._rms_norm_forward(_rows(x, width), weight, None, eps)
    return y.view(x.shape)


def add_rms_norm_rows(x, residual, weight, eps, width):
    y, _, h = pt._rms_norm_forward(_rows(x, width), weight, _rows(residual, width), eps)
    return y.view(x.shape), h.view(x.shape)


def layer_norm_rows(x, weight, bias, eps, width):
    y, _, _, _ = pt._layer_norm_forward(_rows(x, width), weight, bias, None, eps)
    return y.view(x.shape)


def add_layer_norm_rows(x, residual, weight, bias, eps, width):
    y, _, _, h = pt._layer_norm_forward(_rows(x, width), weight, bias, _rows(residual, width),
                                        eps)
    return y.view(x.shape), h.view(x.shape)


# ---- reading the graph ----


def _value(node):
    """The fake tensor (or constant) Dynamo recorded for a node's output."""
    if isinstance(node, torch.fx.Node):
        return node.meta.get("example_value", node.meta.get("val"))
    return node


def _is_call(node, targets):
    return isinstance(node, torch.fx.Node) and node.op == "call_function" and \
        node.target in targets


def _is_method(node, name):
    return isinstance(node, torch.fx.Node) and node.op == "call_method" and node.target == name


def _arg(node, index, name, default=None):
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _row_tensor(node):
    v = _value(node)
    return isinstance(v, torch.Tensor) and v.is_cuda and v.dtype in pt._CODES and v.dim() >= 1


def _param_fits(node, x, width):
    """A weight or bias ptxdsl takes beside rows like x: absent, or `width` elements of x's dtype
    or float32 beside 16-bit rows, on x's device."""
    if node is None:
        return True
    v = _value(node)
    if not isinstance(v, torch.Tensor) or v.numel() != width or v.device != x.device:
        return False
    return v.dtype == x.dtype or (v.dtype == torch.float32 and x.dtype != torch.float32)


def _same_output(new_value, old_node):
    old = _value(old_node)
    return isinstance(old, torch.Tensor) and old.dtype == new_value.dtype and \
        tuple(old.shape) == tuple(new_value.shape)


def _eps(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and \
        abs(float(value)) <= pt._FLOAT32_MAX


# ---- the norms: (norm's input, weight, bias, eps, width, nodes the match consumes) ----


def _torch_norm(node):
    """F.rms_norm / F.layer_norm (and nn.RMSNorm, nn.LayerNorm, which call them)."""
    layer = _is_call(node, _LAYER_NORMS)
    if not (layer or _is_call(node, _RMS_NORMS)):
        return None
    x, shape = _arg(node, 0, "input"), _arg(node, 1, "normalized_shape")
    weight = _arg(node, 2, "weight")
    bias = _arg(node, 3, "bias") if layer else None
    eps = _arg(node, 4 if layer else 3, "eps", 1e-5 if layer else None)
    if not _row_tensor(x) or not isinstance(shape, (tuple, list, torch.Size)):
        return None
    if not all(isinstance(d, int) for d in shape):
        return None
    xv = _value(x)
    if not shape or tuple(xv.shape[-len(shape):]) != tuple(shape):
        return None
    if eps is None:
        eps = torch.finfo(xv.dtype).eps
    if layer and weight is None and bias is not None:
        return None
    return ("layer_norm" if layer else "rms_norm", x, weight, bias, eps, math.prod(shape))


def _hf_rms_norm(node):
    """Hugging Face's RMSNorm written out (LlamaRMSNorm and its copies):
        h = x.to(float32); h = h * rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
        y = weight * h.to(x.dtype)"""
    if not _is_call(node, _MULS) or len(node.args) != 2:
        return None
    for weight, cast in (node.args, node.args[::-1]):
        if not _is_method(cast, "to"):
            continue
        scaled = cast.args[0]
        if not _is_call(scaled, _MULS) or len(scaled.args) != 2:
            continue
        for x32, rsqrt in (scaled.args, scaled.args[::-1]):
            if not _is_call(rsqrt, {torch.rsqrt}):
                continue
            found = _hf_variance(rsqrt.args[0], x32)
            if found is None:
                continue
            x = x32.args[0] if _is_method(x32, "to") or _is_method(x32, "float") else x32
            if not _row_tensor(x) or not isinstance(weight, torch.fx.Node):
                continue
            return ("rms_norm", x, weight, None, found, _value(x).shape[-1])
    return None


def _hf_variance(node, x32):
    """eps, where node is x32.pow(2).mean(-1, keepdim=True) + eps."""
    if not _is_call(node, _ADDS) or len(node.args) != 2:
        return None
    mean, eps = node.args
    if not _eps(eps):
        mean, eps = eps, mean
    if not (_eps(eps) and _is_method(mean, "mean")):
        return None
    dims = _arg(mean, 1, "dim")
    if dims not in (-1, [-1], (-1,)) or not mean.kwargs.get("keepdim", False):
        return None
    square = mean.args[0]
    squared = (_is_method(square, "pow") and square.args[1:] == (2,) and
               square.args[0] is x32)
    squared = squared or (_is_call(square, _MULS) and square.args == (x32, x32))
    if not squared or _value(x32) is None or _value(x32).dtype != torch.float32:
        return None
    return float(eps)


# ---- the rewrite ----


def _residual_add(x):
    """(a, b) where x = a + b of two row tensors of one shape and dtype, else None."""
    if not _is_call(x, _ADDS) or len(x.args) != 2 or x.kwargs:
        return None
    a, b = x.args
    if not (_row_tensor(a) and _row_tensor(b)):
        return None
    av, bv, xv = _value(a), _value(b), _value(x)
    if av.shape != bv.shape or av.dtype != bv.dtype or xv.shape != av.shape or \
            xv.dtype != av.dtype:
        return None
    return a, b


def _fake_mode(*nodes):
    """The fake mode of the graph's recorded values (Dynamo's, which may not be the one the
    compile context holds now)."""
    for n in nodes:
        mode = getattr(_value(n), "fake_mode", None)
        if mode is not None:
            return mode
    return None


def _evaluate(fn, args):
    """The fake value of fn(args) under the graph's fake mode, or None where it cannot run."""
    values = [_value(a) for a in args]
    mode = _fake_mode(*args)
    if mode is None:
        _log.debug("ptxdsl.inductor: no fake mode for %s", fn.__name__)
        return None
    try:
        with mode:
            return fn(*values)
    except Exception as e:  # a case the custom op refuses: leave torch's norm
        _log.debug("ptxdsl.inductor: %s(%s) left to torch: %s", fn.__name__, values, e)
        return None


def _replace(graph, node, match):
    kind, x, weight, bias, eps, width = match
    if not 1 <= width <= _MAX_WIDTH or not _eps(eps):
        return False
    xv = _value(x)
    if not (_param_fits(weight, xv, width) and _param_fits(bias, xv, width)):
        return False
    if weight is not None and bias is not None and _value(weight).dtype != _value(bias).dtype:
        return False
    eps = float(eps)
    add = _residual_add(x)
    rms = kind == "rms_norm"
    if add is not None:
        fn, args = ((add_rms_norm_rows, (add[0], add[1], weight, eps, width)) if rms else
                    (add_layer_norm_rows, (add[0], add[1], weight, bias, eps, width)))
    else:
        fn, args = ((rms_norm_rows, (x, weight, eps, width)) if rms else
                    (layer_norm_rows, (x, weight, bias, eps, width)))
    value = _evaluate(fn, args)
    if value is None or not _same_output(value[0] if add is not None else value, node):
        return False
    # In the norm's place: every argument is defined before it.
    with graph.inserting_before(node):
        fused = graph.call_function(fn, args)
        fused.meta["example_value"] = value
        if add is not None:
            y = graph.call_function(operator.getitem, (fused, 0))
            h = graph.call_function(operator.getitem, (fused, 1))
            y.meta["example_value"], h.meta["example_value"] = value
    node.replace_all_uses_with(fused if add is None else y)
    if add is not None:
        # h's later uses read the fused kernel's h; earlier ones (if any) keep torch's add.
        later = _after(graph, h)
        x.replace_all_uses_with(h, delete_user_cb=lambda user: user in later)
        replaced["residual"] += 1
    replaced[kind] += 1
    return True


def _after(graph, anchor):
    """The nodes after `anchor` in the graph's order."""
    seen, after = False, set()
    for n in graph.nodes:
        if seen:
            after.add(n)
        seen = seen or n is anchor
    return after


def fuse_norms(graph):
    """The pass: every supported norm in `graph` (a torch.fx.Graph) becomes ptxdsl's."""
    changed = False
    for node in list(graph.nodes):
        match = _torch_norm(node) or _hf_rms_norm(node)
        if match is not None and _replace(graph, node, match):
            changed = True
    if changed:
        graph.eliminate_dead_code()
        graph.lint()


class _FusionPass:
    """Inductor's pre-grad hook: ours, then whatever pass was set before."""

    def __init__(self, previous):
        self.previous = previous

    def __call__(self, graph):
        fuse_norms(graph)
        if self.previous is not None:
            self.previous(graph)

    def uuid(self):
        return "ptxdsl.inductor.fuse_norms/1"


def enable_inductor_fusion():
    """Makes torch.compile (Inductor) replace torch's norms with ptxdsl's from now on in this
    process. Returns the pass; calling again does nothing more."""
    from torch._inductor import config
    current = config.pre_grad_custom_pass
    if isinstance(current, _FusionPass):
        return current
    config.pre_grad_custom_pass = _FusionPass(current)
    return config.pre_grad_custom_pass


def disable_inductor_fusion():
    """Undoes enable_inductor_fusion: the pass set before it, if any, stays."""
    from torch._inductor import config
    current = config.pre_grad_custom_pass
    if isinstance(current, _FusionPass):
        config.pre_grad_custom_pass = current.previous
