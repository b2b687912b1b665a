"""Achieved TFLOP/s and GB/s against what the program measured itself, on the GPU:
1. a bf16 GEMM loop (8192³, FLOPs known exactly: 2·n³ per call) timed per call with the Python
   client's kernel_timer carrying flops/bytes/dtype: perfscope's achieved TFLOP/s within 2 % of
   the program's FLOPs over its own CUDA-event time of the loop; GPM's tensor estimate over the
   same seconds reported beside it with its error; the kernel's roofline place and the GPU's
   --device-target checks recorded;
2. the same loop under torch.profiler(with_flops=True), imported with `perfscope import`: the
   cuBLAS kernel gets its op's FLOPs, dtype and least traffic; achieved TFLOP/s within 2 % of the
   program's (kernel times come from the trace, not from the program);
3. a streaming loop (y = x + 1 over 1 GiB fp32: 2 GiB moved per call) timed with kernel_timer:
   achieved GB/s within 2 % of the program's; GPM's DRAM bandwidth beside it with its error.
Also records a small with_flops trace (mm, addmm, bmm in bf16/fp16) for the CI fixtures.
Usage: verify_roofline.py SERVER_URL PERFSCOPE_BIN REPORT_DIR"""
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python"))
import perfscope  # noqa: E402
import torch  # noqa: E402

url, bin_path, report = sys.argv[1:4]
results = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "checks": []}


def get(path):
    with urllib.request.urlopen(url + path, timeout=120) as r:
        return json.load(r)


def check(name, ok, **detail):
    results["checks"].append({"name": name, "ok": bool(ok), **detail})
    print(("PASS " if ok else "FAIL ") + name + " " + json.dumps(detail), flush=True)


def series_mean(name, start_ns, end_ns, labels=""):
    """Mean of a GPU series' raw points inside [start, end] (the loop's steady part)."""
    q = get(f"/api/v1/series/query?name={name}&from={start_ns}&to={end_ns}&max_points=100000{labels}")
    values = [p[1] for s in q["series"] for p in s["points"] if p[1] is not None]
    return (statistics.fmean(values), len(values)) if values else (None, 0)


def timed_loop(body, iters):
    """Runs body() iters times between two CUDA events; returns (seconds, wall start/end ns)."""
    torch.cuda.synchronize()
    start_ns = time.time_ns()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(iters):
        body()
    e1.record()
    torch.cuda.synchronize()
    return e0.elapsed_time(e1) / 1e3, start_ns, time.time_ns()


client = perfscope.Client(url)
n = 8192
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
gemm_flops, gemm_bytes = 2.0 * n ** 3, 3.0 * n * n * 2
for _ in range(20):
    torch.matmul(a, b, out=c)  # warm-up: cuBLAS picks its kernel, clocks rise

# 1. GEMM, kernel_timer with its work.
def timed_gemm():
    with client.kernel_timer("roofline_gemm_bf16", flops=gemm_flops, bytes=gemm_bytes, dtype="bf16"):
        torch.matmul(a, b, out=c)

iters = 4000
seconds, start_ns, end_ns = timed_loop(timed_gemm, iters)
program_tflops = iters * gemm_flops / seconds / 1e12
client.flush(timeout=120)
time.sleep(1.5)  # the sampler's passes covering the loop's end
rows = {k["name"]: k for k in get(f"/api/v1/kernels?from={start_ns - 10**9}&to={end_ns + 10**9}")["kernels"]}
row = rows["roofline_gemm_bf16"]
err = row["achieved_tflops"] / program_tflops - 1
check("gemm_kernel_timer_tflops_within_2pct", abs(err) <= 0.02, perfscope_tflops=row["achieved_tflops"],
      program_tflops=program_tflops, error=err, executions=row["count"], loop_seconds=seconds)
place = row["roofline"][0]
check("gemm_on_the_roofline_compute_bound", place.get("bound") == "compute", roofline=place)
gpm, samples = series_mean("gpu_tensor_estimated_flops_per_second", start_ns + 500_000_000, end_ns - 200_000_000)
activity, _ = series_mean("gpu_tensor_activity_ratio", start_ns + 500_000_000, end_ns - 200_000_000)
sm_clock, _ = series_mean("gpu_clock_hertz", start_ns + 500_000_000, end_ns - 200_000_000, "&clock=sm")
results["gemm_gpm_estimate"] = {"tflops": gpm / 1e12 if gpm else None, "samples": samples,
                                "error_vs_program": (gpm / 1e12 / program_tflops - 1) if gpm else None,
                                "tensor_activity": activity, "sm_clock_mhz": sm_clock / 1e6 if sm_clock else None,
                                "note": "tensor-pipe activity x BF16 dense peak x SM clock / max SM clock, mean over "
                                        "the loop's seconds"}
print("GPM estimate", json.dumps(results["gemm_gpm_estimate"]), flush=True)
analysis = get(f"/api/v1/analysis?from={start_ns}&to={end_ns}")
results["gemm_devices"] = analysis["devices"]
results["gemm_device_rule"] = next(f for f in analysis["bottlenecks"] if f["id"] == "device_below_minimum")
checks = {c["figure"]: c for c in analysis["devices"][0]["checks"]}
check("device_target_checks_present", "tflops" in checks and checks["tflops"]["achieved"] is not None,
      tflops_check=checks.get("tflops"))

