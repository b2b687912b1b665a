"""Summarizes bench/gpu/in_process_cost.sh: per process, the passes inside a tracing window
(more than 150 ms from its edges) against those inside the gap between windows — median and
minimum pass time of each, their ratios — then per variant the median of those ratios over the
rounds with their range.
Usage: in_process_summary.py RUNS.jsonl REPORT_DIR → REPORT_DIR/in_process.{json,md}
"""
import json
import statistics
import sys
from collections import defaultdict

MARGIN_NS = 150_000_000


def split(passes, window_ns, every_ns):
    traced, untraced = [], []
    for start, end in passes:
        base = start - start % every_ns
        if start >= base + MARGIN_NS and end <= base + window_ns - MARGIN_NS:
            traced.append((end - start) / 1e6)
        elif start >= base + window_ns + MARGIN_NS and end <= base + every_ns - MARGIN_NS:
            untraced.append((end - start) / 1e6)
    return traced, untraced


def main():
    runs, report = sys.argv[1], sys.argv[2]
    per_variant = defaultdict(list)
    for line in open(runs):
        row = json.loads(line)
        r = row["result"]
        if not r or not r.get("pass_ns"):
            continue
        traced, untraced = split(r["pass_ns"], row["window_ms"] * 1_000_000, row["every_ms"] * 1_000_000)
        if len(traced) < 5 or len(untraced) < 5:
            continue
        per_variant[row["variant"]].append({
            "round": row["round"], "traced_passes": len(traced), "untraced_passes": len(untraced),
            "traced_median_ms": statistics.median(traced), "untraced_median_ms": statistics.median(untraced),
            "median_ratio": statistics.median(traced) / statistics.median(untraced),
            "min_ratio": min(traced) / min(untraced)})
    summary = {}
    md = ["# Tracing cost inside one process (decode loop)", "",
          f"Produced by `bench/gpu/in_process_cost.sh`; `in_process_summary.py` wrote this from `{runs.split('/')[-1]}`. "
          "Per process: traced passes (inside a window) against untraced ones (between windows).", "",
          "| variant | processes | passes traced / untraced (median per process) | median ratio, median over processes (range) "
          "| min ratio, median (range) |", "| --- | --- | --- | --- | --- |"]
    for v, rows in per_variant.items():
        med = [r["median_ratio"] for r in rows]
        mins = [r["min_ratio"] for r in rows]
        summary[v] = {"processes": rows, "median_ratio": statistics.median(med), "median_ratio_range": [min(med), max(med)],
                      "min_ratio": statistics.median(mins), "min_ratio_range": [min(mins), max(mins)]}
        md.append(f"| {v} | {len(rows)} | {statistics.median(r['traced_passes'] for r in rows):.0f} / "
                  f"{statistics.median(r['untraced_passes'] for r in rows):.0f} | {statistics.median(med):.3f} "
                  f"({min(med):.3f}–{max(med):.3f}) | {statistics.median(mins):.3f} ({min(mins):.3f}–{max(mins):.3f}) |")
    json.dump(summary, open(f"{report}/in_process.json", "w"), indent=1)
    open(f"{report}/in_process.md", "w").write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
