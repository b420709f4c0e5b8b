"""torch with a CUDA device for the GPU tests, or the process exits 77 (CTest's skip) saying which
is missing. Import it before anything that needs torch."""

import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("skipped: no torch")
    sys.exit(77)
if not torch.cuda.is_available():
    print("skipped: no CUDA device")
    sys.exit(77)

__all__ = ["torch", "F"]
