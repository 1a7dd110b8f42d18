# torch.distributed.pipelining: two stages (one per rank) of a small MLP under the GPipe schedule,
# four micro-batches forward and backward. The stages infer the activations' shapes by exchanging
# pickled metadata (send_object_list/recv_object_list) and then send and receive activations and
# gradients with NCCL point-to-point.
import os

import torch
import torch.distributed as dist
from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
assert world == 2
dev = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
torch.cuda.set_device(dev)
dim, batch, micro = 16, 8, 4
layer = torch.nn.Sequential(torch.nn.Linear(dim, dim), torch.nn.ReLU()).to(dev)
stage = PipelineStage(layer, rank, world, dev)
schedule = ScheduleGPipe(stage, n_microbatches=micro, loss_fn=lambda out, target: out.sum())
if rank == 0:
    schedule.step(torch.ones(batch, dim, device=dev))
else:
    losses = []
    out = schedule.step(target=torch.zeros(batch, dim, device=dev), losses=losses)
    # The last stage returns the micro-batches' outputs merged back into the whole batch, and one
    # loss a micro-batch.
    assert out.shape == (batch, dim), out.shape
    assert len(losses) == micro, len(losses)
# Both stages ran their backward: every parameter has a gradient of its own shape.
for p in layer.parameters():
    assert p.grad is not None and p.grad.shape == p.shape, p.shape
torch.cuda.synchronize()
dist.barrier()
print(f"rank {rank}: pipelining ok")
dist.destroy_process_group()
