# A worker that torchrun's agent started (under `eidolon run --launch node`): its identity is
# torchrun's, and an NCCL all-reduce of host-written values gives every worker the sum.
# Usage: torchrun [--nproc-per-node=N] torchrun_allreduce.py <expected world size>
import os
import sys

import torch
import torch.distributed as dist

expected_world = int(sys.argv[1])
assert "TORCHELASTIC_RUN_ID" in os.environ, "not started by torchrun's agent"
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
local, local_world = int(os.environ["LOCAL_RANK"]), int(os.environ["LOCAL_WORLD_SIZE"])
assert world == expected_world, (world, expected_world)
assert rank == int(os.environ["GROUP_RANK"]) * local_world + local
torch.cuda.set_device(local)
dist.init_process_group("nccl")
assert (dist.get_rank(), dist.get_world_size()) == (rank, world)
# Host-to-device copies carry real bytes and the all-reduce sums them: rank r gives r + 1 in
# each of 1024 floats, so every worker gets 1 + 2 + ... + world = world (world + 1) / 2.
x = torch.full((1024,), float(rank + 1)).cuda()
dist.all_reduce(x)
total = x.cpu()
assert torch.equal(total, torch.full((1024,), world * (world + 1) / 2)), total[:4]
# One write per line: the workers share their agent's stdout, and print() under torchrun's
# `python -u` writes the text and its newline apart, so two workers' lines could interleave.
sys.stdout.write(
    f"worker {rank} of {world} (local {local} of {local_world}): all_reduce sum {total[0].item():g}\n"
)
dist.destroy_process_group()
