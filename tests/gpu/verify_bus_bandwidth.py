"""Compares what perfscope says of a pure all-reduce loop (run_bus_bandwidth.sh) with the job's
own figures. Per size: perfscope's bus bandwidth (GET /api/v1/collectives: the AllReduce row of
that size) against the job's CUDA-event timing by nccl-tests' formula, and the mean of each GPU's
NVLink tx series over the size's wall-clock window (its first and last 10 % left out: the
sampler's 100 ms steps straddle the edges) against the bytes that GPU sent per second (2(n-1)/n
of the buffer per operation). Each within 10 %. Prints a table; exits 1 if a check fails.
Usage: verify_bus_bandwidth.py DIR (holding rank*.json, collectives.json, nvlink_tx.json)
"""
import glob
import json
import os
import statistics
import sys

d = sys.argv[1]
ranks = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(d, "rank*.json")))]
collectives = json.load(open(os.path.join(d, "collectives.json")))
nvlink = json.load(open(os.path.join(d, "nvlink_tx.json")))
jobs = collectives.get("jobs", [])
ops = [o for j in jobs for o in j.get("ops", [])]
failed = False


def check(what, got, want):
    global failed
    ok = got is not None and want and abs(got / want - 1) <= 0.10
    failed |= not ok
    print(f"{what}: perfscope {got if got is None else round(got, 2)}, job {round(want, 2)}"
          f" ({'' if got is None else f'{(got / want - 1) * 100:+.1f} %, '}{'ok' if ok else 'FAILED'})")


print(f"NCCL {ranks[0]['nccl_version']}, torch {ranks[0]['torch']}, {len(ranks)} ranks")
for i, size in enumerate(ranks[0]["sweep"]):
    nbytes = size["bytes"]
    job_busbw = statistics.mean(r["sweep"][i]["busbw_gb_per_s"] for r in ranks)
    row = next((o for o in ops if o.get("op") == "AllReduce" and o.get("bytes") == nbytes), None)
    extra = f" [{row.get('algorithm')}/{row.get('protocol')}, {row.get('busbw_share_of_peak')} of the {collectives.get('link_peak_gb_per_second')} GB/s peak]" if row else ""
    check(f"{nbytes >> 20} MiB bus bandwidth, GB/s{extra}", row and row.get("busbw_p50_gb_per_second"), job_busbw)
    for r in ranks:
        s = r["sweep"][i]
        span = s["wall_end_ns"] - s["wall_start_ns"]
        lo, hi = s["wall_start_ns"] + span // 10, s["wall_end_ns"] - span // 10
        values = [p[1] for series in nvlink.get("series", []) if series["labels"].get("gpu") == str(r["device"])
                  for p in series["points"] if lo <= p[0] <= hi]
        got = statistics.mean(values) / 1e9 if values else None
        check(f"{nbytes >> 20} MiB GPU {r['device']} NVLink tx, GB/s ({len(values)} samples)", got, s["sent_gb_per_s"])
sys.exit(1 if failed else 0)
