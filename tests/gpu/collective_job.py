"""A two-rank (or n-rank) data-parallel step loop for the collective analysis: each step every
rank multiplies matrices, the rank given --extra-matmuls multiplies more, then all ranks
all-reduce a buffer. Timed on the GPU with CUDA events: the extra compute per step on the slow
rank, and each rank's whole compute per step (the slow rank's less the other's is what the
analysis should find as the straggler's extra compute) and every all-reduce (for its
algorithm and bus bandwidth the nccl-tests way). With --overlap the all-reduce runs beside the
matmuls instead of after them. With --sweep-mb it only all-reduces, back to back, each size
for --seconds: timed the nccl-tests way (CUDA events around the whole loop, divided by the
iterations), with the wall-clock window of each size for the NVLink series. Start it with
torchrun; each rank writes OUT_DIR/rank<R>.json.
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--matmuls", type=int, default=12)
    p.add_argument("--extra-matmuls", type=int, default=0, help="more matmuls per step on --slow-rank")
    p.add_argument("--slow-rank", type=int, default=1)
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--allreduce-mb", type=int, default=64)
    p.add_argument("--torch-profiler", action="store_true",
                   help="run the steps under torch.profiler (CPU and CUDA activities), for its tracing cost")
    p.add_argument("--overlap", action="store_true",
                   help="start each step's all-reduce (of the step before's buffer) asynchronously, before the "
                        "step's matmuls, and wait for it after them: communication beside compute")
    p.add_argument("--sweep-mb", default="", help="comma-separated all-reduce sizes in MiB: a pure all-reduce loop")
    p.add_argument("--seconds", type=float, default=3.0, help="how long each size of --sweep-mb runs")
    a = p.parse_args()

    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    if a.sweep_mb:
        return sweep(a, rank, world, local)
    x = torch.randn(a.size, a.size, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(a.size, a.size, device="cuda", dtype=torch.bfloat16)
    buf = torch.ones(a.allreduce_mb * 1024 * 1024 // 4, device="cuda", dtype=torch.float32)
    extra = a.extra_matmuls if rank == a.slow_rank else 0
    extra_ms, compute_ms, allreduce_ms, step_wall_ms = [], [], [], []
    profiler = None
    if a.torch_profiler:
        from torch.profiler import ProfilerActivity, profile
        profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        profiler.__enter__()
    for step in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        s0 = torch.cuda.Event(enable_timing=True)
        s0.record()
        pending = dist.all_reduce(buf, async_op=True) if a.overlap else None  # on NCCL's own stream
        y = x
        for _ in range(a.matmuls):
            y = torch.mm(y, w)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(extra):
            y = torch.mm(y, w)
        e1.record()
        if pending is None:
            buf.add_(y[0, 0].float() * 0)  # the all-reduce depends on the step's compute
        s1 = torch.cuda.Event(enable_timing=True)
        s1.record()
        c0, c1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        c0.record()
        if pending is not None:
            pending.wait()  # the default stream waits for the all-reduce that ran beside the matmuls
            buf.add_(y[0, 0].float() * 0)  # the next step's all-reduce depends on this step's compute
        else:
            dist.all_reduce(buf)
        c1.record()
        torch.cuda.synchronize()
        if step >= a.warmup:
            step_wall_ms.append((time.perf_counter() - t0) * 1e3)
            extra_ms.append(e0.elapsed_time(e1))
            compute_ms.append(s0.elapsed_time(s1))
            allreduce_ms.append(c0.elapsed_time(c1))
    if profiler is not None:
        profiler.__exit__(None, None, None)
    dist.barrier()
    nbytes = buf.numel() * buf.element_size()
    # nccl-tests: algbw = bytes / time; all-reduce busbw = algbw * 2(n-1)/n.
    med = statistics.median(allreduce_ms)
    out = {
        "rank": rank, "world_size": world, "device": local, "steps": a.steps, "extra_matmuls": extra,
        "extra_ms_median": statistics.median(extra_ms), "extra_ms_mean": statistics.mean(extra_ms),
        # The whole compute of a step on this rank's GPU, from after the last all-reduce was
        # enqueued to before the next: the slow rank's median less the other's is the extra
        # compute per step the analysis should find.
        "compute_ms_median": statistics.median(compute_ms),
        "step_wall_ms_median": statistics.median(step_wall_ms), "step_wall_ms_min": min(step_wall_ms),
        "overlap": a.overlap, "torch_profiler": a.torch_profiler,
        "allreduce_bytes": nbytes, "allreduce_ms_median": med, "allreduce_ms_min": min(allreduce_ms),
        "algbw_gb_per_s": nbytes / (med / 1e3) / 1e9,
        "busbw_gb_per_s": nbytes / (med / 1e3) / 1e9 * 2 * (world - 1) / world,
        "nccl_version": ".".join(map(str, torch.cuda.nccl.version())), "torch": torch.__version__,
        "wall_time_s": time.time(),
    }
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, f"rank{rank}.json"), "w") as f:
        json.dump(out, f, indent=1)
    dist.destroy_process_group()


def sweep(a, rank, world, local):
    sizes = []
    for mb in [int(x) for x in a.sweep_mb.split(",")]:
        buf = torch.ones(mb * 1024 * 1024 // 4, device="cuda", dtype=torch.float32)
        for _ in range(5):
            dist.all_reduce(buf)
        torch.cuda.synchronize()
        # As many iterations as fit in --seconds, agreed by all ranks (rank 0's estimate).
        t = time.perf_counter()
        for _ in range(5):
            dist.all_reduce(buf)
        torch.cuda.synchronize()
        per = torch.tensor([(time.perf_counter() - t) / 5], device="cuda")
        dist.broadcast(per, 0)
        iters = max(10, int(a.seconds / per.item()))
        dist.barrier()
        torch.cuda.synchronize()
        wall_start = time.time()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(iters):
            dist.all_reduce(buf)
        e1.record()
        torch.cuda.synchronize()
        wall_end = time.time()
        ms_per_op = e0.elapsed_time(e1) / iters
        nbytes = buf.numel() * buf.element_size()
        algbw = nbytes / (ms_per_op / 1e3) / 1e9
        sizes.append({
            "bytes": nbytes, "iterations": iters, "ms_per_op": ms_per_op, "algbw_gb_per_s": algbw,
            "busbw_gb_per_s": algbw * 2 * (world - 1) / world,
            # What each GPU sends over its links per second in a ring all-reduce: 2(n-1)/n of
            # the buffer per operation.
            "sent_gb_per_s": nbytes * 2 * (world - 1) / world * iters / (wall_end - wall_start) / 1e9,
            "wall_start_ns": int(wall_start * 1e9), "wall_end_ns": int(wall_end * 1e9),
        })
        del buf
        torch.cuda.empty_cache()
    out = {"rank": rank, "world_size": world, "device": local, "sweep": sizes,
           "nccl_version": ".".join(map(str, torch.cuda.nccl.version())), "torch": torch.__version__}
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, f"rank{rank}.json"), "w") as f:
        json.dump(out, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
