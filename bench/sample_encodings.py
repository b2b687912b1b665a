"""Bytes per sample of the sampled series in a perfscope database under candidate chunk
encodings (issue 21), series by series, to choose the encoding before building it:

- gorilla: Gorilla as Prometheus' chunks use it, per series: delta-of-delta timestamps
  (buckets of 7/9/12/32 bits, here over nanoseconds), XOR'd doubles with leading/trailing zero
  windows.
- gorilla_ms: the same with timestamps in milliseconds (what a millisecond store would keep).
- values_only: the XOR'd values alone: what a series costs when its timestamps are stored once
  per sampling pass for every series of the pass (they share one timestamp).
Chunks of 120 samples (the first timestamp and value raw in each).

Usage: python3 bench/sample_encodings.py DATABASE [CHUNK=120]
"""

from __future__ import annotations

import sqlite3
import struct
import sys
from collections import defaultdict
from typing import Dict, List, Tuple


def bits_of(x: float) -> int:
    return struct.unpack(">Q", struct.pack(">d", x))[0]


def dod_bits(timestamps: List[int]) -> int:
    """Gorilla's timestamp encoding, in bits, over one chunk."""
    bits = 64
    if len(timestamps) > 1:
        bits += 14 if abs(timestamps[1] - timestamps[0]) < (1 << 13) else 64
    for i in range(2, len(timestamps)):
        d = (timestamps[i] - timestamps[i - 1]) - (timestamps[i - 1] - timestamps[i - 2])
        if d == 0:
            bits += 1
        elif -63 <= d <= 64:
            bits += 2 + 7
        elif -255 <= d <= 256:
            bits += 3 + 9
        elif -2047 <= d <= 2048:
            bits += 4 + 12
        else:
            bits += 4 + 64 if abs(d) >= (1 << 31) else 4 + 32
    return bits


def xor_bits(values: List[float]) -> int:
    """Gorilla's value encoding, in bits, over one chunk."""
    bits = 64
    prev = bits_of(values[0])
    lead_w, trail_w = -1, -1
    for v in values[1:]:
        cur = bits_of(v)
        x = cur ^ prev
        prev = cur
        if x == 0:
            bits += 1
            continue
        lead = 64 - x.bit_length()
        trail = (x & -x).bit_length() - 1
        lead = min(lead, 31)
        if lead_w >= 0 and lead >= lead_w and trail >= trail_w:
            bits += 2 + (64 - lead_w - trail_w)
        else:
            lead_w, trail_w = lead, trail
            bits += 2 + 5 + 6 + (64 - lead - trail)
    return bits


def main() -> None:
    db = sys.argv[1]
    chunk = int(sys.argv[2]) if len(sys.argv) > 2 else 120
    con = sqlite3.connect(db)
    names = {sid: f"{n}{{{l}}}" if l else n for sid, n, l in con.execute("SELECT id, name, labels FROM series")}
    samples: Dict[int, List[Tuple[int, float]]] = defaultdict(list)
    for sid, ts, v in con.execute("SELECT series_id, ts_ns, value FROM samples ORDER BY series_id, ts_ns"):
        samples[sid].append((ts, v))
    rows = []
    totals = defaultdict(int)
    count = 0
    for sid, points in samples.items():
        per = {"gorilla": 0, "gorilla_ms": 0, "values_only": 0}
        for i in range(0, len(points), chunk):
            part = points[i:i + chunk]
            ts = [p[0] for p in part]
            vs = [p[1] for p in part]
            v = xor_bits(vs)
            per["gorilla"] += dod_bits(ts) + v
            per["gorilla_ms"] += dod_bits([t // 1_000_000 for t in ts]) + v
            per["values_only"] += v
        n = len(points)
        count += n
        for k in per:
            totals[k] += per[k]
        rows.append((names.get(sid, str(sid)), n, {k: per[k] / 8 / n for k in per}))
    # The timestamps shared by all series of a pass: one dod stream per distinct pass.
    passes = sorted({p[0] for pts in samples.values() for p in pts})
    shared_ts_bits = sum(dod_bits(passes[i:i + chunk]) for i in range(0, len(passes), chunk))
    rows.sort(key=lambda r: -r[2]["gorilla"])
    print(f"{count} samples in {len(samples)} series, {len(passes)} sampling passes, chunks of {chunk}")
    print("| series | samples | gorilla B/sample | gorilla_ms | values only |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, n, per in rows:
        print(f"| `{name}` | {n} | {per['gorilla']:.2f} | {per['gorilla_ms']:.2f} | {per['values_only']:.2f} |")
    print(f"| **all** | {count} | **{totals['gorilla'] / 8 / count:.2f}** | {totals['gorilla_ms'] / 8 / count:.2f} | "
          f"{(totals['values_only'] + shared_ts_bits) / 8 / count:.2f} (with one shared timestamp stream) |")


if __name__ == "__main__":
    main()
