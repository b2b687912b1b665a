"""The workload of the tracing checks: an FP16 MLP forward pass (Linear + GELU layers) run for
a number of iterations after a warm-up. Prints one JSON line: the wall time of the timed loop
and its bounds in Unix-epoch nanoseconds (the clock CUPTI's timestamps use).
--profile FILE runs the timed loop under torch.profiler and writes its Chrome trace there."""
import argparse
import json
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--iters", type=int, default=200)
p.add_argument("--warmup", type=int, default=20)
p.add_argument("--batch", type=int, default=2048)
p.add_argument("--hidden", type=int, default=4096)
p.add_argument("--layers", type=int, default=8)
p.add_argument("--profile")
a = p.parse_args()

torch.manual_seed(0)
layers = []
for _ in range(a.layers):
    layers += [torch.nn.Linear(a.hidden, a.hidden), torch.nn.GELU()]
model = torch.nn.Sequential(*layers).cuda().half().eval()
x = torch.randn(a.batch, a.hidden, device="cuda", dtype=torch.half)


def loop(n):
    with torch.no_grad():
        for _ in range(n):
            model(x)


loop(a.warmup)
torch.cuda.synchronize()
prof = None
if a.profile:
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA])
    prof.__enter__()
t0_ns = time.time_ns()
t0 = time.perf_counter()
loop(a.iters)
torch.cuda.synchronize()
wall = time.perf_counter() - t0
t1_ns = time.time_ns()
if prof:
    prof.__exit__(None, None, None)
    prof.export_chrome_trace(a.profile)
print(json.dumps({"wall_s": wall, "start_ns": t0_ns, "end_ns": t1_ns, "iters": a.iters}), flush=True)
