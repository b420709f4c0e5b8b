"""ptxdsl from Python: its C ABI through ctypes (no compiled extension), and, in `ptxdsl.torch`,
PyTorch operators and modules over it. The library is libptxdsl.so: $PTXDSL_LIBRARY when set,
else the one installed beside this package (<prefix>/lib/libptxdsl.so for
<prefix>/lib/python/ptxdsl), else the system's."""

from ._lib import (ArgumentError, DriverError, Error, UnsupportedError, device_count, library,
                   version)

__all__ = ["ArgumentError", "DriverError", "Error", "UnsupportedError", "device_count", "library",
           "version"]
