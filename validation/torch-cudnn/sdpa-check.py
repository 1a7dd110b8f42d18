"""cuDNN attention through stock PyTorch on eidolon's libcudnn.so.9, against the real H100.

Runs every `sdpa-cudnn.fwd` / `sdpa-cudnn.bwd` row of a torch-kernels.jsonl measurement
(validation/measurements/h100-2026-11-24/) through torch.nn.functional.scaled_dot_product_attention
with the cuDNN backend forced, under eidolon's libraries, and prints the simulated device time
(CUDA events, virtual) next to the measured one. Run it as README.md in this folder says.
"""
import json
import statistics
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

ATTENTION = torch.nn.functional.scaled_dot_product_attention


def simulated_us(row):
    """Virtual device time of the row's forward, or of its backward alone, in us."""
    b, hq, hk, s, d = row["shape"]
    dtype = getattr(torch, row["dtype"].split(".")[1])
    q, k, v = (torch.empty(b, h, s, d, device="cuda", dtype=dtype, requires_grad=True)
               for h in (hq, hk, hk))
    options = dict(is_causal=row["causal"], enable_gqa=hq != hk)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        out = ATTENTION(q, k, v, **options)  # builds and caches the plans
        if row["op"].endswith("fwd"):
            start.record()
            ATTENTION(q, k, v, **options)
            stop.record()
        else:
            out = ATTENTION(q, k, v, **options)
            grad = torch.ones_like(out)
            start.record()
            out.backward(grad)
            stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) * 1e3


def main(path):
    rows = [json.loads(line) for line in open(path) if '"sdpa-cudnn' in line]
    print(f"{'op':15} {'b, hq, hkv, s, d':24} {'causal':6} {'H100 us':>9} {'eidolon us':>10} {'ratio':>6}")
    ratios = {}
    for row in rows:
        us = simulated_us(row)
        ratio = us / row["us"]
        ratios.setdefault((row["op"], row["shape"][4]), []).append(ratio)
        print(f"{row['op']:15} {str(row['shape']):24} {str(row['causal']):6} {row['us']:9.1f} "
              f"{us:10.1f} {ratio:6.3f}", flush=True)
    everything = [r for group in ratios.values() for r in group]
    for (op, hd), group in sorted(ratios.items()):
        print(f"{op} hd{hd}: {len(group)} rows, mean |eidolon/H100 - 1| = "
              f"{statistics.mean(abs(r - 1) for r in group):.3f}")
    print(f"all: {len(everything)} rows, mean |eidolon/H100 - 1| = "
          f"{statistics.mean(abs(r - 1) for r in everything):.3f}")


if __name__ == "__main__":
    main(sys.argv[1])
