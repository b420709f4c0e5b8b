"""The C ABI (ptxdsl/ptxdsl.h) through ctypes: the library's loading, each function's signature,
and its status codes turned into Python exceptions."""

import ctypes
import ctypes.util
import os
import pathlib
import threading

# ptxdsl_status, ptxdsl_dtype and ptxdsl_norm, as the header numbers them.
SUCCESS = 0
ERROR_INVALID_ARGUMENT = 1
ERROR_UNSUPPORTED = 2
ERROR_NO_DRIVER = 3
ERROR_DRIVER = 4
ERROR_OUT_OF_MEMORY = 5
ERROR_INTERNAL = 6

F32, F16, BF16 = 0, 1, 2
LAYER_NORM, RMS_NORM = 0, 1


class Error(RuntimeError):
    """A ptxdsl call failed; `status` is its ptxdsl_status name, the message says why."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class ArgumentError(Error, ValueError):
    """An argument the library refused: the message names it, its value and what is allowed."""


class UnsupportedError(Error, NotImplementedError):
    """A valid request the library does not support yet."""


class DriverError(Error):
    """No CUDA driver, or a driver call failed."""


_EXCEPTIONS = {
    ERROR_INVALID_ARGUMENT: ArgumentError,
    ERROR_UNSUPPORTED: UnsupportedError,
    ERROR_NO_DRIVER: DriverError,
    ERROR_DRIVER: DriverError,
}

_i32, _i64, _u64 = ctypes.c_int32, ctypes.c_int64, ctypes.c_uint64
_ptr, _f32 = ctypes.c_void_p, ctypes.c_float


class NormOptions(ctypes.Structure):
    """ptxdsl_norm_options: the model options of a norm (ptxdsl.h says what each computes)."""
    _fields_ = [("size", ctypes.c_uint32), ("weight_offset", ctypes.c_float),
                ("casting", ctypes.c_char_p), ("quant", ctypes.c_char_p),
                ("row_groups", ctypes.c_uint32), ("group_stride", ctypes.c_uint32),
                ("residual_in_f32", ctypes.c_int32), ("deterministic", ctypes.c_char_p),
                ("quant_scale", ctypes.c_char_p), ("quant_scale_layout", ctypes.c_char_p),
                ("quant_scale_in", ctypes.c_void_p)]


_options_lock = threading.Lock()
_options_cache = {}
_PLAIN_OPTIONS = (0.0, "none", "none", 1, 0, "1", "per-token", "row-major")


def norm_options(weight_offset=0.0, casting="none", quant="none", row_groups=1,
                 group_stride=0, deterministic="1", quant_scale="per-token",
                 quant_scale_layout="row-major", quant_scale_in=None):
    """These options as a pointer to a ptxdsl_norm_options, made once and kept (calls pass it as
    is); None for the plain norm, which the library takes as NULL. The library checks the values
    and names what it allows. `deterministic`: the backward's dw/db bits, "1" (run to run),
    "portable" (the same on every GPU) or "0". `quant_scale`: "per-token", "static" or
    "group128"; `quant_scale_in`: the device address of a static scale's one float (or nvfp4's
    global scale), or None: options with an address are made for the call, not kept (an
    address is the call's, not the kernels')."""
    key = (float(weight_offset), casting, quant, row_groups, group_stride, deterministic,
           quant_scale, quant_scale_layout)
    if key == _PLAIN_OPTIONS and not quant_scale_in:
        return None
    found = _options_cache.get(key) if not quant_scale_in else None
    if found is not None:
        return found
    for name, value in (("casting", casting), ("quant", quant), ("deterministic", deterministic),
                        ("quant_scale", quant_scale), ("quant_scale_layout", quant_scale_layout)):
        if not isinstance(value, str):
            raise ArgumentError("PTXDSL_ERROR_INVALID_ARGUMENT",
                                f"{name} must be a string, got {type(value).__name__}")
    for name, value in (("row_groups", row_groups), ("group_stride", group_stride)):
        if not 0 <= integer(name, value, "int64") <= 2**32 - 1:
            raise ArgumentError("PTXDSL_ERROR_INVALID_ARGUMENT",
                                f"{name} must be in [0, 4294967295] (a C uint32_t), got {value}")
    if quant_scale_in is not None and integer("quant_scale_in", quant_scale_in, "int64") < 0:
        raise ArgumentError("PTXDSL_ERROR_INVALID_ARGUMENT",
                            f"quant_scale_in must be a device address, got {quant_scale_in}")
    o = NormOptions(ctypes.sizeof(NormOptions), key[0], casting.encode(), quant.encode(),
                    row_groups, group_stride, 0, deterministic.encode(), quant_scale.encode(),
                    quant_scale_layout.encode(), quant_scale_in or None)
    if quant_scale_in:
        return ctypes.pointer(o)
    with _options_lock:
        return _options_cache.setdefault(key, ctypes.pointer(o))


_SIGNATURES = {
    "ptxdsl_version": [],
    "ptxdsl_status_name": [_i32],
    "ptxdsl_last_error": [],
    "ptxdsl_init": [],
    "ptxdsl_device_count": [ctypes.POINTER(_i32)],
    # device, dtype, weight_dtype, batch, width, stride, x, w, b, residual, residual_out, y,
    # mean, rstd, eps, stream
    "ptxdsl_layer_norm_forward": [_i32, _i32, _i32, _i64, _i64, _i64] + [_ptr] * 8 + [_f32, _ptr],
    # ..., dy, x, w, mean, rstd, dx, dw, db, workspace, workspace_bytes, stream
    "ptxdsl_layer_norm_backward": [_i32, _i32, _i32, _i64, _i64, _i64] + [_ptr] * 10 + [_u64, _ptr],
    # ..., x, w, residual, residual_out, y, rstd, eps, stream
    "ptxdsl_rms_norm_forward": [_i32, _i32, _i32, _i64, _i64, _i64] + [_ptr] * 6 + [_f32, _ptr],
    # ..., dy, x, w, rstd, dx, dw, workspace, workspace_bytes, stream
    "ptxdsl_rms_norm_backward": [_i32, _i32, _i32, _i64, _i64, _i64] + [_ptr] * 8 + [_u64, _ptr],
    "ptxdsl_norm_workspace_bytes": [_i32, _i32, _i32, _i32, _i64, _i64, ctypes.POINTER(_u64)],
    "ptxdsl_norm_prepare": [_i32, _i32, _i32, _i32, _i64],
    # device, norm, dtype, weight_dtype, batch, width, stride, options, x, w, b, residual,
    # residual_out, y, y_scale, mean, rstd, eps, stream
    "ptxdsl_norm_forward_ex": [_i32, _i32, _i32, _i32, _i64, _i64, _i64, _ptr] + [_ptr] * 9 +
                              [_f32, _ptr],
    # ..., options, dy, dh, x, w, mean, rstd, dx, dw, db, workspace, workspace_bytes, stream
    "ptxdsl_norm_backward_ex": [_i32, _i32, _i32, _i32, _i64, _i64, _i64, _ptr] + [_ptr] * 10 +
                               [_u64, _ptr],
    "ptxdsl_norm_workspace_bytes_ex": [_i32, _i32, _i32, _i32, _i64, _i64, _ptr,
                                       ctypes.POINTER(_u64)],
    "ptxdsl_norm_prepare_ex": [_i32, _i32, _i32, _i32, _i64, _ptr],
}
_RESTYPES = {
    "ptxdsl_status_name": ctypes.c_char_p,
    "ptxdsl_last_error": ctypes.c_char_p,
}


def _candidates():
    """Where libptxdsl.so is looked for, in order."""
    env = os.environ.get("PTXDSL_LIBRARY")
    if env:
        return [env]  # when set, the only place: a wrong path is an error, not a fallback
    here = pathlib.Path(__file__).resolve().parent
    # pip install: beside this file; cmake --install: <prefix>/lib/python/ptxdsl beside
    # <prefix>/lib/libptxdsl.so.
    found = [str(here / "libptxdsl.so"), str(here.parent.parent / "libptxdsl.so")]
    system = ctypes.util.find_library("ptxdsl")
    if system:
        found.append(system)
    return found


_lock = threading.Lock()
_library = None


def library():
    """The loaded library, its functions declared; loaded on first use."""
    global _library
    if _library is not None:  # every call asks: no lock once loaded
        return _library
    with _lock:
        if _library is not None:
            return _library
        tried = []
        for path in _candidates():
            try:
                lib = ctypes.CDLL(path)
                break
            except OSError as e:
                tried.append(f"{path}: {e}")
        else:
            raise DriverError(
                "NOT_FOUND",
                "libptxdsl.so not found (set PTXDSL_LIBRARY to its path); tried " + "; ".join(tried),
            )
        for name, args in _SIGNATURES.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                raise DriverError(
                    "NOT_FOUND",
                    f"{lib._name} is not libptxdsl.so: it has no function {name} (set "
                    f"PTXDSL_LIBRARY to the path of libptxdsl.so)") from None
            fn.argtypes = args
            fn.restype = _RESTYPES.get(name, _i32)
        _functions.update((name, getattr(lib, name)) for name in _SIGNATURES)
        _library = lib
        return lib


_functions = {}


def function(name):
    """The library's C function `name`, declared (loads the library on first use)."""
    fn = _functions.get(name)
    if fn is None:
        library()
        fn = _functions[name]
    return fn


