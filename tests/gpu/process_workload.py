"""One GPU process of the attribution check: holds SIZE_GIB of device memory and runs N×N
fp16 matmuls for SECONDS, busy BUSY of each 100 ms (sleeping the rest), then exits.
Usage: process_workload.py SIZE_GIB N BUSY SECONDS"""
import sys
import time

import torch

size_gib, n, busy, seconds = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
hold = torch.empty(int(size_gib * (1 << 30)), dtype=torch.uint8, device="cuda")
a = torch.randn(n, n, dtype=torch.float16, device="cuda")
b = torch.randn(n, n, dtype=torch.float16, device="cuda")
print("ready", flush=True)
end = time.time() + seconds
while time.time() < end:
    slot = time.time()
    while time.time() - slot < 0.1 * busy:
        c = a @ b
        torch.cuda.synchronize()
    rest = 0.1 - (time.time() - slot)
    if rest > 0:
        time.sleep(rest)
del hold
