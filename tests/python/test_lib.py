"""ptxdsl's Python module over the C ABI, without torch: the library loads, its version and status
codes come through, refused arguments raise ArgumentError with the library's message, and without
a driver a call raises DriverError. Run with PTXDSL_LIBRARY set to the built libptxdsl.so."""

import ctypes
import os
import subprocess
import sys
import unittest

import ptxdsl
from ptxdsl import _lib


def layer_norm_forward(dtype=_lib.F16, weight_dtype=_lib.F16, batch=8, width=256, x=16, w=32,
                       b=48, y=64, mean=80, rstd=96, eps=1e-5):
    """A forward on fake (never dereferenced) addresses: every check before the launch runs."""
    _lib.call("ptxdsl_layer_norm_forward", 0, dtype, weight_dtype, batch, width, 0, x, w, b, None,
              None, y, mean, rstd, eps, None)


class LibraryTest(unittest.TestCase):

    def test_version(self):
        major, minor, patch = ptxdsl.version()
        self.assertGreaterEqual((major, minor, patch), (0, 1, 0))

    def test_bad_dtype_names_it(self):
        with self.assertRaises(ptxdsl.ArgumentError) as e:
            layer_norm_forward(dtype=7)
        self.assertIn("dtype must be PTXDSL_F32 (0), PTXDSL_F16 (1) or PTXDSL_BF16", str(e.exception))
        self.assertIn("got 7", str(e.exception))
        self.assertEqual(e.exception.status, "PTXDSL_ERROR_INVALID_ARGUMENT")
        self.assertIsInstance(e.exception, ValueError)

    def test_null_and_width(self):
        with self.assertRaisesRegex(ptxdsl.ArgumentError, "x is NULL"):
            layer_norm_forward(x=None)
        with self.assertRaisesRegex(ptxdsl.ArgumentError, "width"):
            layer_norm_forward(width=0)

    def test_model_options_through_the_extensible_entry(self):
        # ptxdsl_norm_options from ctypes: each bad value named before any driver loads.
        def forward(options, batch=8):
            _lib.call("ptxdsl_norm_forward_ex", 0, _lib.RMS_NORM, _lib.BF16, _lib.BF16, batch, 256,
                      0, options, 0x100000, 0x200000, None, None, None, 0x400000, 0x700000,
                      None, 0x600000, 1e-5, None)
        with self.assertRaisesRegex(ptxdsl.ArgumentError,
                                    "options->casting: casting must be one of none, llama, "
                                    "gemma, got 'mistral'"):
            forward(_lib.norm_options(casting="mistral"))
        with self.assertRaisesRegex(ptxdsl.ArgumentError, "options->quant: quant must be one of"):
            forward(_lib.norm_options(quant="fp4"))
        with self.assertRaisesRegex(ptxdsl.ArgumentError, "group stride must be at least the "
                                                          "width \\(256\\), got 8"):
            forward(_lib.norm_options(row_groups=4, group_stride=8))
        with self.assertRaisesRegex(ptxdsl.ArgumentError, "y_scale is given, but the quant is "
                                                          "none"):
            forward(_lib.norm_options(weight_offset=1.0))
        self.assertIsNone(_lib.norm_options())  # the plain norm: NULL
        self.assertIs(_lib.norm_options(1.0, "gemma"), _lib.norm_options(1.0, "gemma"))
        with self.assertRaisesRegex(ptxdsl.ArgumentError, "row_groups must be in"):
            _lib.norm_options(row_groups=2**32)

    def test_quant_scale_modes_through_the_extensible_entry(self):
        # The scale fields appended to ptxdsl_norm_options: each bad value named, a static
        # scale's address taken from the struct.
        def forward(options, y_scale=0x700000):
            _lib.call("ptxdsl_norm_forward_ex", 0, _lib.RMS_NORM, _lib.BF16, _lib.BF16, 8, 256,
                      0, options, 0x100000, 0x200000, None, None, None, 0x400000, y_scale,
                      None, 0x600000, 1e-5, None)
        self.assertEqual(ctypes.sizeof(_lib.NormOptions),
                         _lib.NormOptions.quant_scale_in.offset + ctypes.sizeof(ctypes.c_void_p))
        with self.assertRaisesRegex(ptxdsl.ArgumentError,
                                    "options->quant_scale: quant scale must be one of per-token, "
                                    "static, group128, got 'group64'"):
            forward(_lib.norm_options(quant="int8", quant_scale="group64"))
        with self.assertRaisesRegex(ptxdsl.ArgumentError, "quant_scale_in is a null pointer: "
                                                          "quant int8 with scale static"):
            forward(_lib.norm_options(quant="int8", quant_scale="static"), None)
        with self.assertRaisesRegex(ptxdsl.ArgumentError, "y overlaps quant_scale_in"):
            forward(_lib.norm_options(quant="int8", quant_scale="static",
                                      quant_scale_in=0x400000), None)
        with self.assertRaisesRegex(ptxdsl.ArgumentError, "quant scale group128 takes widths "
                                                          "that are multiples of 128"):
            _lib.call("ptxdsl_norm_forward_ex", 0, _lib.RMS_NORM, _lib.BF16, _lib.BF16, 0, 100,
                      0, _lib.norm_options(quant="int8", quant_scale="group128"), *([None] * 9),
                      1e-5, None)
        # Options with an address are the call's: made anew, never kept.
        self.assertIsNot(_lib.norm_options(quant="int8", quant_scale="static", quant_scale_in=64),
                         _lib.norm_options(quant="int8", quant_scale="static", quant_scale_in=64))
        self.assertIs(_lib.norm_options(quant="int8", quant_scale="group128"),
                      _lib.norm_options(quant="int8", quant_scale="group128"))

    def test_portable_determinism_through_the_extensible_entry(self):
        # The backward's determinism by the command line's names, checked at batch 0.
        def backward(options):
            _lib.call("ptxdsl_norm_backward_ex", 0, _lib.RMS_NORM, _lib.BF16, _lib.BF16, 0, 256,
                      0, options, *([None] * 10), 0, None)
        with self.assertRaisesRegex(ptxdsl.ArgumentError,
                                    "options->deterministic: deterministic must be 0, 1 or "
                                    "portable, got 'sometimes'"):
            backward(_lib.norm_options(deterministic="sometimes"))
        backward(_lib.norm_options(deterministic="portable"))
        self.assertIsNone(_lib.norm_options(deterministic="1"))

    def test_without_a_driver_calls_say_so(self):
        try:
            _lib.call("ptxdsl_init")
        except ptxdsl.DriverError as e:
            self.assertIn("no CUDA driver found", str(e))
            with self.assertRaisesRegex(ptxdsl.DriverError, "no CUDA driver found"):
                ptxdsl.device_count()
            return
        self.skipTest("a CUDA driver is present: test_torch.py covers the calls")

    def test_a_wrong_library_path_is_an_error(self):
        env = dict(os.environ, PTXDSL_LIBRARY="/nonexistent/libptxdsl.so")
        code = "import ptxdsl\ntry:\n ptxdsl.version()\nexcept ptxdsl.DriverError as e:\n print(e)"
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("libptxdsl.so not found", out.stdout)
        self.assertIn("/nonexistent/libptxdsl.so", out.stdout)

    def test_not_the_library_is_an_error_naming_it(self):
        env = dict(os.environ, PTXDSL_LIBRARY="libc.so.6")
        code = "import ptxdsl\ntry:\n ptxdsl.version()\nexcept ptxdsl.DriverError as e:\n print(e)"
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("libc.so.6 is not libptxdsl.so", out.stdout)
        self.assertIn("has no function ptxdsl_", out.stdout)

    def test_integers_out_of_their_c_range_are_refused_not_wrapped(self):
        # ctypes passes 2**32 + 1 as an int32 of 1 (F16) and 2**64 + 256 as an int64 of 256.
        for kwargs, what in (({"dtype": 2**32 + 1}, "dtype must be in [-2147483648, 2147483647]"),
                             ({"width": 2**64 + 256}, "width must be in"),
                             ({"batch": -2**63 - 1}, "batch must be in"),
                             ({"device": 2**31}, "device must be in"),
                             ({"width": 4.0}, "width must be an integer")):
            args = dict(device=0, norm=_lib.RMS_NORM, dtype=_lib.F32, weight_dtype=_lib.F32,
                        width=256, batch=8)
            args.update(kwargs)
            with self.assertRaisesRegex(ptxdsl.ArgumentError, what.replace("[", r"\[")):
                _lib.workspace_bytes(**args)


if __name__ == "__main__":
    unittest.main()
