"""Per-process GPU attribution (issue 26) on a real GPU: two PyTorch processes of different
sizes (2 GiB busy all the time with 8192² matmuls, 6 GiB busy half of each 100 ms with 4096² ones). perfscope's per-process device
memory against `nvidia-smi --query-compute-apps` read at the same moment (within 1 MiB), and its
per-process SM share against `nvidia-smi pmon` over the same 10 seconds (means within 5
points); each process's host CPU seconds grow and its resident memory is known. After both
exit, /api/v1/processes still lists them with peak memory, GPU-seconds and energy (above zero for
a process pmon saw computing), and their attributed energies add up to the board's energy
counter over their lifetimes within 5 % — the counter read here through NVML every 100 ms (the
server reads it every 10 s only: too coarse for a lifetime of seconds).
Writes processes_report.json/.md to OUTDIR. Usage: verify_processes.py URL OUTDIR"""
import ctypes
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

from checks import all_passed, check, checks, report

url, outdir = sys.argv[1:3]
here = os.path.dirname(os.path.abspath(__file__))


def get(path):
    with urllib.request.urlopen(url + path) as resp:
        return json.loads(resp.read())


def latest(name):
    return [s for s in get("/api/v1/series")["series"] if s["name"] == name]


class BoardEnergy(threading.Thread):
    """GPU 0's total energy counter (NVML, millijoules since the driver loaded) every 100 ms."""

    def __init__(self):
        super().__init__(daemon=True)
        self.nvml = ctypes.CDLL("libnvidia-ml.so.1")
        assert self.nvml.nvmlInit_v2() == 0
        self.handle = ctypes.c_void_p()
        assert self.nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(self.handle)) == 0
        self.readings = []  # (ns, joules)
        self.stopped = threading.Event()

    def run(self):
        mj = ctypes.c_ulonglong()
        while not self.stopped.is_set():
            if self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle, ctypes.byref(mj)) == 0:
                self.readings.append((time.time_ns(), mj.value / 1000.0))
            time.sleep(0.1)

    def at(self, t):
        """The counter at time t, linear between the readings around it."""
        before = max((r for r in self.readings if r[0] <= t), key=lambda r: r[0])
        after = min((r for r in self.readings if r[0] >= t), key=lambda r: r[0])
        if after[0] == before[0]:
            return before[1]
        return before[1] + (after[1] - before[1]) * (t - before[0]) / (after[0] - before[0])


board_energy = BoardEnergy()
board_energy.start()
time.sleep(0.5)
workers = {
    "big_idle": subprocess.Popen([sys.executable, os.path.join(here, "process_workload.py"), "6", "4096", "0.5", "60"],
                                 stdout=subprocess.PIPE, text=True),
    "small_busy": subprocess.Popen([sys.executable, os.path.join(here, "process_workload.py"), "2", "8192", "1.0", "60"],
                                   stdout=subprocess.PIPE, text=True),
}
for w in workers.values():
    w.stdout.readline()  # "ready": memory held, matmuls begin
pids = {name: w.pid for name, w in workers.items()}
time.sleep(5)

# Memory: both views read at the same moment (memory is steady while the workers run).
smi = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                     capture_output=True, text=True).stdout
ours = {int(s["labels"]["pid"]): s for s in latest("gpu_process_memory_bytes")}
memory = []
for line in smi.strip().splitlines():
    pid_text, mib_text = [x.strip() for x in line.split(",")]
    pid = int(pid_text)
    if pid not in pids.values():
        continue
    mine = ours.get(pid)
    mine_mib = mine["latest"]["value"] / (1 << 20) if mine else None
    memory.append({"pid": pid, "nvidia_smi_mib": float(mib_text), "perfscope_mib": mine_mib,
                   "labels": mine["labels"] if mine else None})
check("per-process memory equals nvidia-smi's within 1 MiB",
      len(memory) == 2 and all(m["perfscope_mib"] is not None and abs(m["perfscope_mib"] - m["nvidia_smi_mib"]) <= 1
                               for m in memory), memory)

# SM share: pmon's one-second samples and perfscope's over the same ten seconds.
t0 = time.time_ns()
pmon = subprocess.run(["nvidia-smi", "pmon", "-c", "10", "-d", "1", "-s", "u"], capture_output=True, text=True).stdout
t1 = time.time_ns()
pmon_sm = {pid: [] for pid in pids.values()}
for line in pmon.splitlines():
    parts = line.split()
    if not parts or parts[0].startswith("#") or len(parts) < 4:
        continue
    try:
        pid = int(parts[1])
    except ValueError:
        continue
    if pid in pmon_sm:
        pmon_sm[pid].append(0.0 if parts[3] == "-" else float(parts[3]))
