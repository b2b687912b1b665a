"""The relay on a real GPU (run by run_relay.sh): the FP16 MLP of cupti_workload.py twice traced
through `perfscope relay` (library and socket from the environment alone) and twice under
torch.profiler, alternating; per kernel the names and counts must equal torch.profiler's. Then a
faulting kernel: the server must count the driver's Xid and raise an alert for it.
Usage: verify_relay.py PERFSCOPE_BIN URL OUTDIR [XID_FAULT_PROGRAM]"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

from checks import all_passed, check, checks, run_workload, perfscope_kernel_totals, report, torch_kernel_totals

bin_, url, outdir = sys.argv[1:4]
fault = sys.argv[4] if len(sys.argv) > 4 else ""
here = os.path.dirname(os.path.abspath(__file__))
work = [sys.executable, os.path.join(here, "cupti_workload.py")]


def get(path):
    with urllib.request.urlopen(url + path) as r:
        return r.read().decode()


shared = tempfile.mkdtemp()
socket = os.path.join(shared, "trace.sock")
relay = subprocess.Popen([bin_, "relay", "--socket", socket, "--library-into", shared, "--server", url,
                          "--name", "relay-gpu"], stderr=subprocess.PIPE, text=True)
for _ in range(100):
    if os.path.exists(socket):
        break
    time.sleep(0.05)
env = dict(os.environ, CUDA_INJECTION64_PATH=os.path.join(shared, "libperfscope_cupti.so"),
           PERFSCOPE_TRACE_SOCKET=socket, PERFSCOPE_RUN_NAME="relay-gpu")
ours, theirs, used = [], [], []
for rep in range(2):
    for mode in (["traced", "torch"] if rep % 2 == 0 else ["torch", "traced"]):
        if mode == "traced":
            marks, stderr = run_workload(work, env)
            used.append(next((l for l in stderr.splitlines() if "tracing with CUPTI" in l), stderr[-300:]))
            time.sleep(1.5)  # the relay's last batch
            ours.append(perfscope_kernel_totals(url, "relay-gpu", marks["start_ns"], marks["end_ns"]))
        else:
            path = os.path.join(outdir, f"torch-{rep}.json")
            run_workload(work + ["--profile", path])
            theirs.append(torch_kernel_totals(path))
            os.remove(path)
relay.send_signal(signal.SIGTERM)
_, relay_err = relay.communicate(timeout=30)
report["relay_stderr"] = relay_err.strip().splitlines()
report["cupti_used"] = used
check("the relay exits 0 when stopped", relay.returncode == 0, relay_err[-500:])
check("the program traced with its own environment's CUPTI, given only the environment",
      all("tracing with CUPTI" in u and "site-packages" in u for u in used), used)
names = sorted(set().union(*ours, *theirs))
table = [{"name": n, "perfscope": [o.get(n, [0, 0])[0] for o in ours], "torch": [t.get(n, [0, 0])[0] for t in theirs]}
         for n in names]
report["kernels"] = table
check("same kernel names and counts as torch.profiler",
      len(table) > 0 and all(len(set(r["perfscope"] + r["torch"])) == 1 for r in table),
      {"kernels": len(table), "executions_per_run": sum(r["torch"][0] for r in table)})
run_ = json.loads(get("/api/v1/runs/relay-gpu"))
check("the relay's run ended, with the traced processes", run_.get("end_ns") and len(run_.get("pids", [])) == 2,
      {k: run_.get(k) for k in ("start_ns", "end_ns", "pids", "records")})

if fault:
    r = subprocess.run([fault], capture_output=True, text=True)
    report["fault_program"] = r.stdout.strip()
    found, alerts = [], []
    for _ in range(50):
        metrics = get("/metrics")
        found = [l for l in metrics.splitlines() if l.startswith("perfscope_gpu_xid_errors_total{")]
        alerts = [a for a in json.loads(get("/api/v1/alerts?window=5m"))["alerts"] if a["kind"] == "xid"]
        if found and alerts:
            break
        time.sleep(0.2)
    report["xid_series"] = found
    report["xid_alerts"] = [a["message"] for a in alerts]
    check("a faulting kernel: the driver's Xid counted and alerted", bool(found) and bool(alerts),
          {"program": r.stdout.strip(), "series": found, "alerts": [a["message"] for a in alerts]})
info = json.loads(get("/api/v1/info"))
report["xid_source"] = [s for c in info["collectors"] if c["name"] == "nvidia" for s in c["sources"] if s["name"] == "xid"]

with open(os.path.join(outdir, "relay_report.json"), "w") as f:
    json.dump(report, f, indent=1)
with open(os.path.join(outdir, "relay_report.md"), "w") as f:
    f.write("# perfscope relay and Xid errors on a GPU\n\n")
    f.write("| kernel | perfscope executions (2 runs) | torch.profiler executions |\n|---|---|---|\n")
    for r in table:
        f.write(f"| `{r['name'][:90]}` | {r['perfscope']} | {r['torch']} |\n")
    f.write("\n" + "\n".join(("PASS " if c["ok"] else "FAIL ") + c["check"] for c in checks) + "\n")
sys.exit(0 if all_passed() else 1)
