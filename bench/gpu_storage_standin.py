"""Bytes per stored sample of one GPU's series (issue 21), on the stand-in NVML with realistic
noise: a perfscope with only the GPU collector samples the stand-in library every 100 ms while
this script rewrites the stand-in's script every 50 ms — alternating minutes of load (SM
utilization 90-100 %, power 300-700 W moving every read, GPM activities as full-precision
doubles, clocks stepping under a power cap, temperature drifting) and idle (low, steady
readings with small noise). Then the database is measured as bench/sample_storage.py does.

Usage: python3 bench/gpu_storage_standin.py PERFSCOPE_BINARY FAKE_NVML_LIBRARY OUT_DIR [MINUTES=10]
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sample_storage import measure  # noqa: E402


def main() -> None:
    binary, library, out = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    minutes = float(sys.argv[4]) if len(sys.argv) > 4 else 10
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    script = os.path.join(out, "nvml.script")
    rng = random.Random(21)
    energy_mj = 123_456_789
    temp, mem_used = 45.0, 2 << 30
    state = {"clock": 1980}

    def write(load: bool) -> None:
        nonlocal energy_mj, temp, mem_used
        util = rng.randint(90, 100) if load else rng.choice([0, 0, 0, 1])
        power_mw = int(rng.gauss(520_000, 60_000)) if load else int(rng.gauss(72_000, 800))
        energy_mj += power_mw // 20  # 50 ms of it
        temp += ((72 if load else 38) - temp) * 0.01 + rng.gauss(0, 0.05)
        if load and rng.random() < 0.02:
            state["clock"] = rng.choice([1980, 1755, 1605, 1410])
        if not load:
            state["clock"] = 345
        mem_used = max(1 << 30, mem_used + (rng.choice([-1, 0, 0, 0, 1]) << 21 if load else 0))
        gpm = {
            2: rng.uniform(88, 99.5) if load else rng.uniform(0, 0.3),
            3: rng.uniform(40, 60) if load else 0.0,
            5: rng.uniform(70, 95) if load else 0.0,
            10: rng.uniform(20, 45) if load else rng.uniform(0, 0.05),
            11: 0.0,
            12: rng.uniform(5, 12) if load else 0.0,
            13: rng.uniform(0, 3) if load else 0.0,
            20: rng.uniform(100, 900) if load else rng.uniform(0, 2),
            21: rng.uniform(100, 2000) if load else rng.uniform(0, 2),
        }
        lines = [
            "count 1", "driver 580.159.01", "nvml 13.580",
            "0.name NVIDIA H100 80GB HBM3", "0.uuid GPU-standin-0",
            f"0.util_gpu {util}", f"0.util_mem {util // 3}",
            f"0.mem_total {80 << 30}", f"0.mem_used {mem_used}", f"0.mem_reserved {512 << 20}",
            f"0.power_mw {max(0, power_mw)}", "0.limit_mw 700000", f"0.energy_mj {energy_mj}",
            f"0.temp {int(temp)}", f"0.mem_temp {int(temp) + 6}", f"0.power_instant_mw {max(0, power_mw + rng.randint(-30000, 30000))}",
            f"0.clock_sm {state['clock']}", "0.clock_mem 2619", f"0.clock_gfx {state['clock']}",
            "0.max_clock_sm 1980", "0.max_clock_mem 2619", "0.bus_width 5120",
            f"0.reasons {'0x4' if load and state['clock'] < 1980 else '0x1' if not load else '0x0'}",
            "0.gpm 1",
        ] + [f"0.gpm.{k} {v!r}" for k, v in gpm.items()]
        tmp = script + ".tmp"
        with open(tmp, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(tmp, script)

    write(True)
    env = dict(os.environ, PERFSCOPE_FAKE_NVML_SCRIPT=script)
    proc = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", os.path.join(out, "data"),
                             "--enable-host-collector", "false", "--nvml-library", library],
                            env=env, stdout=open(os.path.join(out, "perfscope.log"), "w"), stderr=subprocess.STDOUT)
    start = time.time()
    while time.time() - start < minutes * 60:
        write(load=int((time.time() - start) // 60) % 2 == 0)  # load and idle, a minute each
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    m = measure(os.path.join(out, "data", "perfscope.db"))
    json.dump(m, open(os.path.join(out, "storage.json"), "w"), indent=1)
    print(json.dumps({k: v for k, v in m.items() if k != "tables"}, indent=1))


if __name__ == "__main__":
    main()
