"""What the Python client costs the caller, and how many events one client sustains.

Starts a real server (PERFSCOPE_BIN, its own data directory) and measures, in rounds:
- ``r.token()`` per call (a request of 1,000 tokens at a time),
- ``client.inference(...)`` per call (model, latency, TTFT, tokens, no tags),
- a whole ``with client.request(...)`` of 32 tokens per request,
each as the median and minimum over ROUNDS rounds of N calls, timed in the caller's thread
while the sender thread runs (it shares the interpreter lock: that cost is included); then
events/s one client delivers (given as fast as the caller can, until the server has stored
them all).

Usage: PERFSCOPE_BIN=build/release/perfscope python3 bench/python_client.py [N=200000] [ROUNDS=9]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "clients", "python"))
import perfscope  # noqa: E402


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 9
    data = tempfile.mkdtemp(prefix="perfscope-pybench-")
    server = subprocess.Popen([os.environ["PERFSCOPE_BIN"], "serve", "--listen", "127.0.0.1:0", "--data-dir", data,
                               "--enable-host-collector", "false", "--enable-gpu-collector", "false"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = server.stdout.readline().split("listening on ")[1].split()[0].rstrip("/")
    client = perfscope.Client(url, max_queue=2 * n)

    def per_call(label: str, body, calls: int) -> None:
        samples = []
        for _ in range(rounds):
            t0 = time.perf_counter_ns()
            body()
            samples.append((time.perf_counter_ns() - t0) / calls / 1000)
            client.flush(timeout=120)
        print(f"| {label} | {statistics.median(samples):.3f} | {min(samples):.3f} | {max(samples):.3f} |")

    def tokens() -> None:
        for _ in range(n // 1000):
            r = client.request("bench").start()
            for _ in range(1000):
                r.token()
            r.end()

    def inferences() -> None:
        for i in range(n):
            client.inference("bench", 12.5, ttft_ms=3.25, output_tokens=32)

    def requests() -> None:
        for _ in range(n // 32):
            with client.request("bench_req", version="2") as r:
                for _ in range(32):
                    r.token()

    print(f"{n} calls per round, {rounds} rounds, Python {sys.version.split()[0]}")
    print("| call | median µs | min µs | max µs |")
    print("| --- | ---: | ---: | ---: |")
    per_call("`r.token()`", tokens, n)
    per_call("`client.inference(model, latency, ttft_ms, output_tokens)`", inferences, n)
    per_call("`with client.request(...)` of 32 `r.token()`", requests, n // 32)

    before = client.stats().sent
    t0 = time.perf_counter()
    for i in range(n):
        client.inference("throughput", 1.0)
    client.flush(timeout=300)
    seconds = time.perf_counter() - t0
    stats = client.stats()
    print(f"sustained: {stats.sent - before} events in {seconds:.2f} s = {(stats.sent - before) / seconds:,.0f} "
          f"events/s (dropped {stats.dropped}, batches {stats.batches})")
    client.close()
    server.terminate()
    server.wait()


if __name__ == "__main__":
    main()
