# torch.compile's kernels for the small forwards, run a few times under ncu (after warm-up/autotune).
import os, sys, torch
import torch.nn.functional as F
torch._dynamo.config.recompile_limit = 64
cases = {"ln": (torch.float16, 4096, 1024), "rms": (torch.float32, 256, 4096), "ln2048": (torch.float16, 4096, 2048)}
kind = sys.argv[1]
dt, m, n = cases[kind]
x = -2.3 + 0.5 * torch.randn(m, n, device="cuda")
x = x.to(dt)
w = torch.rand(n, device="cuda").to(dt)
b = torch.rand(n, device="cuda").to(dt)
if kind.startswith("ln"):
    f = torch.compile(lambda x, w, b: F.layer_norm(x, (n,), w, b, 1e-5), dynamic=False)
else:
    f = torch.compile(lambda x, w, b: F.rms_norm(x, (n,), w, 1e-5), dynamic=False)
with torch.no_grad():
    for _ in range(20): f(x, w, b)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for _ in range(3): f(x, w, b)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
print("done", kind, flush=True)
