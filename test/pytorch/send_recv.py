# Point-to-point between two ranks as a two-stage pipeline does it: send/recv and isend/irecv of
# activations forward and gradients back, with the data the host put in (gpu-emu/README.md,
# "Device memory and data": NCCL send/recv move the bytes).
import os

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
assert world == 2
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
n = 1024
expected = torch.arange(n, dtype=torch.float32)  # host-built values the receiver checks
if rank == 0:
    dist.send(expected.cuda(), dst=1)
    grad = torch.empty(n, device="cuda")
    dist.recv(grad, src=1)
    assert torch.equal(grad.cpu(), -expected), grad[:4]
else:
    act = torch.empty(n, device="cuda")
    dist.recv(act, src=0)
    assert torch.equal(act.cpu(), expected), act[:4]
    dist.send((-expected).cuda(), dst=0)

print(f"rank {rank}: send/recv done", flush=True)
# Non-blocking, both directions at once (micro-batches in flight), several tensors.
micro = 4
outs = [torch.full((n,), float(10 * rank + m)).cuda() for m in range(micro)]
ins = [torch.empty(n, device="cuda") for _ in range(micro)]
peer = 1 - rank
ops = [dist.P2POp(dist.isend, outs[m], peer) for m in range(micro)]
ops += [dist.P2POp(dist.irecv, ins[m], peer) for m in range(micro)]
for work in dist.batch_isend_irecv(ops):
    work.wait()
print(f"rank {rank}: batch_isend_irecv done", flush=True)
for m in range(micro):
    assert torch.equal(ins[m].cpu(), torch.full((n,), float(10 * peer + m))), (m, ins[m][:4])

# Separate isend/irecv, matched in order (rank 0 sends first, rank 1 receives first): NCCL orders
# one pair's point-to-point operations, and a send waits for its receive.
if rank == 0:
    reqs = [dist.isend(outs[1], peer), dist.irecv(ins[1], peer)]
else:
    reqs = [dist.irecv(ins[1], peer), dist.isend(outs[1], peer)]
for r in reqs:
    r.wait()
assert torch.equal(ins[1].cpu(), torch.full((n,), float(10 * peer + 1))), ins[1][:4]
torch.cuda.synchronize()
print(f"rank {rank}: send/recv ok")
dist.destroy_process_group()
