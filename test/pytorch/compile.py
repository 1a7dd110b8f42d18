# torch.compile with the default inductor backend: Triton compiles the fused kernel (its own ptxas
# and the driver's module loading, libcuda's cuModuleLoadData/cuLaunchKernel in eidolon) and the
# compiled function runs and is priced. Kernels compute nothing here (gpu-emu/README.md, "Device
# memory and data"), so the test checks what compiling decides: one graph, one fused kernel for
# what eager runs as four, and so a faster step.
import torch
import torch._dynamo

dev = torch.device("cuda", 0)


def f(x, y):
    return torch.relu(x * 2 + y).sum(dim=1)  # eager: mul, add, relu, sum


compiled = torch.compile(f)
x = torch.randn(64, 64, device=dev)
y = torch.randn(64, 64, device=dev)
out = compiled(x, y)
assert out.shape == (64,) and out.device == dev, (out.shape, out.device)
compiled(x, y)
# Compiled once: the second call with the same shapes reuses the code.
frames = torch._dynamo.utils.counters["stats"]["unique_graphs"]
assert frames == 1, dict(torch._dynamo.utils.counters["stats"])


def timed(fn):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    fn(x, y)
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


eager_ms, compiled_ms = timed(f), timed(compiled)
print(f"eager {eager_ms * 1e3:.3f} us, compiled {compiled_ms * 1e3:.3f} us")
# From an idle stream eager pays four kernel launches (4.019 us each,
# topologies/hosts/h100-server.yaml) before its last kernel starts; the compiled step one.
assert eager_ms >= 3 * 4.019e-3, eager_ms
assert compiled_ms < eager_ms, (compiled_ms, eager_ms)
print("torch.compile ok")
