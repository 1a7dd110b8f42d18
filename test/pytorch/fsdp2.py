# FSDP2 (fully_shard) with bf16 mixed precision: parameters sharded over the ranks, gathered in
# bf16 for compute, gradients reduce-scattered in fp32, an optimizer step on the shards.
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import DTensor

dist.init_process_group("nccl")
local, world = int(os.environ["LOCAL_RANK"]), dist.get_world_size()
torch.cuda.set_device(local)
dev = torch.device("cuda", local)
torch.manual_seed(0)
model = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024, bias=False) for _ in range(4)]).to(dev)
policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
for layer in model:
    fully_shard(layer, mp_policy=policy)
fully_shard(model, mp_policy=policy)
for p in model.parameters():
    assert isinstance(p, DTensor)
    # dim 0 sharded: 1024 rows over `world` ranks
    assert p.to_local().shape == (1024 // world, 1024), p.to_local().shape
    assert p.dtype == torch.float32
seen = []
model[0].register_forward_hook(lambda m, i, o: seen.append(o.dtype))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
before = torch.cuda.memory_allocated(dev)
for step in range(3):
    x = torch.randn(32, 1024, device=dev)
    loss = model(x).float().pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
torch.cuda.synchronize()
assert seen and all(d == torch.bfloat16 for d in seen), seen
for p in model.parameters():
    assert isinstance(p, DTensor) and p.to_local().dtype == torch.float32
# AdamW state is two fp32 tensors per shard: 4 x 1024 x 1024 / world x 4 bytes x 2 more bytes.
state = 4 * 1024 * 1024 // world * 4 * 2
assert torch.cuda.memory_allocated(dev) - before >= state, torch.cuda.memory_allocated(dev) - before
print(f"rank {dist.get_rank()}: fsdp2 ok")
dist.destroy_process_group()