# The functions ptxdsl's native libraries (libptxdsl_torch.so, libptxdsl_jax.so) call, in the
# order of their CApi (runtime/python/native/c_api.hpp): they call this library, not their own.
NATIVE_FUNCTIONS = ("ptxdsl_layer_norm_forward", "ptxdsl_layer_norm_backward",
                    "ptxdsl_rms_norm_forward", "ptxdsl_rms_norm_backward", "ptxdsl_last_error",
                    "ptxdsl_norm_backward_ex")


def native_function_addresses():
    """NATIVE_FUNCTIONS' addresses in the loaded library, as integers."""
    return [ctypes.cast(function(name), ctypes.c_void_p).value for name in NATIVE_FUNCTIONS]


def native_library_candidates(name):
    """Where a native library `name` may be: installed beside this package's files; in a build
    tree, runtime/python/native beside runtime/capi, where libptxdsl.so is."""
    found = [pathlib.Path(__file__).resolve().parent / name]
    loaded = pathlib.Path(library()._name)
    if loaded.is_absolute() or loaded.parent != pathlib.Path("."):
        found.append(loaded.resolve().parent.parent / "python" / "native" / name)
    return found


def exception(status, message):
    """The exception for a failed call's status and message."""
    if status == ERROR_OUT_OF_MEMORY:
        return MemoryError(message)
    name = library().ptxdsl_status_name(status).decode()
    return _EXCEPTIONS.get(status, Error)(name, message)


