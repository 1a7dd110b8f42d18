# Values a program computes on the device from host-given values read back as on a GPU
# (gpu-emu/README.md, "Kernels the host runs"): fills with a host scalar, comparisons, .all() and
# .any(), and GradScaler's loss scale, which programs log and branch on.
import torch

torch.cuda.set_device(0)

# Fills: the value is the host's. torch.full/ones/zeros of each kind read back as filled.
assert torch.full((3,), 4, dtype=torch.int64, device="cuda").tolist() == [4, 4, 4]
assert torch.ones(2, device="cuda").tolist() == [1.0, 1.0]
assert torch.full((2,), 1.5, dtype=torch.bfloat16, device="cuda").tolist() == [1.5, 1.5]
assert torch.full((), 65536.0, device="cuda").item() == 65536.0
# A zero fill clears what the memory held before (a caching allocator reuses blocks).
reused = torch.tensor([7, 9], device="cuda")
reused.zero_()
assert reused.tolist() == [0, 0]

# Comparisons of host-written tensors, with a tensor or a host scalar on either side.
a = torch.tensor([5], device="cuda")
b = torch.tensor([7], device="cuda")
assert bool(b > a) and bool(a < b) and not bool(a == b) and bool(a != b)
assert max([a, b]).item() == 7  # Python's max compares CUDA tensors (gather_object does)
assert bool(a >= 5) and not bool(a < 3) and bool(5 <= a)
x = torch.tensor([1.5, 2.0, float("nan")], device="cuda")
assert (x > 1.75).tolist() == [False, True, False]  # NaN compares false
assert (x == x).tolist() == [True, True, False]
assert torch.equal(a, a.clone()) and not torch.equal(a, b)
assert bool((x < 10).any()) and not bool((x < 10).all())

# GradScaler: the scale starts at 2^16 and doubles after growth_interval steps without an inf
# (gradients computed by kernels are not data, so no inf is ever found).
scaler = torch.amp.GradScaler("cuda", growth_interval=2)
p = torch.nn.Parameter(torch.zeros(4, device="cuda"))
opt = torch.optim.SGD([p], lr=0.1)
scales = []
for step in range(3):
    loss = (p * 2).sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    scales.append(scaler.get_scale())
assert scales == [65536.0, 131072.0, 131072.0], scales
print("host values ok")
