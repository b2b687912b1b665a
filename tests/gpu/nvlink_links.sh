#!/usr/bin/env bash
# NVLink per link against GPM's totals, on a machine with two GPUs joined by NVLink: a PyTorch
# loop copies 256 MiB from GPU 0 to GPU 1 for 8 s; 6 s in, /metrics is read and each GPU's
# links are added up beside its total. Prints the sums and writes nvlink_metrics.txt.
# Usage: tests/gpu/nvlink_links.sh [PERFSCOPE_BIN] [REPORT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${1:-build/release/perfscope}")
report=$(mkdir -p "${2:-gpu-report}" && realpath "${2:-gpu-report}")
source tests/gpu/start_server.sh
${PYTHON:-python3} -c '
import torch, time
a = torch.empty(1 << 28, dtype=torch.uint8, device="cuda:0")
b = torch.empty(1 << 28, dtype=torch.uint8, device="cuda:1")
t = time.time()
while time.time() - t < 8:
    b.copy_(a); torch.cuda.synchronize(1)' &
load=$!
sleep 6
curl -s "$url/metrics" | grep -E '^perfscope_gpu_nvlink_' | sort > "$report/nvlink_metrics.txt"
wait $load
${PYTHON:-python3} - "$report/nvlink_metrics.txt" <<'PY'
import re, sys
totals, links, peers = {}, {}, 0
for line in open(sys.argv[1]):
    m = re.match(r'perfscope_gpu_nvlink_(link_|peer_)?(rx|tx)_bytes_per_second\{(.*)\} (\S+)', line)
    if not m:
        continue
    kind, direction, labels, value = m.group(1), m.group(2), dict(re.findall(r'(\w+)="([^"]*)"', m.group(3))), float(m.group(4))
    key = (labels["gpu"], direction)
    if kind == "link_":
        links[key] = links.get(key, 0) + value
    elif kind == "peer_":
        peers += 1
    else:
        totals[key] = value
for key in sorted(totals):
    print(f"GPU {key[0]} {key[1]}: GPM total {totals[key] / 1e9:.3f} GB/s, sum of links {links.get(key, 0) / 1e9:.3f} GB/s")
print(f"{sum(1 for k in links)} GPU/direction pairs with links; {peers} per-pair series")
PY
