# DTensor tensor parallelism (torch.distributed.tensor.parallel): a two-layer MLP, the first
# Linear column-wise and the second row-wise across the ranks, forward and backward.
import os

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
mesh = init_device_mesh("cuda", (world,))
dim, hidden, batch = 16, 32, 4
mlp = torch.nn.Sequential(torch.nn.Linear(dim, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, dim)).cuda()
mlp = parallelize_module(mlp, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})

w0, w2 = mlp[0].weight, mlp[2].weight
assert isinstance(w0, DTensor) and isinstance(w2, DTensor)
# Column-wise: each rank holds hidden/world output rows of the first weight; row-wise: hidden/world
# input columns of the second.
assert w0.shape == (hidden, dim) and w0.to_local().shape == (hidden // world, dim), w0.to_local().shape
assert w2.shape == (dim, hidden) and w2.to_local().shape == (dim, hidden // world), w2.to_local().shape
assert mlp[0].bias.to_local().shape == (hidden // world,)

x = torch.ones(batch, dim, device="cuda")
y = mlp(x)
# RowwiseParallel's output is replicated: a plain tensor of the full shape on every rank.
assert not isinstance(y, DTensor) and y.shape == (batch, dim), (type(y), y.shape)
y.sum().backward()
assert w0.grad is not None and w0.grad.to_local().shape == (hidden // world, dim)
torch.cuda.synchronize()
dist.barrier()
print(f"rank {rank}: tensor parallel ok")
dist.destroy_process_group()
