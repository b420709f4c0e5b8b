"""ptxdsl.torch's compiled fast path (runtime/python/native/torch_ops.cpp): the eager norms as C++
torch operators with C++ autograd, bound to the C ABI functions of the libptxdsl.so that _lib
loaded. `ops()` is None where it is not built, not asked for or does not load; ptxdsl.torch then
runs its pure-Python path, which computes the same thing. PTXDSL_TORCH_NATIVE=1 (or on) takes the
library installed beside the package or built beside libptxdsl.so, a path names it, and 0, off,
empty or unset (the default, until the crash noted in _candidates is fixed) turn it off;
PTXDSL_TORCH_NATIVE_ENTRY=pybind11 calls it as a Python extension module instead of through
torch.ops (where it was built as one)."""

import ctypes
import logging
import os
import pathlib
import re

import torch

from . import _lib

_log = logging.getLogger(__name__)
_NAME = "libptxdsl_torch.so"
_BOUND = ("ptxdsl_layer_norm_forward", "ptxdsl_layer_norm_backward", "ptxdsl_rms_norm_forward",
          "ptxdsl_rms_norm_backward", "ptxdsl_last_error")


def _candidates():
    # Off unless asked for: on the H100 (2026-12-07) a call that the fast path hands back to the
    # Python path (a CPU tensor, a wrong dtype) ended the process with a segmentation fault, and
    # no GPU was left to find why; tests/python/test_torch.py shows it.
    env = os.environ.get("PTXDSL_TORCH_NATIVE", "0").strip()
    if env.lower() in ("", "0", "off"):
        return []
    if env.lower() not in ("1", "on"):
        return [pathlib.Path(env)]
    # Installed beside this package's files; in a build tree, runtime/python/native beside
    # runtime/capi, where libptxdsl.so is.
    found = [pathlib.Path(__file__).resolve().parent / _NAME]
    library = pathlib.Path(_lib.library()._name)
    if library.is_absolute() or library.parent != pathlib.Path("."):
        found.append(library.resolve().parent.parent / "python" / "native" / _NAME)
    return found


class _Ops:
    """The loaded calls: the Python extension module's where the library is one (the fastest way
    in), else the raw callables behind torch.ops (no Python frame between)."""

    def __init__(self, path):
        # The extension module's entry is taken only when asked for, until it has passed the GPU
        # tests that torch.ops' entry has.
        pybind = os.environ.get("PTXDSL_TORCH_NATIVE_ENTRY", "torch.ops") == "pybind11"
        module = _extension_module(path) if pybind else None
        if module is None:
            torch.ops.load_library(str(path))
            ns = torch.ops.ptxdsl_native
            module = type("TorchOps", (), {})()
            for name in ("bind", "rms_norm_call", "layer_norm_call"):
                overload = getattr(ns, name).default
                setattr(module, name, getattr(overload, "_op", overload))
        module.bind([ctypes.cast(_lib.function(name), ctypes.c_void_p).value for name in _BOUND])
        self.rms_norm_call = module.rms_norm_call
        self.layer_norm_call = module.layer_norm_call
        self.entry = "pybind11" if hasattr(module, "__file__") else "torch.ops"


def _extension_module(path):
    """The library imported as the extension module _ptxdsl_torch, or None where it is not one."""
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.ExtensionFileLoader("_ptxdsl_torch", str(path))
    spec = importlib.util.spec_from_file_location("_ptxdsl_torch", str(path), loader=loader)
    try:
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
    except ImportError as e:  # built without Python's headers: no PyInit__ptxdsl_torch
        _log.debug("ptxdsl.torch: %s is not an extension module (%s)", path, e)
        return None
    return module


def _load():
    try:
        for path in _candidates():
            if path.is_file():
                ops = _Ops(path)
                _log.debug("ptxdsl.torch: native fast path from %s through %s", path, ops.entry)
                return ops
        _log.debug("ptxdsl.torch: no native fast path; the pure-Python path runs")
    except Exception as e:  # any failure leaves the pure-Python path, which is always there
        _log.warning("ptxdsl.torch: native fast path not loaded (%s); the pure-Python path runs",
                     e)
    return None


_ops = _load()


def ops():
    """The native operators, or None."""
    return _ops


_FALLBACK = "[ptxdsl fallback]"


def reraise_unless_fallback(e):
    """After a native call raised e: returns where the call handed the case back to the Python path
    (a case it does not take, or arguments it could not even parse: the Python path says what is
    wrong with them); raises the ptxdsl exception of a library refusal, or e itself otherwise."""
    text = str(e)
    if _FALLBACK in text or not isinstance(e, RuntimeError):
        return
    converted = error(e)
    if converted is e:
        raise e
    raise converted from None


_STATUS = re.compile(r"\[ptxdsl status (\d+)\] (.*)", re.S)


def error(e):
    """The ptxdsl exception a native operator's RuntimeError stands for, else e itself."""
    found = _STATUS.search(str(e))
    if found is None:
        return e
    return _lib.exception(int(found.group(1)), found.group(2).split("\nException raised from")[0])
