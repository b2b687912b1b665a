"""Kernel-tracing checks on a real GPU (issue: `perfscope run`). Run by run_cupti.sh with a
perfscope server already listening. Writes cupti_report.json and cupti_report.md to OUTDIR and
exits 1 when a check fails.

1. A short CUDA program (< 1 s) under `perfscope run`: every kernel, copy, memset, allocation
   and free arrives (nothing lost at exit).
2. The same with no server: the events go to a file, `perfscope import` loads it.
3. Recorded records: the raw records and the events they became (test fixtures for CI).
4. An FP16 MLP forward pass three ways — plain, under `perfscope run`, under torch.profiler:
   kernel names and counts equal, per-kernel total durations within 2%, wall-time ratios.
Usage: verify_cupti.py URL PERFSCOPE_BIN SHORT_PROGRAM OUTDIR"""
import csv
import io
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from collections import defaultdict

from checks import all_passed, check, checks, perfscope_kernel_totals, report, torch_kernel_totals

url, perfscope, short_program, outdir = sys.argv[1:5]
here = os.path.dirname(os.path.abspath(__file__))


def kernels(run, start_ns=None, end_ns=None):
    q = "window=all" if start_ns is None else f"from={start_ns}&to={end_ns}"
    with urllib.request.urlopen(f"{url}/api/v1/report?format=csv&table=kernels&{q}") as r:
        rows = list(csv.DictReader(io.StringIO(r.read().decode())))
    return [k for k in rows if f'run="{run}"' in k["tags"]]


def memory_ops(run):
    with urllib.request.urlopen(f"{url}/api/v1/report?format=csv&table=memory&window=all") as r:
        rows = list(csv.DictReader(io.StringIO(r.read().decode())))
    return [m for m in rows if f'run="{run}"' in m["tags"]]


def traced(name, cmd, server=url, extra_env=None, output=None):
    args = [perfscope, "run", "--server", server, "--name", name]
    if output:
        args += ["--output", output]
    env = dict(os.environ, **(extra_env or {}))
    r = subprocess.run(args + ["--"] + cmd, capture_output=True, text=True, env=env)
    sys.stderr.write(r.stderr)
    return r


# 1. short program, nothing lost
t = time.perf_counter()
r = traced("short", [short_program, "1000"])
wall = time.perf_counter() - t
time.sleep(1.5)  # the writer commits in intervals
ks = kernels("short")
names = defaultdict(int)
for k in ks:
    names[k["name"]] += 1
mem = memory_ops("short")
detail = {"wall_s": round(wall, 3), "kernels_by_name": names, "memory_ops": len(mem), "exit": r.returncode,
          "summary": r.stderr.strip().splitlines()[-1:]}
check("short program loses nothing at exit",
      r.returncode == 0 and names.get("tiny_kernel(int*, int)") == 1000 and
      names.get("Memcpy HtoD (Pageable -> Device)") == 1 and names.get("Memcpy DtoH (Device -> Pageable)") == 1 and
      names.get("Memset (Device)") == 1 and len(mem) == 2, detail)
