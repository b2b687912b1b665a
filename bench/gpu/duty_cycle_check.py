"""A long-running program under `perfscope run --duty-cycle` stays live in the dashboard's
sources: the decode loop runs for SECONDS while this polls what the dashboard reads — the
kernel table (/api/v1/kernels) and the timeline and sampling of the analysis — and checks that
they keep growing window after window and that the sampled fraction matches the schedule.
Usage: duty_cycle_check.py URL PERFSCOPE_BIN REPORT_DIR [SECONDS]
"""
import json
import subprocess
import sys
import time
import urllib.request


def get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)


def main():
    url, binary, report = sys.argv[1], sys.argv[2], sys.argv[3]
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 30
    name = "duty-live"
    cmd = [binary, "run", "--server", url, "--name", name, "--trace-window", "100ms", "--trace-every", "2s", "--",
           sys.executable, "bench/gpu/decode_loop.py", "--seconds", str(seconds)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    polls = []
    t0 = time.time()
    while proc.poll() is None:
        time.sleep(5)
        kernels = get(f"{url}/api/v1/kernels?window=2m")
        analysis = get(f"{url}/api/v1/analysis?run={name}&window=2m")
        rows = [t for t in analysis["timeline"] if t["run"] == name and t["stream"] is None]
        polls.append({"t_s": round(time.time() - t0, 1),
                      "kernel_table_executions": sum(k["count"] for k in kernels["kernels"]),
                      "timeline_kernels": sum(t["kernel_count"] for t in rows),
                      "sampling": analysis.get("sampling")})
        print(json.dumps(polls[-1]), flush=True)
    out, err = proc.communicate()
    run = get(f"{url}/api/v1/runs/{name}")
    growing = [p["timeline_kernels"] for p in polls if p["timeline_kernels"]]
    fraction = (run.get("sampling") or {}).get("sampled_fraction")
    checks = {
        "the run ended cleanly": proc.returncode == 0,
        "kernels appeared while it ran": len(growing) >= 2,
        "the table and timeline kept growing": all(b > a for a, b in zip(growing, growing[1:])) and len(growing) >= 3,
        "sampled fraction near 5 %": fraction is not None and 0.03 <= fraction <= 0.07,
    }
    result = {"polls": polls, "run": {k: run.get(k) for k in ("sampling", "kernels", "wall_s", "trace_window_ns",
                                                              "trace_every_ns")},
              "program": out.strip().splitlines()[-1:] if out else [], "stderr_tail": err.strip().splitlines()[-3:],
              "checks": checks}
    json.dump(result, open(f"{report}/duty_cycle_check.json", "w"), indent=1)
    for k, ok in checks.items():
        print(("PASS " if ok else "FAIL ") + k)
    sys.exit(0 if all(checks.values()) else 1)


if __name__ == "__main__":
    main()
