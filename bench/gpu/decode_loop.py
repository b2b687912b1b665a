"""Launch-bound LLM decoding: a small decoder-only transformer (bf16, random weights, KV
cache) generating tokens one at a time at batch 1. Each step is a few hundred kernels of a few
microseconds, so the host's launch path sets the pace, as in real small-batch decoding.

Prints one JSON line: the timed part's wall time (warm-up excluded) and the kernels it launched
when --count-kernels asks torch.profiler to count them (a separate run: counting costs time).
--profiler wraps the timed part in torch.profiler with CUDA activity only, as a user comparing
tools would.
Usage: decode_loop.py [--layers 12] [--dim 512] [--tokens 48] [--batch 1] [--passes 3]
                      [--profiler] [--count-kernels] [--seconds S: loop passes for S seconds]
                      [--trace FILE: with --profiler, its Chrome trace]
                      [--pass-times: each pass ends with a synchronize; its wall-clock
                       bounds are listed as pass_ns]
The JSON line also gives the timed part's wall-clock bounds (start_ns, end_ns).
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F


class Layer(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.out = torch.nn.Linear(dim, dim)
        self.ln2 = torch.nn.LayerNorm(dim)
        self.up = torch.nn.Linear(dim, 4 * dim)
        self.down = torch.nn.Linear(4 * dim, dim)

    def forward(self, x, cache_k, cache_v, pos):
        b, _, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).view(b, 1, 3, h, d // h).unbind(2)
        cache_k[:, pos] = k[:, 0]
        cache_v[:, pos] = v[:, 0]
        keys, values = cache_k[:, : pos + 1], cache_v[:, : pos + 1]
        att = F.scaled_dot_product_attention(q.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2))
        x = x + self.out(att.transpose(1, 2).reshape(b, 1, d))
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class Decoder(torch.nn.Module):
    def __init__(self, layers, dim, heads, vocab):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.layers = torch.nn.ModuleList(Layer(dim, heads) for _ in range(layers))
        self.ln = torch.nn.LayerNorm(dim)
        self.head = torch.nn.Linear(dim, vocab, bias=False)

    @torch.no_grad()
    def generate(self, tokens, steps, caches):
        for pos in range(steps):
            x = self.embed(tokens)
            for layer, (ck, cv) in zip(self.layers, caches):
                x = layer(x, ck, cv, pos)
            tokens = self.head(self.ln(x)).argmax(-1)
        return tokens


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--dim", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--tokens", type=int, default=48)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--passes", type=int, default=3)
    p.add_argument("--seconds", type=float, default=0)
    p.add_argument("--profiler", action="store_true")
    p.add_argument("--count-kernels", action="store_true")
    p.add_argument("--trace")
    p.add_argument("--pass-times", action="store_true")
    a = p.parse_args()
    torch.manual_seed(0)
    dev = "cuda"
    model = Decoder(a.layers, a.dim, a.heads, a.vocab).to(dev, torch.bfloat16).eval()
    hd = a.dim // a.heads
    caches = [(torch.zeros(a.batch, a.tokens, a.heads, hd, device=dev, dtype=torch.bfloat16),
               torch.zeros(a.batch, a.tokens, a.heads, hd, device=dev, dtype=torch.bfloat16)) for _ in range(a.layers)]
    start_tokens = torch.zeros(a.batch, 1, dtype=torch.long, device=dev)
    model.generate(start_tokens, a.tokens, caches)  # warm-up: libraries loaded, kernels chosen
    torch.cuda.synchronize()

    bounds = {}
    pass_ns = []

    def timed():
        bounds["start_ns"] = time.time_ns()
        t0 = time.perf_counter()
        passes = 0
        while True:
            started = time.time_ns()
            model.generate(start_tokens, a.tokens, caches)
            if a.pass_times:
                torch.cuda.synchronize()
                pass_ns.append([started, time.time_ns()])
            passes += 1
            if a.seconds <= 0 and passes >= a.passes:
                break
            if a.seconds > 0 and time.perf_counter() - t0 >= a.seconds:
                break
        torch.cuda.synchronize()
        bounds["end_ns"] = time.time_ns()
        return time.perf_counter() - t0, passes

    kernels = None
    if a.profiler or a.count_kernels:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            s, passes = timed()
        if a.count_kernels:
            kernels = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
        if a.trace:
            prof.export_chrome_trace(a.trace)
    else:
        s, passes = timed()
    extra = {"pass_ns": pass_ns} if a.pass_times else {}
    print(json.dumps({"timed_s": s, "passes": passes, "tokens": a.tokens * passes, "kernels": kernels,
                      **bounds, **extra}), flush=True)


if __name__ == "__main__":
    main()
