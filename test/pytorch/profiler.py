# torch.profiler with CUDA activities: eidolon's libcupti.so.13 hands Kineto the simulated kernels,
# copies and memsets with the runtime calls that issued them, so the profiler's tables show GPU time
# per operator. The GEMM's time is checked against CUDA events (exact in eidolon), which time two
# of them back to back on a busy stream. The first profile starts before any CUDA call (the clock
# turns virtual inside it), and the runtime calls must nest in the operators that made them.
import torch
from torch.profiler import ProfilerActivity, profile, record_function

assert ProfilerActivity.CUDA in torch.profiler.supported_activities()
mid = None
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    host = torch.empty(1 << 20, pin_memory=True)
    device = torch.empty(1 << 20, device="cuda")
    mid = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    with record_function("gemms"):
        a @ a
        mid.record()  # the first GEMM is still running: the event is its end
        a @ a
        a @ a
        end.record()
    device.zero_()
    host.copy_(device)
    torch.cuda.synchronize()

rows = {event.key: event for event in prof.key_averages()}
mm = rows["aten::mm"]
assert mm.count == 3, rows.keys()
gemm_us = mid.elapsed_time(end) * 1e3 / 2
# Each GEMM's kernel, as the profiler saw it, takes what the events say (to 10 ns: the profiler
# maps its timestamps through its own TSC-to-clock converter, which eidolon follows to ~1 ns).
assert abs(mm.device_time_total / 3 - gemm_us) < 0.01, (mm.device_time_total, gemm_us)
assert mm.self_device_time_total == mm.device_time_total  # the kernel is aten::mm's own
# The launches nest in their operators, so the annotation holds the three GEMMs' time and the
# runtime rows none.
launches = [e for e in prof.events() if e.name == "cudaLaunchKernel"]
assert len(launches) >= 3 and all(e.cpu_parent is not None for e in launches), launches
assert abs(rows["gemms"].device_time_total - 3 * gemm_us) < 0.03, rows["gemms"].device_time_total
assert rows["cudaLaunchKernel"].device_time_total == 0
memcpy = [key for key in rows if key.startswith("Memcpy DtoH")]
memset = [key for key in rows if key.startswith("Memset")]
assert memcpy and rows[memcpy[0]].device_time_total > 0, rows.keys()
assert memset and rows[memset[0]].device_time_total > 0, rows.keys()

# A second session sees the same kernel time (nothing depends on this machine's speed).
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as again:
    a @ a
    torch.cuda.synchronize()
second = {event.key: event for event in again.key_averages()}["aten::mm"]
assert abs(second.device_time_total - gemm_us) < 0.01, (second.device_time_total, gemm_us)

with profile() as prof:  # the default activities, CUDA among them
    a @ a
print(f"torch.profiler ok: GEMM {gemm_us:.3f} us")
