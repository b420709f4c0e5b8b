"""ptxdsl.torch's compiled fast path (runtime/python/native/torch_ops.cpp): the eager norms as C++
torch operators with C++ autograd, bound to the C ABI functions of the libptxdsl.so that _lib
loaded. `ops()` is None where it is not built or does not load, or is turned off; ptxdsl.torch then
runs its pure-Python path, which computes the same thing. It is on by default: the library
installed beside the package or built beside libptxdsl.so; PTXDSL_TORCH_NATIVE=<path> names it,
and 0 or off turn it off. Where it was built as a Python extension module too, calls go through
pybind11 (the fastest way in); PTXDSL_TORCH_NATIVE_ENTRY=torch.ops takes the torch operators."""

import logging
import os
import pathlib
import re

import torch

from . import _lib

_log = logging.getLogger(__name__)
_NAME = "libptxdsl_torch.so"


def _candidates():
    env = os.environ.get("PTXDSL_TORCH_NATIVE", "1").strip()
    if env.lower() in ("0", "off"):
        return []
    if env.lower() not in ("", "1", "on"):
        return [pathlib.Path(env)]
    return _lib.native_library_candidates(_NAME)


class _Ops:
    """The loaded calls: the Python extension module's where the library is one (the fastest way
    in), else the raw callables behind torch.ops (no Python frame between)."""

    def __init__(self, path):
        pybind = os.environ.get("PTXDSL_TORCH_NATIVE_ENTRY", "pybind11") != "torch.ops"
        module = _extension_module(path) if pybind else None
        if module is None:
            torch.ops.load_library(str(path))
            ns = torch.ops.ptxdsl_native
            module = type("TorchOps", (), {})()
            for name in ("bind", "rms_norm_call", "layer_norm_call"):
                overload = getattr(ns, name).default
                setattr(module, name, getattr(overload, "_op", overload))
        module.bind(_lib.native_function_addresses())
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


def reraise_unless_fallback(e):
    """After a native call raised e: returns where e is not a RuntimeError (arguments the native
    call could not even parse: the Python path says what is wrong with them); raises the ptxdsl
    exception of a library refusal, or e itself otherwise."""
    if not isinstance(e, RuntimeError):
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