def check(status):
    """Raises the exception for a failed call's status, with this thread's message."""
    if status == SUCCESS:
        return
    raise exception(status, library().ptxdsl_last_error().decode("utf-8", "replace"))


def call(name, *args):
    """Calls the C function `name` and raises on failure."""
    check(function(name)(*args))


# The C types' ranges: ctypes wraps an integer out of its type's range silently (2**32 + 1 passes
# as 1), so values from users are checked first.
_RANGES = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1)}


def integer(name, value, ctype="int32"):
    """`value` as an integer of the C type `ctype`, or ArgumentError naming it and the range."""
    lo, hi = _RANGES[ctype]
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            value = value.__index__()
        except (AttributeError, TypeError):
            raise ArgumentError("PTXDSL_ERROR_INVALID_ARGUMENT",
                                f"{name} must be an integer, got {value!r}") from None
    if not lo <= value <= hi:
        raise ArgumentError("PTXDSL_ERROR_INVALID_ARGUMENT",
                            f"{name} must be in [{lo}, {hi}] (a C {ctype}_t), got {value}")
    return value


def version():
    """The library's version as (major, minor, patch)."""
    v = library().ptxdsl_version()
    return (v // 10000, v // 100 % 100, v % 100)


def device_count():
    """CUDA devices the driver sees."""
    n = _i32(0)
    call("ptxdsl_device_count", ctypes.byref(n))
    return n.value


def workspace_bytes(device, norm, dtype, weight_dtype, width, batch):
    """Bytes of workspace a backward of `batch` rows needs."""
    n = _u64(0)
    call("ptxdsl_norm_workspace_bytes", integer("device", device), integer("norm", norm),
         integer("dtype", dtype), integer("weight_dtype", weight_dtype),
         integer("width", width, "int64"), integer("batch", batch, "int64"), ctypes.byref(n))
    return n.value
