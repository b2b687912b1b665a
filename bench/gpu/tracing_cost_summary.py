"""Summarizes bench/gpu/tracing_cost.sh's runs: per workload and variant, the median of the
timed part with its spread (min–max over the rounds), the minimum (noise only adds time to a
launch-bound loop), both as ratios to the untraced runs, and the host time each traced kernel
added (median difference / kernels launched in the timed part).
Usage: tracing_cost_summary.py RUNS.jsonl... REPORT_DIR  → REPORT_DIR/tracing_cost.{json,md}
"""
import json
import statistics
import sys
from collections import defaultdict

ORDER = ["plain", "floor-kernel", "floor-buf1m", "floor-buf16m", "floor-flush100", "floor-krm", "floor-kwm", "floor-ksampled", "file-kernel",
         "run-default", "run-kernel", "run-runtime", "run-driver", "run-launch", "run-duty5", "run-duty5r", "run-idle", "profiler"]


def main():
    runs, report = sys.argv[1:-1], sys.argv[-1]
    times = defaultdict(lambda: defaultdict(list))
    by_round = defaultdict(lambda: defaultdict(dict))  # workload → round → variant → s
    kernels, correlation = {}, defaultdict(dict)
    for line in (l for path in runs for l in open(path)):
        row = json.loads(line)
        w, v, r = row["workload"], row["variant"], row["result"]
        if r is None:
            continue
        if v == "count":
            kernels[w] = r["kernels"]
        elif row["round"] == "correlation":
            correlation[w][v] = r
        else:
            times[w][v].append(r["timed_s"])
            by_round[w][row["round"]][v] = r["timed_s"]
            if w == "empty":
                kernels[w] = r["kernels"]
    summary = {}
    md = ["# Kernel tracing cost on launch-bound work", "",
          "Produced by `bench/gpu/tracing_cost.sh` (variants alternated within each round); "
          "`tracing_cost_summary.py` wrote this from " + ", ".join(f"`{r.split('/')[-1]}`" for r in runs) + ".", ""]
    for w, by_variant in times.items():
        plain = by_variant.get("plain", [])
        if not plain:
            continue
        p_med, p_min = statistics.median(plain), min(plain)
        n_kernels = kernels.get(w)
        rows = {}
        md += [f"## {w}: {n_kernels} kernels in the timed part" if n_kernels else f"## {w}", "",
               "| variant | rounds | median s (min–max) | median ratio | paired ratio, median (range) | min s | min ratio "
               "| added µs per kernel (median) |",
               "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for v in sorted(by_variant, key=lambda x: ORDER.index(x) if x in ORDER else 99):
            t = by_variant[v]
            med, lo, hi = statistics.median(t), min(t), max(t)
            added = (med - p_med) / n_kernels * 1e6 if n_kernels else None
            paired = [r[v] / r["plain"] for r in by_round[w].values() if v in r and "plain" in r]
            rows[v] = {"rounds": len(t), "median_s": med, "min_s": lo, "max_s": hi, "median_ratio": med / p_med,
                       "min_ratio": lo / p_min, "added_us_per_kernel": added,
                       "paired_ratio_median": statistics.median(paired) if paired else None,
                       "paired_ratio_range": [min(paired), max(paired)] if paired else None, "times_s": t,
                       "correlation": correlation[w].get(v)}
            pr = f"{statistics.median(paired):.2f} ({min(paired):.2f}–{max(paired):.2f})" if paired else ""
            md.append(f"| {v} | {len(t)} | {med:.3f} ({lo:.3f}–{hi:.3f}) | {med / p_med:.2f} | {pr} | {lo:.3f} | "
                      f"{lo / p_min:.2f} | {'' if added is None else f'{added:.2f}'} |")
        if correlation[w]:
            md += ["", "Launch correlation (last round's runs, from the analysis): kernels with their launch call"]
            for v, c in correlation[w].items():
                s = c.get("sampling")
                md.append(f"- {v}: {c['with_launch']} of {c['kernel_count']}"
                          + (f"; sampled_fraction {s['sampled_fraction']:.3f}" if s else ""))
        md.append("")
        summary[w] = {"kernels": n_kernels, "variants": rows}
    json.dump(summary, open(f"{report}/tracing_cost.json", "w"), indent=1)
    open(f"{report}/tracing_cost.md", "w").write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
