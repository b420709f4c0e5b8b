# Time one of our forward kernels inside compare_peers.py's Timer (torch's stream, torch's L2 flush),
# beside torch.compile, to see whether the two harnesses read the same kernel alike.
import ctypes, json, subprocess, sys, statistics, torch
import torch.nn.functional as F
sys.path.insert(0, "tools/bench")
from compare_peers import Timer

kernel, dt, m, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
knobs = sys.argv[5:]
dtypes = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
spec = json.loads(subprocess.check_output(["build-gpu/tools/ptxdsl", "emit", kernel, "--dtype", dt, "--width", str(n),
                                           "--batch", str(m), "--json", "-o", "/tmp/k.ptx", *knobs]))
step = spec["steps"][0]
torch.zeros(1, device="cuda")  # the primary context, current
cu = ctypes.CDLL("libcuda.so.1")
mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
ptx = open("/tmp/k.ptx", "rb").read() + b"\0"
assert cu.cuModuleLoadData(ctypes.byref(mod), ptx) == 0
assert cu.cuModuleGetFunction(ctypes.byref(fn), mod, step["entry"].encode()) == 0
t = dtypes[dt]
x = (-2.3 + 0.5 * torch.randn(m, n, device="cuda")).to(t)
w = torch.rand(n, device="cuda").to(t); b = torch.rand(n, device="cuda").to(t)
y = torch.empty_like(x); mean = torch.empty(m, device="cuda"); rstd = torch.empty(m, device="cuda")
vals = {"x": x, "w": w, "b": b, "y": y, "mean": mean, "rstd": rstd}
args = []
for p in step["params"]:
    if p["pointer"]: args.append(ctypes.c_uint64(vals[p["name"]].data_ptr()))
    elif p["name"] == "eps": args.append(ctypes.c_float(1e-5))
    elif p["name"] in ("batch",): args.append(ctypes.c_uint32(m))
    elif p["name"] == "stride": args.append(ctypes.c_uint32(n))
    else: raise SystemExit(f"param {p['name']}")
ptrs = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in args])
gx, gy, gz = step["grid"]; bx, by, bz = step["block"]
def ours():
    s = torch.cuda.current_stream().cuda_stream
    r = cu.cuLaunchKernel(fn, gx, gy, gz, bx, by, bz, step["dynamic_shared_bytes"], ctypes.c_void_p(s), ptrs, None)
    assert r == 0, r
ours(); torch.cuda.synchronize()
ref = F.layer_norm(x.float(), (n,), w.float(), b.float(), 1e-5) if kernel == "ln_fwd" else F.rms_norm(x.float(), (n,), w.float(), 1e-5)
print("max abs err", (y.float() - ref).abs().max().item())
if kernel == "ln_fwd":
    comp = torch.compile(lambda x, w, b: F.layer_norm(x, (n,), w, b, 1e-5), dynamic=False)
else:
    comp = torch.compile(lambda x, w, b: F.rms_norm(x, (n,), w, 1e-5), dynamic=False)
timer = Timer(torch, 100, 10, 25)
with torch.no_grad():
    for rnd in range(3):
        print(f"{kernel} {dt} {m}x{n} {' '.join(knobs)} round {rnd}: ours {timer(ours):.2f} us, compile {timer(lambda: comp(x, w, b)):.2f} us", flush=True)
