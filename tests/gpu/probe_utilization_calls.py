"""What NVML's two per-process utilization calls cost on this driver: the older
nvmlDeviceGetProcessUtilization and the newer nvmlDeviceGetProcessesUtilizationInfo (struct
version 1), each timed 200 times, alternating in blocks of 20, with no compute process and
then with 10 idle PyTorch processes holding memory; prints one JSON line per case (median
and minimum µs per call, samples returned).
Run on the GPU machine: python3 tests/gpu/probe_utilization_calls.py
"""
import ctypes, json, statistics, subprocess, sys, time

nvml = ctypes.CDLL("libnvidia-ml.so.1")


class Sample(ctypes.Structure):  # nvmlProcessUtilizationSample_t
    _fields_ = [("pid", ctypes.c_uint), ("ts", ctypes.c_ulonglong), ("sm", ctypes.c_uint), ("mem", ctypes.c_uint),
                ("enc", ctypes.c_uint), ("dec", ctypes.c_uint)]


class Info(ctypes.Structure):  # nvmlProcessUtilizationInfo_v1_t
    _fields_ = [("ts", ctypes.c_ulonglong), ("pid", ctypes.c_uint), ("sm", ctypes.c_uint), ("mem", ctypes.c_uint),
                ("enc", ctypes.c_uint), ("dec", ctypes.c_uint), ("jpg", ctypes.c_uint), ("ofa", ctypes.c_uint)]


class Infos(ctypes.Structure):  # nvmlProcessesUtilizationInfo_v1_t
    _fields_ = [("version", ctypes.c_uint), ("count", ctypes.c_uint), ("last_seen", ctypes.c_ulonglong),
                ("array", ctypes.POINTER(Info))]


assert nvml.nvmlInit_v2() == 0
device = ctypes.c_void_p()
assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(device)) == 0
samples = (Sample * 128)()
infos = (Info * 128)()


def old_call():
    n = ctypes.c_uint(128)
    rc = nvml.nvmlDeviceGetProcessUtilization(device, samples, ctypes.byref(n), ctypes.c_ulonglong(0))
    return rc, n.value


def new_call():
    request = Infos(version=ctypes.sizeof(Infos) | (1 << 24), count=128, last_seen=0, array=infos)
    rc = nvml.nvmlDeviceGetProcessesUtilizationInfo(device, ctypes.byref(request))
    return rc, request.count


def measure(case):
    times = {"old": [], "new": []}
    answers = {}
    for block in range(10):
        for name, call in (("old", old_call), ("new", new_call)) if block % 2 == 0 else (("new", new_call), ("old", old_call)):
            for _ in range(20):
                t = time.perf_counter()
                answers[name] = call()
                times[name].append((time.perf_counter() - t) * 1e6)
    for name, t in times.items():
        print(json.dumps({"case": case, "call": name, "rc": answers[name][0], "samples": answers[name][1],
                          "median_us": round(statistics.median(t), 1), "min_us": round(min(t), 1)}), flush=True)


measure("no compute process")
workers = [subprocess.Popen([sys.executable, "-c", "import torch, time; x = torch.empty(1 << 28, dtype=torch.uint8, "
                             "device='cuda'); print('ready', flush=True); time.sleep(600)"], stdout=subprocess.PIPE,
                            text=True) for _ in range(10)]
for w in workers:
    w.stdout.readline()
measure("10 idle processes")
for w in workers:
    w.kill()
