# CUDA graphs (torch.cuda.CUDAGraph): capture a few kernels and replay them. A replay must cost
# what the captured kernels cost, measured independently: the same kernels launched eagerly
# behind a long GEMM (so that the GPU, not the host's launches, sets the pace) and timed by CUDA
# events. Launched from an idle stream, the graph saves the eager launches' host overhead.
import torch

dev = torch.device("cuda", 0)
torch.cuda.set_device(dev)
x = torch.randn(256, 256, device=dev)
w = torch.randn(256, 256, device=dev)
big = torch.randn(4096, 4096, device=dev)


def step():
    y = x @ w  # cuBLAS GEMM
    y = torch.relu(y * 2.0 + 1.0)  # three elementwise kernels
    return y.sum(dim=1)  # a reduction


kernels = 5  # the launches step() makes


def timed(work, backlog):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if backlog:
        big @ big  # ~137 GFLOP: milliseconds of GPU work, far longer than the launches behind it
    start.record()
    work()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):  # warm-up outside the capture, as torch's docs ask
    for _ in range(2):
        step()
torch.cuda.current_stream().wait_stream(side)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    out = step()

step()
graph.replay()
eager_busy = timed(step, backlog=True)  # the kernels' device time, back to back
graph_busy = timed(graph.replay, backlog=True)
eager_idle = timed(step, backlog=False)
graph_idle = timed(graph.replay, backlog=False)
print(f"eager {eager_busy * 1e3:.3f} us busy {eager_idle * 1e3:.3f} us idle; "
      f"graph {graph_busy * 1e3:.3f} us busy {graph_idle * 1e3:.3f} us idle")
# Behind a backlog both run the same kernels back to back: the same device time (to the ns).
assert abs(graph_busy - eager_busy) <= 1e-6, (graph_busy, eager_busy)
assert eager_busy > 0
# From an idle stream the eager step is paced by its launches (cudaLaunchKernel 4.019 us each,
# topologies/hosts/h100-server.yaml), the graph by one cudaGraphLaunch (1.329 us; with torch's
# bookkeeping calls around it, less than one kernel launch) and then its kernels back to back.
assert eager_idle >= (kernels - 1) * 4.019e-3, eager_idle
assert 1.329e-3 <= graph_idle - graph_busy < 4.019e-3, (graph_idle, graph_busy)
print("cuda graphs ok")
