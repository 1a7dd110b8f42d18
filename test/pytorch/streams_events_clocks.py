# Streams, events and the clocks a training loop times itself with: all virtual on the training
# thread (gpu-emu/README.md "Virtual time"; default host-time mode `calls`).
import os
import time

import torch

dev = torch.device("cuda", 0)
a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
torch.cuda.synchronize()

# time.sleep is the program's own host work; in `calls` mode it costs no virtual time, while the
# wall clock (os.times().elapsed: times(2), not interposed) sees it.
wall0, p0, t0 = os.times().elapsed, time.perf_counter(), time.time()
time.sleep(0.3)
wall1, p1, t1 = os.times().elapsed, time.perf_counter(), time.time()
assert wall1 - wall0 >= 0.25, wall1 - wall0
assert 0 <= p1 - p0 < 1e-3, p1 - p0
assert 0 <= t1 - t0 < 1e-3, t1 - t0

def timed_matmuls(stream, n):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        start.record()
        for _ in range(n):
            a @ a
        end.record()
    return start, end


def elapsed_ms(stream, n):
    """Events around n matmuls issued on an idle stream."""
    torch.cuda.synchronize()
    start, end = timed_matmuls(stream, n)
    end.synchronize()
    assert end.query()
    return start.elapsed_time(end)


side = torch.cuda.Stream()
elapsed_ms(side, 1)  # the first matmul on a stream sets up cuBLAS's workspace for it
# On an idle stream: a fixed launch overhead and latency c after the start event, then n matmuls
# of k each: elapsed(n) = c + n k. 2 * 4096^3 = 137.4 GFLOP: k >= 0.139 ms at the 989 TFLOP/s
# bf16 peak of an H100 SXM.
one, two, four = elapsed_ms(side, 1), elapsed_ms(side, 2), elapsed_ms(side, 4)
k = two - one
assert 0.139 <= k <= 0.5, (one, two)
assert 0 <= one - k < 0.05, (one, two)  # c: microseconds of host overhead and launch latency
assert abs(four - (one + 3 * k)) < 0.01 * four, (one, two, four)
# torch.cuda.synchronize returns when the work issued ahead of it has run: the training thread's
# perf_counter moves by at least the GPU time of that work.
torch.cuda.synchronize()
s3, e3 = timed_matmuls(side, 4)
p0 = time.perf_counter()
torch.cuda.synchronize()
waited = time.perf_counter() - p0
assert waited * 1e3 >= 0.9 * s3.elapsed_time(e3), (waited, s3.elapsed_time(e3))

# A timed wait on a lock (threading.Event.wait: CPython's sem_clockwait, GLIBC_2.34 in a program
# built since glibc 2.34) on the training thread waits its timeout, however far the virtual clock
# is from the real one. Here it is a minute ahead (128 matmuls of 65536^3, 563 TFLOP each: at
# least 0.57 s each at the bf16 peak, 73 s in all), which a real-clock wait on the virtual deadline
# would add (or, were the virtual clock behind, return at once).
big = torch.empty(65536, 65536, device=dev, dtype=torch.bfloat16)
for _ in range(128):
    big @ big
torch.cuda.synchronize()
import threading
wall0, p0 = os.times().elapsed, time.perf_counter()
woken = threading.Event().wait(0.3)
wall1, p1 = os.times().elapsed, time.perf_counter()
assert not woken
assert 0.25 <= wall1 - wall0 < 3.0, wall1 - wall0
assert 0 <= p1 - p0 < 1e-3, p1 - p0  # the wait is the program's own host time: none in `calls`
print(f"streams/events/clocks ok: matmul {k:.3f} ms, sync waited {waited*1e3:.3f} ms")