launched = [k for k in ks if k["name"] == "tiny_kernel(int*, int)" and k["launch_end_ns"]]
delays = sorted(max(0, int(k["start_ns"]) - int(k["launch_end_ns"])) for k in launched)
check("kernels carry their launch call", len(launched) == 1000,
      {"with_launch": len(launched), "median_launch_delay_us": delays[len(delays) // 2] / 1e3 if delays else None})
report["short_program"] = detail

# 2. no server: a file, then perfscope import
offline = os.path.join(outdir, "offline.ndjson")
if os.path.exists(offline):
    os.remove(offline)
r = traced("short-offline", [short_program, "1000"], server="http://127.0.0.1:9", output=offline)
lines = sum(1 for _ in open(offline)) if os.path.exists(offline) else 0
imp = subprocess.run([perfscope, "import", offline, "--server", url], capture_output=True, text=True)
time.sleep(1.5)
n = sum(1 for k in kernels("short-offline") if k["name"] == "tiny_kernel(int*, int)")
check("offline file and perfscope import", r.returncode == 0 and imp.returncode == 0 and n == 1000,
      {"lines": lines, "import": imp.stdout.strip() + imp.stderr.strip(), "kernels": n})
os.remove(offline)

# 3. recorded records and the events they became (fixtures for the CI conversion test)
rec = os.path.join(outdir, "records.ndjson")
ev = os.path.join(outdir, "events.ndjson")
for f in (rec, ev):
    if os.path.exists(f):
        os.remove(f)
r = traced("fixture", [short_program, "20"], server="http://127.0.0.1:9", output=ev,
           extra_env={"PERFSCOPE_TRACE_RECORDS": rec})
check("recorded records written", r.returncode == 0 and os.path.getsize(rec) > 0 and os.path.getsize(ev) > 0,
      {"records": sum(1 for _ in open(rec)), "events": sum(1 for _ in open(ev))})

# 4. the MLP workload three ways
work = [sys.executable, os.path.join(here, "cupti_workload.py")]


process_walls = defaultdict(list)  # whole process, start-up and exit included


def run_json(cmd, mode):
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    process_walls[mode].append(time.perf_counter() - t)
    if r.returncode != 0:
        sys.stderr.write(r.stderr)
        raise SystemExit(f"workload failed: {cmd}")
    return json.loads(r.stdout.strip().splitlines()[-1])


walls = defaultdict(list)
marks = {}


def run_mode(mode, rep):
    if mode == "plain":
        walls["plain"].append(run_json(work, "plain")["wall_s"])
    elif mode == "perfscope":
        t = time.perf_counter()
        r = traced(f"mlp-{rep}", work)
        process_walls["perfscope"].append(time.perf_counter() - t)
        res = json.loads(r.stdout.strip().splitlines()[-1])
        walls["perfscope"].append(res["wall_s"])
        marks[rep] = res
    else:
        trace_file = os.path.join(outdir, f"torch_trace_{rep}.json")
        walls["torch_profiler"].append(run_json(work + ["--profile", trace_file], "torch_profiler")["wall_s"])


# The order rotates round by round: the GPU's clocks and temperature drift within a round, and
# a fixed order would hand that drift to one tool.
modes = ["plain", "perfscope", "torch_profiler"]
for rep in range(3):
    for mode in modes[rep:] + modes[:rep]:
        run_mode(mode, rep)
time.sleep(1.5)

med = {k: statistics.median(v) for k, v in walls.items()}
pmed = {k: statistics.median(v) for k, v in process_walls.items()}
overhead = {"walls_s": walls, "median_s": med,
            "perfscope_vs_plain": med["perfscope"] / med["plain"],
            "torch_profiler_vs_plain": med["torch_profiler"] / med["plain"],
            "process_walls_s": process_walls, "process_median_s": pmed,
            "process_perfscope_vs_plain": pmed["perfscope"] / pmed["plain"],
            "process_torch_profiler_vs_plain": pmed["torch_profiler"] / pmed["plain"]}
report["overhead"] = overhead
check("overhead no larger than torch.profiler's", med["perfscope"] <= med["torch_profiler"] * 1.01, overhead)
check("overhead at most 5% end to end", overhead["perfscope_vs_plain"] <= 1.05, {"ratio": overhead["perfscope_vs_plain"]})

# Kernel names, counts and total durations: each of the 3 perfscope runs and 3 torch.profiler
# runs (interleaved, separate processes: two CUPTI subscribers cannot share one) gives per-kernel
# totals; the medians are compared, and each tool's own run-to-run spread is reported beside.
def perfscope_totals(rep):
    return perfscope_kernel_totals(url, f"mlp-{rep}", marks[rep]["start_ns"], marks[rep]["end_ns"])


def torch_totals(rep):
    path = os.path.join(outdir, f"torch_trace_{rep}.json")
    out = torch_kernel_totals(path)
    os.remove(path)
    return out


ours = [perfscope_totals(rep) for rep in range(3)]
theirs = [torch_totals(rep) for rep in range(3)]
table = []
for name in sorted(set().union(*ours, *theirs)):
    oc = [o.get(name, [0, 0.0])[0] for o in ours]
    tc = [t.get(name, [0, 0.0])[0] for t in theirs]
    ot = [o.get(name, [0, 0.0])[1] for o in ours]
    tt = [t.get(name, [0, 0.0])[1] for t in theirs]
    om, tm = statistics.median(ot), statistics.median(tt)
    table.append({"name": name, "perfscope_counts": oc, "torch_counts": tc,
                  "perfscope_total_us": [round(v, 1) for v in ot], "torch_total_us": [round(v, 1) for v in tt],
                  "perfscope_spread": (max(ot) - min(ot)) / om if om else None,
                  "torch_spread": (max(tt) - min(tt)) / tm if tm else None,
                  "difference": (om - tm) / tm if tm else None})
report["kernels"] = table
check("same kernel names and counts as torch.profiler",
      len(table) > 0 and all(len(set(r["perfscope_counts"] + r["torch_counts"])) == 1 for r in table),
      {"kernels": len(table)})
check("per-kernel total durations within 2% of torch.profiler's (medians of 3 runs)",
      all(r["difference"] is not None and abs(r["difference"]) <= 0.02 for r in table),
      {"differences": [r["difference"] for r in table],
       "run_to_run_spread": {"perfscope": [r["perfscope_spread"] for r in table],
                             "torch_profiler": [r["torch_spread"] for r in table]}})
m = marks[0]

# the analysis engine and the trace export on the real trace of run 0
# (the whole process's window: GPU samples, every 100 ms, fall inside it too)
with urllib.request.urlopen(f"{url}/api/v1/analysis?from={m['start_ns'] - 4 * 10**9}&to={m['end_ns'] + 10**9}") as r:
    analysis = json.load(r)
timeline = [{k: t[k] for k in ("device", "stream", "kernel_count", "busy_ratio", "launch_efficiency", "avg_gap_ms",
                                "short_kernels", "launch_delay_ms")} for t in analysis["timeline"]]
fired = [{"id": b["id"], "status": b["status"], "severity": b["severity"], "evidence": b["evidence"]}
         for b in analysis["bottlenecks"] if b["status"] != "ok"]
report["analysis"] = {"timeline": timeline, "bottlenecks": fired}
check("timeline analysis of the real trace", any(t["kernel_count"] >= 3520 and t["busy_ratio"] > 0 for t in timeline),
      {"timeline": timeline})
with urllib.request.urlopen(f"{url}/api/v1/trace?from={m['start_ns']}&to={m['end_ns']}&max_events=1000000") as r:
    trace = json.load(r)
cats = defaultdict(int)
for e in trace["traceEvents"]:
    cats[e.get("cat", e.get("ph"))] += 1
check("trace export of the real trace", cats["kernel"] >= 3200 and cats["launch"] >= 3200, {"by_category": cats})
with urllib.request.urlopen(f"{url}/metrics") as r:
    report["metrics_not_a_number"] = [l for l in r.read().decode().splitlines() if l.endswith(" NaN")]

with open(os.path.join(outdir, "cupti_report.json"), "w") as f:
    json.dump(report, f, indent=2, default=dict)
with open(os.path.join(outdir, "cupti_report.md"), "w") as f:
    f.write("# Kernel tracing on a real GPU\n\n| check | result |\n|---|---|\n")
    for c in checks:
        f.write(f"| {c['check']} | {'pass' if c['ok'] else 'FAIL'} |\n")
    f.write("\n## Overhead (median wall time of the timed loop, 3 runs each)\n\n")
    for k, v in med.items():
        f.write(f"- {k}: {v:.4f} s\n")
    f.write(f"- perfscope run / plain: {overhead['perfscope_vs_plain']:.4f}\n")
    f.write(f"- torch.profiler / plain: {overhead['torch_profiler_vs_plain']:.4f}\n")
    f.write("\n## Whole process (start-up, CUDA and CUPTI set-up and exit included; median of 3)\n\n")
    for k, v in pmed.items():
        f.write(f"- {k}: {v:.3f} s\n")
    f.write(f"- perfscope run / plain: {overhead['process_perfscope_vs_plain']:.4f}\n")
    f.write(f"- torch.profiler / plain: {overhead['process_torch_profiler_vs_plain']:.4f}\n")
    f.write("\n## Timeline analysis of the traced run (perfscope's /api/v1/analysis)\n\n")
    for t in timeline:
        f.write(f"- device {t['device']} stream {t['stream']}: {t['kernel_count']} kernels, busy {t['busy_ratio']:.3f}, "
                f"launch efficiency {t['launch_efficiency']}, average gap {t['avg_gap_ms']} ms\n")
    for b in fired:
        f.write(f"- rule `{b['id']}`: {b['status']} ({b['severity']})\n")
    f.write("\n## Kernels: perfscope run vs torch.profiler (3 runs each, separate processes)\n\n")
    f.write("| kernel | count per run (perfscope / torch) | total µs per run, perfscope | total µs per run, torch | "
            "difference of medians | run-to-run spread (perfscope / torch) |\n|---|---|---|---|---|---|\n")
    for r in table:
        d = f"{r['difference'] * 100:+.2f}%" if r["difference"] is not None else "-"
        sp = f"{(r['perfscope_spread'] or 0) * 100:.2f}% / {(r['torch_spread'] or 0) * 100:.2f}%"
        f.write(f"| `{r['name'][:100]}` | {r['perfscope_counts']} / {r['torch_counts']} | {r['perfscope_total_us']} | "
                f"{r['torch_total_us']} | {d} | {sp} |\n")
sys.exit(0 if all_passed() else 1)
