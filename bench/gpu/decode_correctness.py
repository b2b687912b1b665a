"""Kernel tracing's correctness on the launch-bound decode loop: per kernel name, the executions
and total durations `perfscope run` records in the loop's timed part against torch.profiler's
(CUDA activity) in its own run — 3 runs each, alternated, medians compared, each tool's
run-to-run spread beside. Copies and memsets are left out on both sides.
Usage: decode_correctness.py URL PERFSCOPE_BIN REPORT_DIR [PASSES]
Writes REPORT_DIR/decode_correctness.{json,md}; exit status 0 when names and counts are equal
and the total kernel time agrees within 2 %.
"""
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "gpu"))
from checks import perfscope_kernel_totals, torch_kernel_totals  # noqa: E402

url, perfscope, outdir = sys.argv[1:4]
passes = sys.argv[4] if len(sys.argv) > 4 else "2"
program = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "decode_loop.py"), "--passes", passes]


def last_json(text):
    return json.loads([line for line in text.splitlines() if line.startswith("{")][-1])


def perfscope_totals(rep):
    name = f"decode-check-{rep}"
    out = subprocess.run([perfscope, "run", "--server", url, "--name", name, "--"] + program,
                         capture_output=True, text=True, check=True)
    m = last_json(out.stdout)
    time.sleep(2)  # the writer commits in intervals
    return perfscope_kernel_totals(url, name, m["start_ns"], m["end_ns"])


def torch_totals(rep):
    path = os.path.join(outdir, f"decode_trace_{rep}.json")
    subprocess.run(program + ["--profiler", "--trace", path], capture_output=True, text=True, check=True)
    totals = torch_kernel_totals(path)
    os.remove(path)
    return totals


ours, theirs = [], []
for rep in range(3):
    ours.append(perfscope_totals(rep))
    theirs.append(torch_totals(rep))
rows = []
for name in sorted(set().union(*ours, *theirs)):
    oc = [o.get(name, [0, 0.0])[0] for o in ours]
    tc = [t.get(name, [0, 0.0])[0] for t in theirs]
    ot = statistics.median(o.get(name, [0, 0.0])[1] for o in ours)
    tt = statistics.median(t.get(name, [0, 0.0])[1] for t in theirs)
    rows.append({"name": name, "counts_perfscope": oc, "counts_torch": tc, "total_us_perfscope": ot,
                 "total_us_torch": tt, "difference": (ot - tt) / tt if tt else None})
total_ours = sum(r["total_us_perfscope"] for r in rows)
total_theirs = sum(r["total_us_torch"] for r in rows)
counts_equal = all(len(set(r["counts_perfscope"] + r["counts_torch"])) == 1 for r in rows)
checks = {"same kernel names and counts in every run": counts_equal,
          "total kernel time within 2 %": abs(total_ours - total_theirs) / total_theirs <= 0.02}
big = sorted(rows, key=lambda r: -r["total_us_torch"])[:10]
md = ["# Decode loop: perfscope run against torch.profiler", "",
      f"`bench/gpu/decode_correctness.py` ({passes} passes of 48 tokens, 3 runs of each tool, alternated). "
      f"{len(rows)} kernel names; executions per run: perfscope {sum(r['counts_perfscope'][0] for r in rows)}, "
      f"torch.profiler {sum(r['counts_torch'][0] for r in rows)}. Total kernel time (medians): perfscope "
      f"{total_ours / 1e3:.3f} ms, torch.profiler {total_theirs / 1e3:.3f} ms "
      f"({(total_ours - total_theirs) / total_theirs * 100:+.2f} %).", "",
      "| kernel (10 longest) | executions | total µs perfscope | total µs torch.profiler | difference |",
      "| --- | --- | --- | --- | --- |"]
for r in big:
    md.append(f"| {r['name'][:90]} | {r['counts_perfscope'][0]} | {r['total_us_perfscope']:.1f} | "
              f"{r['total_us_torch']:.1f} | {r['difference'] * 100:+.2f} % |")
md += [""] + [("PASS " if ok else "FAIL ") + k for k, ok in checks.items()]
json.dump({"rows": rows, "checks": checks}, open(os.path.join(outdir, "decode_correctness.json"), "w"), indent=1)
open(os.path.join(outdir, "decode_correctness.md"), "w").write("\n".join(md) + "\n")
print("\n".join(md))
sys.exit(0 if all(checks.values()) else 1)