share = []
for name, pid in pids.items():
    q = urllib.parse.urlencode({"name": "gpu_process_utilization_ratio", "engine": "sm", "pid": str(pid),
                                "from": str(t0), "to": str(t1), "max_points": "100000"})
    series = get("/api/v1/series/query?" + q)["series"]
    values = [p[1] * 100 for s in series for p in s["points"]]
    ours_mean = sum(values) / len(values) if values else None
    theirs = pmon_sm[pid]
    theirs_mean = sum(theirs) / len(theirs) if theirs else None
    share.append({"worker": name, "pid": pid, "perfscope_sm_mean": ours_mean, "perfscope_samples": len(values),
                  "pmon_sm_mean": theirs_mean, "pmon_samples": len(theirs), "pmon_sm": theirs})
check("per-process SM share agrees with nvidia-smi pmon over the same 10 s within 5 points",
      all(s["perfscope_sm_mean"] is not None and s["pmon_sm_mean"] is not None and
          abs(s["perfscope_sm_mean"] - s["pmon_sm_mean"]) <= 5 for s in share), share)
check("the busy process has the larger SM share",
      share[1]["perfscope_sm_mean"] is not None and share[0]["perfscope_sm_mean"] is not None and
      share[1]["perfscope_sm_mean"] > share[0]["perfscope_sm_mean"], share)

# Host side: CPU seconds grow, resident memory is known.
cpu_a = {int(s["labels"]["pid"]): s["latest"]["value"] for s in latest("gpu_process_cpu_seconds_total")}
time.sleep(2.5)
cpu_b = {int(s["labels"]["pid"]): s["latest"]["value"] for s in latest("gpu_process_cpu_seconds_total")}
rss = {int(s["labels"]["pid"]): s["latest"]["value"] for s in latest("gpu_process_resident_memory_bytes")}
host = [{"pid": pid, "cpu_seconds": [cpu_a.get(pid), cpu_b.get(pid)], "rss_mib": (rss.get(pid) or 0) / (1 << 20)}
        for pid in pids.values()]
check("each process's host CPU time grows and its resident memory is known",
      all(h["cpu_seconds"][0] is not None and h["cpu_seconds"][1] > h["cpu_seconds"][0] and h["rss_mib"] > 10 for h in host),
      host)

for w in workers.values():
    w.kill()
for w in workers.values():
    w.wait()
time.sleep(3)  # a pass or two without them: their records are finished

# History: both still listed, with their lifetime figures; their energies against the board's.
listed = {p["pid"]: p for p in get("/api/v1/processes?window=10m")["processes"] if p["pid"] in pids.values()}
past = [{k: listed[pid].get(k) for k in ("pid", "state", "peak_memory_bytes", "gpu_seconds", "energy_joules",
                                         "first_seen_ns", "last_seen_ns")} for pid in pids.values() if pid in listed]
board_energy.stopped.set()
board_energy.join()
computing = {w["pid"] for w in share if (w.get("pmon_sm_mean") or 0) > 0}  # pmon saw it use the SMs
check("after both exit, both are listed with peak memory, GPU-seconds and energy",
      len(past) == 2 and all(p["state"] != "running" and p["peak_memory_bytes"] > 0 and p["gpu_seconds"] is not None and
                             p["energy_joules"] is not None and
                             (p["pid"] not in computing or (p["gpu_seconds"] > 0 and p["energy_joules"] > 0))
                             for p in past), past)
energy = {}
if len(past) == 2:
    lo, hi = min(p["first_seen_ns"] for p in past), max(p["last_seen_ns"] for p in past)
    board = board_energy.at(hi) - board_energy.at(lo)
    attributed = sum(p["energy_joules"] for p in past)
    energy = {"interval_s": (hi - lo) / 1e9, "board_joules": board, "attributed_joules": attributed,
              "difference": (attributed - board) / board if board else None}
check("their energies add up to the board's energy over their lifetimes within 5 %",
      energy.get("difference") is not None and abs(energy["difference"]) <= 0.05, energy)
report.update({"memory": memory, "sm_share": share, "host": host, "pmon": pmon, "nvidia_smi": smi, "past": past,
               "energy": energy})
with open(os.path.join(outdir, "processes_report.json"), "w") as f:
    json.dump(report, f, indent=1)
with open(os.path.join(outdir, "processes_report.md"), "w") as f:
    f.write("# Per-process GPU attribution on a real GPU\n\n")
    f.write("\n".join(f"- {'PASS' if c['ok'] else 'FAIL'} {c['check']}" for c in checks) + "\n\n")
    f.write("| worker | pid | memory MiB (nvidia-smi) | memory MiB (perfscope) | SM % pmon | SM % perfscope |\n"
            "| --- | ---: | ---: | ---: | ---: | ---: |\n")
    for s in share:
        m = next((m for m in memory if m["pid"] == s["pid"]), {})
        f.write(f"| {s['worker']} | {s['pid']} | {m.get('nvidia_smi_mib')} | {m.get('perfscope_mib')} | "
                f"{s['pmon_sm_mean']} | {s['perfscope_sm_mean']} |\n")
    if energy:
        f.write(f"\nEnergy over the workers' lifetimes ({energy['interval_s']:.1f} s): board counter "
                f"{energy['board_joules']:.1f} J, attributed to the two processes {energy['attributed_joules']:.1f} J "
                f"({energy['difference'] * 100:+.2f} %).\n")
sys.exit(0 if all_passed() else 1)
