"""What nvmlDeviceGetProcessUtilization returns between reads: two PyTorch workers run (one
busy all the time, one half of each 100 ms) while this reads the per-process samples newer than
the last one seen, first once a second, then every 100 ms, and prints each answer (pid, sample
age in ms, SM %). Run on the GPU machine: python3 tests/gpu/probe_process_utilization.py tests/gpu
"""
import ctypes, json, os, subprocess, sys, time
nvml = ctypes.CDLL("libnvidia-ml.so.1")
class S(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("ts", ctypes.c_ulonglong), ("sm", ctypes.c_uint), ("mem", ctypes.c_uint), ("enc", ctypes.c_uint), ("dec", ctypes.c_uint)]
assert nvml.nvmlInit_v2() == 0
h = ctypes.c_void_p()
assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h)) == 0
here = sys.argv[1]
w = [subprocess.Popen([sys.executable, os.path.join(here, "process_workload.py"), "1", "4096", "0.5", "12"], stdout=subprocess.PIPE, text=True),
     subprocess.Popen([sys.executable, os.path.join(here, "process_workload.py"), "1", "8192", "1.0", "12"], stdout=subprocess.PIPE, text=True)]
for p in w: p.stdout.readline()
print("pids", [p.pid for p in w])
last = 0
for cadence in [1.0]*5 + [0.1]*10:
    time.sleep(cadence)
    n = ctypes.c_uint(0)
    rc = nvml.nvmlDeviceGetProcessUtilization(h, None, ctypes.byref(n), ctypes.c_ulonglong(last))
    arr = (S * (n.value + 8))()
    n2 = ctypes.c_uint(n.value + 8)
    rc2 = nvml.nvmlDeviceGetProcessUtilization(h, arr, ctypes.byref(n2), ctypes.c_ulonglong(last))
    rows = [(arr[i].pid, arr[i].ts, arr[i].sm) for i in range(n2.value)] if rc2 == 0 else []
    now = int(time.time() * 1e6)
    print(json.dumps({"cadence": cadence, "rc": [rc, rc2], "n": n2.value, "last": last, "now_us": now,
                      "rows": [(pid, (ts - now) / 1000.0, sm) for pid, ts, sm in rows]}))
    if rows: last = max(ts for _, ts, _ in rows)
for p in w: p.kill()
