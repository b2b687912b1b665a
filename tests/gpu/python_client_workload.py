"""Matmuls of three sizes timed with the Python client's kernel_timer (torch.cuda.Event pairs),
one phase per size, run under `perfscope run` so CUPTI traces the same kernels. Writes each
phase's wall-clock window to OUT.json. Usage: python_client_workload.py SERVER_URL OUT.json"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python"))
import perfscope  # noqa: E402
import torch  # noqa: E402

url, out = sys.argv[1:3]
client = perfscope.Client(url)
phases = []
for n in (1024, 4096, 8192):
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(5):
        torch.matmul(a, b)  # warm-up: cuBLAS picks its kernel, outside any phase
    torch.cuda.synchronize()
    time.sleep(0.2)
    start = time.time_ns()
    for _ in range(200):
        with client.kernel_timer(f"timed_gemm_{n}", variant="python"):
            torch.matmul(a, b)
    torch.cuda.synchronize()
    end = time.time_ns()
    phases.append({"n": n, "from_ns": start, "to_ns": end, "calls": 200})
    time.sleep(0.2)
client.close()
s = client.stats()
with open(out, "w") as f:
    json.dump({"phases": phases, "stats": {"sent": s.sent, "dropped": s.dropped, "invalid": s.invalid,
                                           "last_error": s.last_error}}, f)
