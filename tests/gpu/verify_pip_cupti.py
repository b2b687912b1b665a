"""Kernel tracing of a pip-installed PyTorch with no CUDA toolkit (run by run_pip_cupti.sh).
The FP16 MLP of cupti_workload.py three times traced by the injection library (events to a
file) and three times under torch.profiler, alternating: the library must have traced with
the CUPTI of PyTorch's own environment, and per kernel the names and counts must equal
torch.profiler's (total durations are reported beside). Writes pip_cupti_report.json and .md.
Usage: verify_pip_cupti.py INJECTION_LIBRARY OUTDIR"""
import json
import os
import re
import statistics
import subprocess
import sys

from checks import all_passed, check, checks, run_workload, file_kernel_totals, report, torch_kernel_totals

library, outdir = sys.argv[1:3]
here = os.path.dirname(os.path.abspath(__file__))
work = [sys.executable, os.path.join(here, "cupti_workload.py")]
report["environment"] = open(os.path.join(outdir, "environment.txt")).read()
facts = dict(l.split(": ", 1) if ": " in l else (l.rstrip(":"), "") for l in report["environment"].splitlines()
             if l.startswith(("toolkit visible", "nvcc", "libcupti in")))
check("no CUDA toolkit visible", facts.get("toolkit visible", "").strip() == "" and facts.get("nvcc") == "none", facts)
check("the library links no CUPTI", "libcupti" not in subprocess.run(["ldd", library], capture_output=True,
                                                                     text=True).stdout, {"library": library})


# A CUDA program of the toolkit's own, traced before the toolkit was hidden (when nvcc was there).
short = os.path.join(outdir, "short.ndjson")
if os.path.exists(short):
    line = open(os.path.join(outdir, "short.stderr")).read()
    with open(short) as f:
        events = [json.loads(l) for l in f]
    tiny = [e for e in events if e.get("type") == "kernel" and e.get("name") == "tiny_kernel(int*, int)"]
    check("a plain CUDA program is traced with the toolkit's CUPTI, every kernel with its launch",
          "the CUDA toolkit's" in line and len(tiny) == 1000 and all(e.get("launch_start_ns") for e in tiny),
          {"stderr": line.strip().splitlines()[:1], "kernels": len(tiny)})
    os.remove(short)


ours, theirs, used, correlated = [], [], [], []
for rep in range(3):
    for mode in (["traced", "torch"] if rep % 2 == 0 else ["torch", "traced"]):
        if mode == "traced":
            trace = os.path.join(outdir, f"pip-{rep}.ndjson")
            if os.path.exists(trace):
                os.remove(trace)
            env = dict(os.environ, CUDA_INJECTION64_PATH=library, PERFSCOPE_TRACE_FILE=trace,
                       PERFSCOPE_RUN_NAME=f"pip-{rep}")
            marks, stderr = run_workload(work, env)
            m = re.search(r"perfscope: tracing with CUPTI (\S+), (.+) \((.+)\)", stderr)
            used.append({"version": m.group(1), "origin": m.group(2), "path": m.group(3)} if m else {"stderr": stderr})
            ours.append(file_kernel_totals(trace, marks["start_ns"], marks["end_ns"]))
            with open(trace) as f:  # launch calls found by name in this CUPTI, correlated
                kernels = [e for e in map(json.loads, f) if e.get("type") == "kernel" and "op" not in e.get("tags", {})]
            correlated.append(sum(1 for e in kernels if e.get("launch_start_ns")) / max(1, len(kernels)))
            os.remove(trace)
        else:
            path = os.path.join(outdir, f"torch-{rep}.json")
            run_workload(work + ["--profile", path])
            theirs.append(torch_kernel_totals(path))
            os.remove(path)

report["cupti_used"] = used
check("traced with the CUPTI of PyTorch's own environment",
      all(u.get("origin") in ("loaded by the program", "the Python environment's") and "site-packages" in u.get("path", "")
          for u in used), used)
check("every kernel correlated with its launch call", min(correlated) >= 0.99, {"fraction_per_run": correlated})
table = []
for name in sorted(set().union(*ours, *theirs)):
    oc = [o.get(name, [0, 0.0])[0] for o in ours]
    tc = [t.get(name, [0, 0.0])[0] for t in theirs]
    om = statistics.median(o.get(name, [0, 0.0])[1] for o in ours)
    tm = statistics.median(t.get(name, [0, 0.0])[1] for t in theirs)
    table.append({"name": name, "perfscope_counts": oc, "torch_counts": tc, "perfscope_total_us": round(om, 1),
                  "torch_total_us": round(tm, 1), "difference": (om - tm) / tm if tm else None})
report["kernels"] = table
check("same kernel names and counts as torch.profiler",
      len(table) > 0 and all(len(set(r["perfscope_counts"] + r["torch_counts"])) == 1 for r in table),
      {"kernels": len(table), "executions": sum(r["torch_counts"][0] for r in table)})

with open(os.path.join(outdir, "pip_cupti_report.json"), "w") as f:
    json.dump(report, f, indent=1)
# The report names the checkout's files relative to it and the Python environment as $PYTHON_ENV.
def local(text):
    return str(text).replace(os.getcwd() + "/", "").replace(sys.prefix, "$PYTHON_ENV")


with open(os.path.join(outdir, "pip_cupti_report.md"), "w") as f:
    f.write("# Tracing a pip-installed PyTorch with no CUDA toolkit\n\n")
    f.write("```\n" + local(report["environment"]) + "```\n\n")
    f.write(f"CUPTI used: {local(used[0])}\n\n")
    f.write("| kernel | perfscope executions (3 runs) | torch.profiler executions | perfscope total µs | torch.profiler total µs | difference |\n")
    f.write("|---|---|---|---|---|---|\n")
    for r in table:
        d = f"{r['difference'] * 100:+.2f} %" if r["difference"] is not None else "—"
        f.write(f"| `{r['name'][:90]}` | {r['perfscope_counts']} | {r['torch_counts']} | {r['perfscope_total_us']} | "
                f"{r['torch_total_us']} | {d} |\n")
    f.write("\n" + "\n".join(("PASS " if c["ok"] else "FAIL ") + c["check"] for c in checks) + "\n")
sys.exit(0 if all_passed() else 1)
