"""A llama-style GPT trainer in plain PyTorch: DDP or FSDP2, bf16 autocast, activation checkpointing.

Nothing in it knows eidolon: on real GPUs it trains (on random tokens); under `eidolon run` the same
script runs on simulated H100s. Launch one process per GPU with torchrun's environment:

    torchrun --nproc-per-node 8 examples/pytorch/train_gpt.py --model llama3.2-1b --parallel fsdp
    build/bin/eidolon run --gpus 8 -- python examples/pytorch/train_gpt.py --model llama3.2-1b

Rank 0 prints per step, as torchtitan does: loss, peak memory, tokens/s per GPU, TFLOP/s, MFU and
step time; the step time is measured with time.perf_counter() after torch.cuda.synchronize().
"""

import argparse
import contextlib
import os
import resource
import statistics
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


@dataclass
class ModelConfig:
    layers: int
    dim: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    seq_len: int
    rope_theta: float = 5e5


# The shapes of examples/train-gpt's presets (its README), llama-style: RMSNorm, SwiGLU, RoPE, GQA.
PRESETS = {
    "llama3-8b": ModelConfig(32, 4096, 32, 8, 14336, 128256, 8192),
    "llama3.2-1b": ModelConfig(16, 2048, 32, 8, 8192, 128256, 8192),
    "small": ModelConfig(8, 1024, 16, 4, 4096, 32768, 2048, 1e4),
    "tiny": ModelConfig(4, 256, 4, 2, 768, 2048, 256, 1e4),
}

# Dense bf16 peak TFLOP/s by device name, for MFU (NVIDIA's datasheets).
PEAK_BF16_TFLOPS = {"H100 80GB HBM3": 989.4, "H100 PCIe": 756.0, "H200": 989.4, "A100": 312.0,
                    "B200": 2250.0}


