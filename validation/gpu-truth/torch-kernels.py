#!/usr/bin/env python3
"""Ground truth for eidolon's kernel pricing: the kernels stock PyTorch launches for the layers of a
transformer training step, each timed on a real GPU with the PyTorch profiler (Kineto), with the
kernel's name, grid, block and device time.

Prints JSON Lines on stdout, one object per operation:
  {"kind": "torch-op", "family": ..., "op": ..., "shape": ..., "dtype": ..., "bytes": logical bytes
   read+written, "flops": ..., "us": device time of all its kernels per call,
   "kernels": [{"name", "grid", "block", "us", "count"}]}
Run on a GPU machine: python3 torch-kernels.py > torch-kernels.jsonl
"""
import json
import math
import sys
import tempfile
import time

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

DEV = "cuda"
BF16 = torch.bfloat16


def profile_op(fn, iters=5, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        trace = json.load(open(f.name))
    kernels = {}
    total = 0.0
    for ev in trace.get("traceEvents", []):
        cat = ev.get("cat", "")
        if cat not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        args = ev.get("args", {})
        key = (ev["name"], tuple(args.get("grid", [])), tuple(args.get("block", [])))
        k = kernels.setdefault(key, {"name": ev["name"], "cat": cat, "grid": args.get("grid"),
                                     "block": args.get("block"),
                                     "regs": args.get("registers per thread"),
                                     "smem": args.get("shared memory"), "durs": []})
        k["durs"].append(float(ev["dur"]))
        total += float(ev["dur"])
    out = []
    for k in kernels.values():
        d = sorted(k.pop("durs"))
        k["count"] = len(d) / iters
        k["us_median"] = d[len(d) // 2]
        k["us"] = sum(d) / iters
        out.append(k)
    out.sort(key=lambda k: -k["us"])
    return total / iters, out


def emit(family, op, shape, dtype, nbytes, flops, fn, **extra):
    try:
        us, kernels = profile_op(fn)
    except Exception as e:  # an op this torch build lacks: say so, go on
        print(json.dumps({"kind": "note", "text": f"{family}/{op} {shape}: {e!r}"[:400]}), flush=True)
        torch.cuda.empty_cache()
        return
    rec = {"kind": "torch-op", "family": family, "op": op, "shape": shape, "dtype": str(dtype),
           "bytes": nbytes, "flops": flops, "us": round(us, 3), "kernels": kernels}
    rec.update(extra)
    print(json.dumps(rec), flush=True)


def nb(*ts):
    return sum(t.numel() * t.element_size() for t in ts)


def elementwise():
    for numel in [1 << 12, 1 << 16, 1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28]:
        for dt in [BF16, torch.float32]:
            a = torch.randn(numel, device=DEV, dtype=dt)
            b = torch.randn(numel, device=DEV, dtype=dt)
            es = a.element_size()
            emit("elementwise", "add", [numel], dt, 3 * numel * es, numel, lambda: a + b)
            emit("elementwise", "mul_", [numel], dt, 2 * numel * es, numel, lambda: a.mul_(1.0001))
            emit("elementwise", "silu", [numel], dt, 2 * numel * es, 4 * numel, lambda: F.silu(a))
            emit("elementwise", "gelu_tanh", [numel], dt, 2 * numel * es, 10 * numel,
                 lambda: F.gelu(a, approximate="tanh"))
            emit("elementwise", "swiglu", [numel], dt, 3 * numel * es, 5 * numel,
                 lambda: F.silu(a) * b)
            emit("elementwise", "zero_", [numel], dt, numel * es, 0, lambda: b.zero_())
            emit("copy", "clone", [numel], dt, 2 * numel * es, 0, lambda: a.clone())
            other = torch.float32 if dt == BF16 else BF16
            emit("copy", "cast-to-" + str(other), [numel], dt,
                 numel * es + numel * torch.tensor([], dtype=other).element_size(), 0,
                 lambda: a.to(other))
            del a, b
    for rows, cols in [(8192, 4096), (4096, 14336), (2048, 128256)]:
        x = torch.randn(rows, cols, device=DEV, dtype=BF16)
        emit("copy", "transpose-contiguous", [rows, cols], BF16, 2 * nb(x), 0,
             lambda: x.t().contiguous())
        emit("reduce", "sum-last", [rows, cols], BF16, nb(x), rows * cols, lambda: x.sum(-1))
        emit("reduce", "sum-first", [rows, cols], BF16, nb(x), rows * cols, lambda: x.sum(0))
        emit("reduce", "amax-all", [rows, cols], BF16, nb(x), rows * cols, lambda: x.abs().amax())
        emit("reduce", "float-sum-all", [rows, cols], BF16, nb(x), rows * cols,
             lambda: x.float().sum())


def norms():
    for tokens, hidden in [(2048, 4096), (8192, 4096), (16384, 4096), (8192, 8192), (4096, 12288),
                           (8192, 256), (32768, 1024)]:
        x = torch.randn(tokens, hidden, device=DEV, dtype=BF16, requires_grad=True)
        w = torch.ones(hidden, device=DEV, dtype=BF16, requires_grad=True)
        bias = torch.zeros(hidden, device=DEV, dtype=BF16, requires_grad=True)
        g = torch.randn(tokens, hidden, device=DEV, dtype=BF16)
        n = nb(x)
        emit("norm", "layer_norm.fwd", [tokens, hidden], BF16, 2 * n, 8 * tokens * hidden,
             lambda: F.layer_norm(x, (hidden,), w, bias))
        y = F.layer_norm(x, (hidden,), w, bias)
        emit("norm", "layer_norm.bwd", [tokens, hidden], BF16, 3 * n, 16 * tokens * hidden,
             lambda: torch.autograd.grad(y, (x, w, bias), g, retain_graph=True))
        if hasattr(F, "rms_norm"):
            emit("norm", "rms_norm.fwd", [tokens, hidden], BF16, 2 * n, 4 * tokens * hidden,
                 lambda: F.rms_norm(x, (hidden,), w))
            y2 = F.rms_norm(x, (hidden,), w)
            emit("norm", "rms_norm.bwd", [tokens, hidden], BF16, 3 * n, 10 * tokens * hidden,
                 lambda: torch.autograd.grad(y2, (x, w), g, retain_graph=True))
        del x, g


def softmax_ce():
    for rows, cols in [(8192, 4096), (32 * 2048, 2048), (16 * 4096, 4096)]:
        x = torch.randn(rows, cols, device=DEV, dtype=BF16, requires_grad=True)
        g = torch.randn(rows, cols, device=DEV, dtype=BF16)
        emit("softmax", "softmax.fwd", [rows, cols], BF16, 2 * nb(x), 5 * rows * cols,
             lambda: torch.softmax(x, -1))
        y = torch.softmax(x, -1)
        emit("softmax", "softmax.bwd", [rows, cols], BF16, 3 * nb(x), 4 * rows * cols,
             lambda: torch.autograd.grad(y, x, g, retain_graph=True))
        del x, g, y
    for tokens, vocab in [(2048, 128256), (4096, 128256), (8192, 50304), (8192, 32000), (512, 256)]:
        logits = torch.randn(tokens, vocab, device=DEV, dtype=BF16, requires_grad=True)
        tgt = torch.randint(0, vocab, (tokens,), device=DEV)
        emit("cross_entropy", "cross_entropy.fwd", [tokens, vocab], BF16, nb(logits),
             6 * tokens * vocab, lambda: F.cross_entropy(logits, tgt))
        emit("cross_entropy", "cross_entropy.fwd+bwd", [tokens, vocab], BF16, 3 * nb(logits),
             10 * tokens * vocab,
             lambda: torch.autograd.grad(F.cross_entropy(logits.float(), tgt), logits))
        del logits


def embedding_rotary():
    for vocab, hidden, tokens in [(128256, 4096, 8192), (50304, 12288, 2048), (256, 256, 1024)]:
        table = torch.randn(vocab, hidden, device=DEV, dtype=BF16, requires_grad=True)
        idx = torch.randint(0, vocab, (tokens,), device=DEV)
        g = torch.randn(tokens, hidden, device=DEV, dtype=BF16)
        emit("embedding", "embedding.fwd", [vocab, hidden, tokens], BF16, 2 * tokens * hidden * 2,
             0, lambda: F.embedding(idx, table))
        y = F.embedding(idx, table)
        emit("embedding", "embedding.bwd", [vocab, hidden, tokens], BF16,
             tokens * hidden * 2 + vocab * hidden * 2, tokens * hidden,
             lambda: torch.autograd.grad(y, table, g, retain_graph=True))
        del table, g, y
    for b, s, h, d in [(2, 4096, 32, 128), (1, 8192, 8, 128), (8, 2048, 64, 128)]:
        x = torch.randn(b, s, h, d, device=DEV, dtype=BF16)
        cos = torch.randn(s, 1, d, device=DEV, dtype=BF16)
        sin = torch.randn(s, 1, d, device=DEV, dtype=BF16)

        def rope():
            x1, x2 = x.chunk(2, -1)
            rot = torch.cat((-x2, x1), -1)
            return x * cos + rot * sin

        emit("rotary", "rotary(torch ops)", [b, s, h, d], BF16, 2 * nb(x), 3 * x.numel(), rope)
        xc = torch.view_as_complex(x.float().reshape(b, s, h, d // 2, 2))
        fc = torch.polar(torch.ones(s, 1, d // 2, device=DEV), torch.randn(s, 1, d // 2, device=DEV))
        emit("rotary", "rotary(complex)", [b, s, h, d], torch.float32, 2 * xc.numel() * 8,
             6 * xc.numel(), lambda: torch.view_as_real(xc * fc))


def optimizer():
    for total, shape in [(512 * 1024 * 1024, (4096, 4096)), (64 * 1024 * 1024, (4096, 1024)),
                         (8 * 1024 * 1024, (1024, 1024))]:
        count = total // (shape[0] * shape[1])
        params = [torch.nn.Parameter(torch.randn(shape, device=DEV)) for _ in range(count)]
        for p in params:
            p.grad = torch.randn_like(p)
        nparam = total
        for mode in ["fused", "foreach"]:
            opt = torch.optim.AdamW(params, lr=1e-4, fused=(mode == "fused"),
                                    foreach=(mode == "foreach"))
            # param, grad, m, v read; param, m, v written (fp32)
            emit("optimizer", f"adamw.{mode}", [count, *shape], torch.float32, 7 * 4 * nparam,
                 12 * nparam, opt.step, params=nparam)
            del opt
        emit("optimizer", "clip_grad_norm_", [count, *shape], torch.float32, 3 * 4 * nparam,
             3 * nparam, lambda: torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True),
             params=nparam)
        emit("optimizer", "zero_grad(set_to_zero)", [count, *shape], torch.float32, 4 * nparam, 0,
             lambda: torch._foreach_zero_([p.grad for p in params]), params=nparam)
        del params
        torch.cuda.empty_cache()


def attention():
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
                ("efficient", SDPBackend.EFFICIENT_ATTENTION)]
    for hd in [64, 128, 256]:
        for seq in [512, 1024, 2048, 4096, 8192, 16384]:
            heads = 2048 // hd if hd <= 128 else 8
            batch = max(1, 16384 // seq)
            for causal in [False, True]:
                for kvh in sorted({heads, max(1, heads // 4)}, reverse=True):
                    if kvh != heads and not (hd == 128 and seq in (2048, 8192)):
                        continue
                    q = torch.randn(batch, heads, seq, hd, device=DEV, dtype=BF16, requires_grad=True)
                    k = torch.randn(batch, kvh, seq, hd, device=DEV, dtype=BF16, requires_grad=True)
                    v = torch.randn(batch, kvh, seq, hd, device=DEV, dtype=BF16, requires_grad=True)
                    g = torch.randn_like(q)
                    # FLOPs as FlashAttention's benchmark counts them: 4*b*h*s^2*d forward
                    # (halved when causal), backward 2.5x forward.
                    fwd_flops = 4 * batch * heads * seq * seq * hd / (2 if causal else 1)
                    gqa = kvh != heads
                    for name, be in backends:
                        if hd == 256 and name == "efficient":
                            continue

                        def fwd():
                            with sdpa_kernel(be):
                                return F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                                       enable_gqa=gqa)

                        shape = [batch, heads, kvh, seq, hd]
                        try:
                            with sdpa_kernel(be):
                                o = fwd()
                        except Exception as e:
                            print(json.dumps({"kind": "note", "text": f"attn {name} {shape} causal={causal}: {e!r}"[:300]}), flush=True)
                            continue
                        emit("attention", f"sdpa-{name}.fwd", shape, BF16, nb(q, k, v, o), fwd_flops,
                             fwd, causal=causal, backend=name)

                        def bwd():
                            with sdpa_kernel(be):
                                return torch.autograd.grad(o, (q, k, v), g, retain_graph=True)

                        emit("attention", f"sdpa-{name}.bwd", shape, BF16, 2 * nb(q, k, v, o),
                             2.5 * fwd_flops, bwd, causal=causal, backend=name)
                        del o
                    del q, k, v, g
                    torch.cuda.empty_cache()


def linear_layers():
    # A framework's linear layers: which cuBLAS kernels PyTorch picks (names, grids) for the
    # shapes of a transformer, forward and backward, with bias and without.
    for tokens, inf, outf in [(8192, 4096, 6144), (8192, 4096, 14336), (8192, 14336, 4096),
                              (4096, 4096, 128256), (2048, 12288, 9216), (1024, 256, 768)]:
        x = torch.randn(tokens, inf, device=DEV, dtype=BF16, requires_grad=True)
        lin = torch.nn.Linear(inf, outf, bias=False, device=DEV, dtype=BF16)
        g = torch.randn(tokens, outf, device=DEV, dtype=BF16)
        f = 2 * tokens * inf * outf
        emit("gemm", "linear.fwd", [tokens, inf, outf], BF16, nb(x, lin.weight, g), f, lambda: lin(x))
        y = lin(x)
        emit("gemm", "linear.bwd", [tokens, inf, outf], BF16, 2 * nb(x, lin.weight, g), 2 * f,
             lambda: torch.autograd.grad(y, (x, lin.weight), g, retain_graph=True))
        linb = torch.nn.Linear(inf, outf, bias=True, device=DEV, dtype=BF16)
        emit("gemm", "linear+bias.fwd", [tokens, inf, outf], BF16, nb(x, linb.weight, g), f,
             lambda: linb(x))
        del x, lin, linb, g, y
        torch.cuda.empty_cache()


def main():
    only = sys.argv[1:] or ["elementwise", "norms", "softmax_ce", "embedding_rotary", "optimizer",
                            "linear_layers", "attention"]
    p = torch.cuda.get_device_properties(0)
    print(json.dumps({"kind": "device", "name": p.name, "sms": p.multi_processor_count,
                      "torch": torch.__version__, "cuda": torch.version.cuda,
                      "cudnn": torch.backends.cudnn.version(), "date": time.strftime("%Y-%m-%d")}),
          flush=True)
    for part in only:
        t0 = time.time()
        globals()[part]()
        print(json.dumps({"kind": "note", "text": f"{part} took {time.time() - t0:.1f} s"}), flush=True)


if __name__ == "__main__":
    main()
