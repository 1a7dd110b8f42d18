# torch.profiler with CUDA activities: NVIDIA's CUPTI would reach into the driver (cuGetExportTable)
# and crash; eidolon's libcupti.so.13 answers not-supported, so the profiler runs and records the
# CPU side (eidolon's own trace.json has the GPU side).
import torch
from torch.profiler import ProfilerActivity, profile

assert ProfilerActivity.CUDA in torch.profiler.supported_activities()
a = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    for _ in range(3):
        a @ a
    torch.cuda.synchronize()
names = {event.key: event.count for event in prof.key_averages()}
assert names.get("aten::mm") == 3, names
with profile() as prof:  # the default activities, CUDA among them
    a @ a
print("torch.profiler ok")