def rope_tables(cfg, device):
    head_dim = cfg.dim // cfg.heads
    inv = 1.0 / (cfg.rope_theta ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    angles = torch.outer(torch.arange(cfg.seq_len, device=device).float(), inv)
    return angles.cos(), angles.sin()


def apply_rope(x, cos, sin):
    # x: (batch, heads, seq, head_dim); rotate pairs (first half, second half)
    x1, x2 = x.chunk(2, dim=-1)
    cos, sin = cos[: x.shape[-2]], sin[: x.shape[-2]]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = cfg.heads, cfg.kv_heads, cfg.dim // cfg.heads
        self.wq = nn.Linear(cfg.dim, cfg.heads * self.head_dim, bias=False)
        self.wk = nn.Linear(cfg.dim, cfg.kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(cfg.dim, cfg.kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(cfg.heads * self.head_dim, cfg.dim, bias=False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        q = self.wq(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.wo(out.transpose(1, 2).reshape(b, s, -1))


class FeedForward(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.w1 = nn.Linear(cfg.dim, cfg.ffn, bias=False)
        self.w3 = nn.Linear(cfg.dim, cfg.ffn, bias=False)
        self.w2 = nn.Linear(cfg.ffn, cfg.dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, cfg, activation_checkpointing):
        super().__init__()
        self.attention_norm = nn.RMSNorm(cfg.dim)
        self.attention = Attention(cfg)
        self.ffn_norm = nn.RMSNorm(cfg.dim)
        self.feed_forward = FeedForward(cfg)
        self.activation_checkpointing = activation_checkpointing

    def body(self, x, cos, sin):
        x = x + self.attention(self.attention_norm(x), cos, sin)
        return x + self.feed_forward(self.ffn_norm(x))

    def forward(self, x, cos, sin):
        if self.activation_checkpointing and self.training:
            return checkpoint(self.body, x, cos, sin, use_reentrant=False)
        return self.body(x, cos, sin)


class Transformer(nn.Module):
    def __init__(self, cfg, activation_checkpointing=False):
        super().__init__()
        self.cfg = cfg
        self.tok_embeddings = nn.Embedding(cfg.vocab, cfg.dim)
        self.layers = nn.ModuleList(Block(cfg, activation_checkpointing) for _ in range(cfg.layers))
        self.norm = nn.RMSNorm(cfg.dim)
        self.output = nn.Linear(cfg.dim, cfg.vocab, bias=False)
        self.rope = None

    def forward(self, tokens):
        if self.rope is None:
            self.rope = rope_tables(self.cfg, tokens.device)
        cos, sin = self.rope
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h, cos, sin)
        return self.output(self.norm(h))


def flops_per_token(cfg, params):
    """torchtitan's count: 6 N (N without the embedding) + 12 l h q t for attention."""
    head_dim = cfg.dim // cfg.heads
    return 6 * params + 12 * cfg.layers * cfg.heads * head_dim * cfg.seq_len


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny", choices=sorted(PRESETS))
    parser.add_argument("--parallel", default="fsdp", choices=["fsdp", "ddp"])
    parser.add_argument("--seq-len", type=int, help="tokens per sequence (default: the preset's)")
    parser.add_argument("--local-batch", type=int, default=1, help="sequences per rank per step")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup-steps", type=int, default=1, help="steps left out of the median")
    parser.add_argument("--ac", action="store_true", help="activation checkpointing per layer")
    parser.add_argument("--attention", default="flash", choices=["flash", "efficient", "default"],
                        help="SDPA backend (default: PyTorch's choice, which may be cuDNN)")
    parser.add_argument("--lr", type=float, default=3e-4)
    return parser.parse_args()


def build_model(cfg, args, device):
    torch.manual_seed(0)  # the same initial weights on every rank, as DDP requires
    with torch.device("meta"):
        model = Transformer(cfg, args.ac)
    params = sum(p.numel() for p in model.parameters()) - model.tok_embeddings.weight.numel()
    if args.parallel == "fsdp":
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for layer in model.layers:
            fully_shard(layer, mp_policy=policy)
        fully_shard(model, mp_policy=policy)
        model.to_empty(device=device)
    else:
        from torch.nn.parallel import DistributedDataParallel

        model.to_empty(device=device)
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        elif isinstance(module, nn.RMSNorm):
            nn.init.ones_(module.weight)
    if args.parallel == "ddp":
        model = DistributedDataParallel(model, device_ids=[device.index])
    return model, params


def main():
    args = parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    cfg = PRESETS[args.model]
    if args.seq_len:
        cfg.seq_len = args.seq_len
    model, params = build_model(cfg, args, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95),
                                  weight_decay=0.1, foreach=True)
    sdpa = torch.nn.attention.SDPBackend
    backend = {"flash": sdpa.FLASH_ATTENTION, "efficient": sdpa.EFFICIENT_ATTENTION}.get(args.attention)
    name = torch.cuda.get_device_name(device)
    peak = next((v for k, v in PEAK_BF16_TFLOPS.items() if k in name), None)
    capacity = torch.cuda.get_device_properties(device).total_memory
    tokens = args.local_batch * cfg.seq_len
    flops = flops_per_token(cfg, params)
    if rank == 0:
        print(f"model {args.model}: {params / 1e9:.3f} B parameters (without embedding), "
              f"{args.parallel} on {world} x {name}, seq {cfg.seq_len}, local batch "
              f"{args.local_batch}, ac {'on' if args.ac else 'off'}, attention {args.attention}",
              flush=True)
    times = []
    wall_start = os.times().elapsed  # times(2): the real clock, even where perf_counter is simulated
    for step in range(1, args.steps + 1):
        if step == args.warmup_steps + 1:
            wall_start = os.times().elapsed
        torch.cuda.synchronize()
        start = time.perf_counter()
        inputs = torch.randint(0, cfg.vocab, (args.local_batch, cfg.seq_len), device=device)
        labels = torch.randint(0, cfg.vocab, (args.local_batch, cfg.seq_len), device=device)
        attention = torch.nn.attention.sdpa_kernel(backend) if backend else contextlib.nullcontext()
        with torch.autocast("cuda", dtype=torch.bfloat16), attention:
            logits = model(inputs)
            loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        if step > args.warmup_steps:
            times.append(elapsed)
        tps = tokens / elapsed
        tflops = flops * tps / 1e12
        mfu = f"{100 * tflops / peak:.2f}%" if peak else "n/a"
        memory = torch.cuda.max_memory_reserved(device)
        if rank == 0:
            print(f"step: {step}  loss: {loss.item():.4f}  memory: {memory / 2**30:.2f}GiB"
                  f"({100 * memory / capacity:.2f}%)  tps: {tps:,.0f}  tflops: {tflops:.2f}  "
                  f"mfu: {mfu}  time: {elapsed:.3f}s", flush=True)
    wall_per_step = (os.times().elapsed - wall_start) / max(1, len(times))
    median = statistics.median(times) if times else float("nan")
    # Host memory of this process (what a rank costs the machine that runs it).
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if rank == 0:
        tps = tokens / median if times else float("nan")
        print(f"done: median step {median:.4f}s  tps {tps:,.0f} per GPU  "
              f"peak memory {torch.cuda.max_memory_allocated(device) / 2**30:.2f}GiB allocated, "
              f"{torch.cuda.max_memory_reserved(device) / 2**30:.2f}GiB reserved  "
              f"host rss {rss_mib:.0f} MiB (rank 0)  wall {wall_per_step:.2f}s/step", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