# 2. The same loop under torch.profiler with FLOPs, imported.
from torch.profiler import ProfilerActivity, profile  # noqa: E402

prof_iters = 300
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_flops=True, record_shapes=True) as prof:
    prof_seconds, _, _ = timed_loop(lambda: torch.matmul(a, b, out=c), prof_iters)
trace = os.path.join(report, "gemm_profile.json")
prof.export_chrome_trace(trace)
program_prof_tflops = prof_iters * gemm_flops / prof_seconds / 1e12
imported = subprocess.run([bin_path, "import", trace, "--name", "roofline-import", "--server", url],
                          capture_output=True, text=True, timeout=600)
print(imported.stdout, imported.stderr, flush=True)
krows = get("/api/v1/kernels?run=roofline-import")["kernels"]
gemm_row = max(krows, key=lambda k: k["total_ms"])
err = (gemm_row["achieved_tflops"] or 0) / program_prof_tflops - 1
check("gemm_imported_trace_tflops_within_2pct", imported.returncode == 0 and abs(err) <= 0.02,
      kernel=gemm_row["name"][:120], perfscope_tflops=gemm_row["achieved_tflops"], program_tflops=program_prof_tflops,
      error=err, executions=gemm_row["count"], dtypes=gemm_row["dtypes"],
      arithmetic_intensity=gemm_row["arithmetic_intensity"], import_output=imported.stdout.strip())
check("imported_gemm_bf16_least_traffic", gemm_row["dtypes"] == ["bf16"] and
      abs(gemm_row["arithmetic_intensity"] - gemm_flops / gemm_bytes) < 1e-6 * gemm_flops / gemm_bytes,
      arithmetic_intensity=gemm_row["arithmetic_intensity"], expected=gemm_flops / gemm_bytes)
os.remove(trace)

# 3. Streaming: y = x + 1 over 1 GiB of fp32, 2 GiB moved per call.
x = torch.randn(1 << 28, device="cuda", dtype=torch.float32)
y = torch.empty_like(x)
stream_bytes = 2.0 * x.numel() * 4
for _ in range(20):
    torch.add(x, 1.0, out=y)

def timed_stream():
    with client.kernel_timer("roofline_stream_add", bytes=stream_bytes, flops=float(x.numel()), dtype="fp32"):
        torch.add(x, 1.0, out=y)

iters = 8000
seconds, start_ns, end_ns = timed_loop(timed_stream, iters)
program_gbps = iters * stream_bytes / seconds / 1e9
client.flush(timeout=120)
time.sleep(1.5)
rows = {k["name"]: k for k in get(f"/api/v1/kernels?from={start_ns - 10**9}&to={end_ns + 10**9}")["kernels"]}
row = rows["roofline_stream_add"]
err = row["achieved_gb_per_second"] / program_gbps - 1
check("stream_kernel_timer_gbps_within_2pct", abs(err) <= 0.02, perfscope_gb_per_second=row["achieved_gb_per_second"],
      program_gb_per_second=program_gbps, error=err, executions=row["count"], loop_seconds=seconds)
place = row["roofline"][0]
check("stream_on_the_roofline_memory_bound", place.get("bound") == "memory", roofline=place)
gpm, samples = series_mean("gpu_dram_bandwidth_bytes_per_second", start_ns + 500_000_000, end_ns - 200_000_000)
results["stream_gpm_dram"] = {"gb_per_second": gpm / 1e9 if gpm else None, "samples": samples,
                              "error_vs_program": (gpm / 1e9 / program_gbps - 1) if gpm else None,
                              "note": "GPM DRAM bandwidth utilization x peak (max memory clock x bus width)"}
print("GPM DRAM", json.dumps(results["stream_gpm_dram"]), flush=True)
del x, y
client.close()

# 4. A small with_flops trace of matrix ops for the CI fixtures.
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_flops=True, record_shapes=True) as prof:
    p = torch.randn(256, 512, device="cuda", dtype=torch.bfloat16)
    q = torch.randn(512, 128, device="cuda", dtype=torch.bfloat16)
    lin = torch.nn.Linear(512, 64, device="cuda", dtype=torch.float16)
    h = torch.randn(32, 512, device="cuda", dtype=torch.float16)
    ba = torch.randn(4, 64, 32, device="cuda", dtype=torch.bfloat16)
    bb = torch.randn(4, 32, 16, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        torch.mm(p, q)
        lin(h)
        torch.bmm(ba, bb)
    torch.cuda.synchronize()
prof.export_chrome_trace(os.path.join(report, "matmul_flops_trace.json"))

with open(os.path.join(report, "roofline_report.json"), "w") as f:
    json.dump(results, f, indent=1)
failed = [c["name"] for c in results["checks"] if not c["ok"]]
print("FAILED: " + ", ".join(failed) if failed else "all passed", flush=True)
sys.exit(1 if failed else 0)
