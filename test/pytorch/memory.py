# The caching allocator on gpu-emu's cudaMalloc: statistics, mem_get_info, and out-of-memory at
# the capacity a real H100 80GB shows (79.11 GiB, topologies/gpus/H100-SXM5-80GB.yaml).
import torch

MiB, GiB = 2**20, 2**30
dev = torch.device("cuda", 0)
torch.cuda.init()
free, total = torch.cuda.mem_get_info(dev)
assert abs(total - 79.11 * GiB) < MiB, total  # 84,942,979,645 bytes
assert free <= total
x = torch.empty(256 * MiB, dtype=torch.uint8, device=dev)
assert torch.cuda.memory_allocated(dev) == 256 * MiB, torch.cuda.memory_allocated(dev)
y = torch.empty(64 * MiB // 4, dtype=torch.float32, device=dev)  # 64 MiB
assert torch.cuda.memory_allocated(dev) == 320 * MiB
assert torch.cuda.max_memory_allocated(dev) == 320 * MiB
free_after, _ = torch.cuda.mem_get_info(dev)
# the allocator reserved at least what it handed out, and the device says so
assert free - free_after >= 320 * MiB, (free, free_after)
del x
assert torch.cuda.memory_allocated(dev) == 64 * MiB
assert torch.cuda.max_memory_allocated(dev) == 320 * MiB
assert torch.cuda.memory_reserved(dev) >= 320 * MiB  # cached, not returned
del y
torch.cuda.empty_cache()
assert torch.cuda.memory_reserved(dev) == 0
free, _ = torch.cuda.mem_get_info(dev)
# One byte-size step over what is free fails as on the card; what is free (less 2 MiB of the
# allocator's rounding) succeeds.
try:
    torch.empty(free + 2 * MiB, dtype=torch.uint8, device=dev)
    raise AssertionError("allocating more than the free memory succeeded")
except torch.OutOfMemoryError as error:
    assert "Tried to allocate" in str(error), str(error)
    assert "79.11 GiB" in str(error), str(error)  # "GPU 0 has a total capacity of 79.11 GiB"
big = torch.empty(free - 2 * MiB, dtype=torch.uint8, device=dev)
# the allocator rounds a block up to a multiple of 512 bytes
assert torch.cuda.memory_allocated(dev) == (free - 2 * MiB + 511) // 512 * 512
del big
torch.cuda.empty_cache()
try:
    torch.empty(80 * GiB, dtype=torch.uint8, device=dev)  # the marketing size: more than 79.11 GiB
    raise AssertionError("80 GiB fit on an 80 GB card")
except torch.OutOfMemoryError:
    pass
print(f"memory ok: total {total} free {free}")
