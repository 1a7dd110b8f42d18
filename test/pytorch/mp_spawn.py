# torch.multiprocessing.spawn as the launcher (the DDP tutorial's way): one process per node, run
# by `eidolon run --launch node`, spawns a worker per GPU, and each worker tells NCCL its rank
# itself. As on a cluster, the workers see no RANK/WORLD_SIZE/LOCAL_RANK (the node process's are
# eidolon's, not theirs).
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, world):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        assert name not in os.environ, f"worker {rank} inherited {name}={os.environ[name]}"
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29533"
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    # The same allocation on every worker, so that each GPU's peak memory is the same.
    x = torch.tensor([float(rank + 1)] * 1024, device="cuda")
    dist.all_reduce(x)
    expected = world * (world + 1) / 2
    assert x[0].item() == expected, (rank, x[0].item())
    print(f"worker {rank} of {world} on device {torch.cuda.current_device()}: "
          f"all_reduce sum {x[0].item():g}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    world = int(sys.argv[1])
    mp.spawn(worker, args=(world,), nprocs=world, join=True)
    print("mp.spawn ok", flush=True)
