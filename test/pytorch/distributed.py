# torch.distributed with the NCCL backend through env:// (eidolon run sets RANK, WORLD_SIZE,
# LOCAL_RANK, MASTER_ADDR, MASTER_PORT as torchrun does): the collectives a training step uses.
import os

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
local = int(os.environ["LOCAL_RANK"])
assert world == int(os.environ["WORLD_SIZE"]) >= 2
torch.cuda.set_device(local)
dev = torch.device("cuda", local)
n = 64 * 2**20  # 64 Mi floats = 256 MiB
x = torch.ones(n, device=dev)
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
dist.all_reduce(x)
end.record()
end.synchronize()
ms = start.elapsed_time(end)
# A ring all-reduce sends 2 (p-1)/p x 256 MiB from each GPU; NVLink 4 gives an H100 at most
# 450 GB/s each way, so at least 2 * 1/2 * 268.4 MB / 450 GB/s = 0.60 ms for p = 2 (more for more
# GPUs); and far below 100 ms.
assert 0.59 <= ms <= 100, ms
gathered = [torch.empty(n // world, device=dev) for _ in range(world)]
dist.all_gather(gathered, torch.ones(n // world, device=dev))
out = torch.empty(n // world, device=dev)
dist.reduce_scatter(out, [torch.ones(n // world, device=dev) for _ in range(world)])
flat = torch.empty(n, device=dev)
dist.all_gather_into_tensor(flat, torch.ones(n // world, device=dev))
dist.reduce_scatter_tensor(out, flat)
dist.broadcast(x, src=0)


# Coalesced collectives (torch's _coalescing_manager: ncclGroupStart/End around them) run as one
# NCCL kernel, their small operations side by side on the channels: 8 all-reduces of 64 KiB so
# take less than the same 8 issued one by one, each its own kernel.
def eight_small(coalesce):
    small = [torch.ones(16384, device=dev) for _ in range(8)]

    def issue():
        for t in small:
            dist.all_reduce(t)

    if coalesce:
        with dist._coalescing_manager(async_ops=False):
            issue()
    else:
        issue()


for coalesce in (False, True):
    eight_small(coalesce)  # once untimed: torch's first use of the path allocates
torch.cuda.synchronize()
times = {}
for coalesce in (False, True):
    start.record()
    for _ in range(5):
        eight_small(coalesce)
    end.record()
    end.synchronize()
    times[coalesce] = start.elapsed_time(end)
assert times[True] < times[False], times
dist.barrier()
torch.cuda.synchronize()
print(
    f"rank {rank}: distributed ok: all_reduce 256 MiB {ms:.3f} ms; 5 x 8 x 64 KiB all_reduce "
    f"{times[False]:.3f} ms apart, {times[True]:.3f} ms coalesced"
)
dist.destroy_process_group()
