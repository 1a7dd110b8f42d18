# torch.distributed's object collectives on the NCCL backend: broadcast_object_list and
# all_gather_object pickle objects into uint8 CUDA tensors and size their buffers on the device
# (torch.cat of the size tensors, sum/max of int64, .item()), so they need those kernels' data
# (gpu-emu/README.md, "Device memory and data").
import os

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))

# Objects of different pickled sizes, so that the receivers must use the sizes sent.
sent = [{"step": 7, "name": "eidolon"}, list(range(300)), "x" * 1000]
objects = list(sent) if rank == 0 else [None] * len(sent)
dist.broadcast_object_list(objects, src=0)
assert objects == sent, objects

one = [("only", 42)] if rank == 1 else [None]
dist.broadcast_object_list(one, src=1)
assert one == [("only", 42)], one

# Each rank contributes an object of a different size.
mine = {"rank": rank, "payload": "y" * (10 + 500 * rank)}
gathered = [None] * world
dist.all_gather_object(gathered, mine)
assert gathered == [{"rank": r, "payload": "y" * (10 + 500 * r)} for r in range(world)], gathered

# gather_object sizes its buffer with Python's max() over the gathered size tensors, which
# compares CUDA tensors (torch.gt, then bool()): rank 1's larger object must not be cut to rank
# 0's size (DCP's save plans go through it).
out = [None] * world if rank == 0 else None
dist.gather_object(mine, out, dst=0)
if rank == 0:
    assert out == [{"rank": r, "payload": "y" * (10 + 500 * r)} for r in range(world)], out

dist.barrier()
print(f"rank {rank}: object collectives ok")
dist.destroy_process_group()
