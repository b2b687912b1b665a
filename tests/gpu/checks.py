"""What the GPU verification scripts share: named checks printed as they pass or fail and
collected into the report they write, and per-kernel totals as perfscope and torch.profiler
give them (for comparing the two)."""
import csv
import io
import json
import subprocess
import sys
import urllib.request
from collections import defaultdict

checks = []
report = {"checks": checks}


def check(name, ok, detail):
    checks.append({"check": name, "ok": bool(ok), "detail": detail})
    print(("PASS " if ok else "FAIL ") + name + ": " + json.dumps(detail), flush=True)


def all_passed():
    return all(c["ok"] for c in checks)


def run_workload(cmd, env=None):
    """Runs a workload script; its last stdout line is JSON (its marks). Returns (marks, stderr)."""
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.stderr.write(r.stderr)
        raise SystemExit(f"workload failed: {cmd}")
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


def perfscope_kernel_totals(url, run, start_ns, end_ns):
    """{name: [executions, total µs]} of the run's kernels (not copies or memsets) whose launch
    (or start, without one) falls in [start_ns, end_ns], from perfscope's kernels CSV."""
    q = f"from={start_ns - 10**9}&to={end_ns + 10**9}"
    with urllib.request.urlopen(f"{url}/api/v1/report?format=csv&table=kernels&{q}") as r:
        rows = list(csv.DictReader(io.StringIO(r.read().decode())))
    out = defaultdict(lambda: [0, 0.0])
    for k in rows:
        if f'run="{run}"' not in k["tags"] or 'op="mem' in k["tags"]:
            continue
        launch = int(k["launch_start_ns"] or k["start_ns"])
        if start_ns <= launch <= end_ns:
            out[k["name"]][0] += 1
            out[k["name"]][1] += (int(k["end_ns"]) - int(k["start_ns"])) / 1e3
    return out


def torch_kernel_totals(chrome_trace_path):
    """{name: [executions, total µs]} of the kernels in a torch.profiler Chrome trace."""
    out = defaultdict(lambda: [0, 0.0])
    with open(chrome_trace_path) as f:
        for e in json.load(f)["traceEvents"]:
            if e.get("cat") == "kernel":
                out[e["name"]][0] += 1
                out[e["name"]][1] += float(e["dur"])
    return out


def file_kernel_totals(ndjson_path, start_ns, end_ns):
    """{name: [executions, total µs]} as perfscope_kernel_totals, from a trace file the injection
    library wrote (PERFSCOPE_TRACE_FILE) instead of a server."""
    out = defaultdict(lambda: [0, 0.0])
    with open(ndjson_path) as f:
        for line in f:
            e = json.loads(line)
            if e.get("type") != "kernel" or e.get("tags", {}).get("op", "").startswith("mem"):
                continue
            launch = int(e.get("launch_start_ns") or e["start_ns"])
            if start_ns <= launch <= end_ns:
                out[e["name"]][0] += 1
                out[e["name"]][1] += (int(e["end_ns"]) - int(e["start_ns"])) / 1e3
    return out
