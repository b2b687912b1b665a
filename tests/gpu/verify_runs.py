"""Runs on a real GPU (issue: runs as first-class objects). Run by run_cupti.sh with two
perfscope servers listening (MAIN takes every run, ALONE stays empty but for one). Writes
runs_report.json and runs_report.md to OUTDIR and exits 1 when a check fails.

1. Three traced runs of a PyTorch program about two seconds apart into one server (the first
   recorded to a file and imported, so the very same run is also imported into the empty
   server): listed with their status; after they end, memory holds nothing and suspects no
   leak, CUDA module statics apart; each run's timeline equals that run alone; no bottleneck
   rule reads the idle time between runs.
2. Run against run: the same CUDA program twice changes nothing; a variant with one kernel made
   slower names that kernel first with p < 0.001.
Usage: verify_runs.py MAIN_URL ALONE_URL PERFSCOPE_BIN VARIANT_PROGRAM OUTDIR"""
import json
import os
import subprocess
import sys
import time
import urllib.request

from checks import all_passed, check, checks, report

url, alone, perfscope, variant, outdir = sys.argv[1:6]
here = os.path.dirname(os.path.abspath(__file__))


def get(base, path):
    with urllib.request.urlopen(base + path) as r:
        return json.loads(r.read().decode())


def traced(name, cmd, server=url, output=None):
    args = [perfscope, "run", "--server", server, "--name", name] + (["--output", output] if output else [])
    r = subprocess.run(args + ["--"] + cmd, capture_output=True, text=True)
    sys.stderr.write(r.stderr)
    return r


workload = [sys.executable, os.path.join(here, "cupti_workload.py"), "--iters", "40", "--warmup", "5",
            "--batch", "256", "--hidden", "1024", "--layers", "4"]

# 1. three runs of one PyTorch program; the first through a file into both servers
offline = os.path.join(outdir, "traced1.ndjson")
if os.path.exists(offline):
    os.remove(offline)
codes = [traced("traced1", workload, server="http://127.0.0.1:9", output=offline).returncode]
for base in (url, alone):
    codes.append(subprocess.run([perfscope, "import", offline, "--server", base], capture_output=True).returncode)
for name in ("traced2", "traced3"):
    time.sleep(2)
    codes.append(traced(name, workload).returncode)
runs = get(url, "/api/v1/runs")["runs"]
listed = {r["name"]: r for r in runs}
check("three runs listed with their status",
      codes == [0] * 5 and all(listed.get(n, {}).get("status") == "finished" for n in ("traced1", "traced2", "traced3"))
      and all(listed[n]["kernels"]["count"] > 0 and listed[n]["records"] > 0 for n in listed),
      {"codes": codes, "runs": [{k: r[k] for k in ("name", "status", "exit_status", "wall_s", "pids", "records", "dropped",
                                                   "gpus", "gpu_busy_ms", "launch_efficiency")} | {"kernels": r["kernels"]}
                                for r in runs]})
mem = get(url, "/api/v1/memory?window=all")
doc = get(url, "/api/v1/analysis?window=all&leak_age_s=1")
check("after the runs end: nothing allocated, no leak suspects, module statics apart",
      mem["current_allocated_bytes"] == 0 and mem["live_allocations"] == 0 and doc["memory"]["leak_suspects"] == []
      and (not doc["memory"]["growth"]["significant"] or doc["memory"]["growth"]["slope_per_second"] <= 0),
      {"memory": {k: mem[k] for k in ("current_allocated_bytes", "peak_allocated_bytes", "allocation_count",
                                      "free_count", "live_allocations", "module_statics")},
       "leak_suspects": len(doc["memory"]["leak_suspects"]), "growth": doc["memory"]["growth"]})
single = get(alone, "/api/v1/analysis?window=all")
own = {(t["run"], t["device"]): t for t in single["timeline"] if t["stream"] is None}
rows = {(t["run"], t["device"]): t for t in doc["timeline"] if t["stream"] is None}
same = [(k, rows[k]["busy_ratio"], t["busy_ratio"]) for k, t in own.items() if k in rows]
check("each run's timeline is that run alone",
      len(same) > 0 and all(abs(a - b) < 1e-12 for _, a, b in same)
      and sorted({r for r, _ in rows}) == ["traced1", "traced2", "traced3"],
      {"traced1_in_both": same, "runs": {f"{r}/{d}": {"busy_ratio": t["busy_ratio"], "span_ms": t["span_ms"],
                                                        "avg_gap_ms": t["avg_gap_ms"]} for (r, d), t in rows.items()}})
by_id = {b["id"]: b for b in doc["bottlenecks"]}
worst = min(t["busy_ratio"] for t in rows.values())
overhead = by_id["launch_overhead_bound"]
check("no rule reads the idle time between runs",
      abs(overhead["evidence"].get("kernel_busy_ratio", -1) - worst) < 1e-12
      and overhead["evidence"].get("kernel_avg_gap_ms", 1e9) < 1000
      and all(t["span_ms"] < 1000 * listed[r]["wall_s"] for (r, _), t in rows.items()),
      {"launch_overhead_bound": {"status": overhead["status"], "evidence": overhead["evidence"]},
       "host_bound_input_pipeline": by_id["host_bound_input_pipeline"]["status"],
       "per_run_fired": {r["run"]: [b["id"] for b in r["bottlenecks"] if b["status"] == "fired"] for r in doc.get("runs", [])}})
report["analysis_timeline"] = doc["timeline"]

# 2. run against run
codes = [traced(n, [variant, "2000"] + w).returncode for n, w in (("same-a", []), ("same-b", []), ("slowed", ["64"]))]
same = get(url, "/api/v1/runs/compare?a=same-a&b=same-b")
slow = get(url, "/api/v1/runs/compare?a=same-a&b=slowed")
brief = lambda c: [{k: d[k] for k in ("name", "count_a", "count_b", "mean_a_ms", "mean_b_ms", "mean_change",
                                      "p_adjusted", "verdict")} for d in c["kernels"]]
check("the same program twice: no kernel changed", codes == [0, 0, 0] and same["verdict"] == "unchanged"
      and all(d["verdict"] in ("unchanged", "insufficient_samples") for d in same["kernels"]),
      {"verdict": same["verdict"], "kernels": brief(same), "totals": same["totals"]})
first = slow["kernels"][0]
check("one kernel slowed: named first with p < 0.001",
      first["name"].startswith("step_kernel") and first["verdict"] == "slower" and first["p_adjusted"] < 0.001
      and slow["verdict"] == "slower",
      {"verdict": slow["verdict"], "kernels": brief(slow), "totals": slow["totals"]})
with urllib.request.urlopen(f"{url}/api/v1/report?format=md&window=all&compare=same-a,slowed") as r:
    md = r.read().decode()
report["compare_markdown"] = md[md.find("## Run comparison"):]

with open(os.path.join(outdir, "runs_report.json"), "w") as f:
    json.dump(report, f, indent=1)
with open(os.path.join(outdir, "runs_report.md"), "w") as f:
    f.write("# Runs on a real GPU\n\n" + "\n".join(f"- {'PASS' if c['ok'] else 'FAIL'} {c['check']}" for c in checks) + "\n\n")
    f.write("```json\n" + json.dumps([{c["check"]: c["detail"]} for c in checks], indent=1) + "\n```\n\n")
    f.write(report["compare_markdown"] + "\n")
sys.exit(0 if all_passed() else 1)
