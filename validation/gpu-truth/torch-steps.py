#!/usr/bin/env python3
"""Ground truth for whole steps: a GPT-style model trained with stock PyTorch on one real GPU.

For each configuration it prints one JSON line with the median step time (wall clock around
forward + backward + optimizer step + synchronize), the sum of device kernel time in one profiled
step (so the host-bound share is visible), the kernel count, and per-op eager host overhead.
Run on a GPU machine: python3 torch-steps.py > torch-steps.jsonl
"""
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile


class Block(nn.Module):
    def __init__(self, d, heads, ffn):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, ffn)
        self.fc2 = nn.Linear(ffn, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, -1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, d, layers, heads, seq):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads, 4 * d) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx, tgt):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), tgt.view(-1))


CONFIGS = [
    # name, vocab, d, layers, heads, seq, batch
    ("gpt2-124m", 50304, 768, 12, 12, 1024, 8),
    ("gpt2-124m-b1", 50304, 768, 12, 12, 1024, 1),
    ("gpt2-350m", 50304, 1024, 24, 16, 1024, 4),
    ("tiny-launch-bound", 256, 256, 4, 4, 128, 2),
]


def run(name, vocab, d, layers, heads, seq, batch, steps=20):
    torch.manual_seed(0)
    model = GPT(vocab, d, layers, heads, seq).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    idx = torch.randint(0, vocab, (batch, seq), device="cuda")
    tgt = torch.randint(0, vocab, (batch, seq), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(idx, tgt)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    times.sort()
    # Host time alone: the same step's Python+dispatch+launch cost, measured as the CPU time of
    # the launching thread (the GPU runs ahead asynchronously).
    cpu0 = time.thread_time()
    step()
    cpu1 = time.thread_time()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    kern = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    dev_us = sum(e.device_time for e in kern)
    params = sum(p.numel() for p in model.parameters())
    tokens = batch * seq
    flops = 6 * params * tokens + 12 * layers * d * seq * tokens / 2
    med = times[len(times) // 2]
    print(json.dumps({"kind": "torch-step", "config": name, "vocab": vocab, "d": d,
                      "layers": layers, "heads": heads, "seq": seq, "batch": batch,
                      "params": params, "step_ms_median": round(med * 1e3, 3),
                      "step_ms_min": round(times[0] * 1e3, 3),
                      "host_cpu_ms_one_step": round((cpu1 - cpu0) * 1e3, 3),
                      "kernel_ms_sum": round(dev_us / 1e3, 3), "kernels": len(kern),
                      "tflops_per_s": round(flops / med / 1e12, 1)}), flush=True)
    del model, opt
    torch.cuda.empty_cache()


def eager_overhead():
    # Host cost of one eager op on a tiny tensor (dispatch + launch), CPU wall per call.
    x = torch.randn(16, device="cuda")
    y = torch.randn(16, device="cuda")
    w = torch.randn(16, 16, device="cuda")
    ops = {"add": lambda: x + y, "mul_": lambda: x.mul_(1.0), "matmul16": lambda: w @ w,
           "sum": lambda: x.sum(), "empty": lambda: torch.empty(16, device="cuda"),
           "F.linear16": lambda: F.linear(x, w)}
    for name, f in ops.items():
        for _ in range(200):
            f()
        torch.cuda.synchronize()
        best = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(1000):
                f()
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            best.append((t1 - t0) / 1000 * 1e6)
        best.sort()
        print(json.dumps({"kind": "torch-eager-op", "op": name, "us_median": round(best[2], 3)}),
              flush=True)


if __name__ == "__main__":
    p = torch.cuda.get_device_properties(0)
    print(json.dumps({"kind": "device", "name": p.name, "torch": torch.__version__,
                      "date": time.strftime("%Y-%m-%d")}), flush=True)
    eager_overhead()
    for c in CONFIGS:
        run(*c)
