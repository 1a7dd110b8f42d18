# torch.cuda sees the simulated node: topologies/default.yaml's servers hold 8 H100-SXM5-80GB
# (topologies/gpus/H100-SXM5-80GB.yaml): compute capability 9.0, 132 SMs, 79.11 GiB usable.
import torch

assert torch.cuda.is_available(), "torch.cuda.is_available() is False"
assert torch.cuda.device_count() == 8, torch.cuda.device_count()
for index in range(torch.cuda.device_count()):
    p = torch.cuda.get_device_properties(index)
    assert p.name == "NVIDIA H100 80GB HBM3", p.name
    assert (p.major, p.minor) == (9, 0), (p.major, p.minor)
    assert p.multi_processor_count == 132, p.multi_processor_count
    # 79.11 GiB = 79.11 * 2**30 = 84,942,979,645 bytes (to within the spec parser's rounding)
    assert abs(p.total_memory - 79.11 * 2**30) < 2**20, p.total_memory
    assert p.L2_cache_size == 50 * 2**20, p.L2_cache_size
assert torch.cuda.get_device_capability() == (9, 0)
assert torch.cuda.is_bf16_supported()
print("device properties ok:", torch.cuda.get_device_name(0))
