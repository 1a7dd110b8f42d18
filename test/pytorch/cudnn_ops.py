# Stock PyTorch's cuDNN paths on eidolon's libcudnn.so.9 (gpu-emu/cudnn/): scaled dot-product
# attention with the cuDNN backend (forward and backward, causal or not, GQA), Conv2d and
# BatchNorm2d forward and backward in fp32 and bf16. Each must run (no cuDNN error) and take
# virtual time in the order its work implies. Exact prices are checked by the nvcc test
# (test/gpu-emu/cuda/cudnn.cu) and against the real H100 by validation/torch-cudnn/.
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

assert torch.backends.cudnn.is_available()
assert torch.backends.cudnn.version() >= 90000, torch.backends.cudnn.version()


def elapsed_us(work):
    work()  # plans are built and cached on the first call
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    work()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) * 1e3


def attention_us(causal, backward, kv_heads=16):
    q = torch.empty(4, 16, 2048, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k, v = (torch.empty(4, kv_heads, 2048, 128, device="cuda", dtype=torch.bfloat16,
                        requires_grad=True) for _ in range(2))

    def work():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            out = torch.nn.functional.scaled_dot_product_attention(
                q, k, v, is_causal=causal, enable_gqa=kv_heads != 16)
            if backward:
                out.backward(torch.ones_like(out))

    return elapsed_us(work)


forward, forward_causal = attention_us(False, False), attention_us(True, False)
both, both_causal = attention_us(False, True), attention_us(True, True)
print(f"sdpa cudnn: fwd {forward:.1f} us, causal {forward_causal:.1f}; fwd+bwd {both:.1f}, "
      f"causal {both_causal:.1f}")
# A causal mask skips about half the blocks; a backward pass is about 2.5 forward passes.
assert 0.4 * forward < forward_causal < 0.75 * forward
assert 2.5 * forward < both < 5 * forward and both_causal < both
assert attention_us(True, True, kv_heads=4) > 0  # grouped-query attention

for dtype in (torch.float32, torch.bfloat16):
    conv = torch.nn.Conv2d(64, 128, 3, padding=1).to("cuda", dtype)
    norm = torch.nn.BatchNorm2d(64).to("cuda", dtype)
    x = torch.empty(32, 64, 56, 56, device="cuda", dtype=dtype, requires_grad=True)
    conv_fwd = elapsed_us(lambda: conv(x))
    conv_both = elapsed_us(lambda: conv(x).backward(torch.ones(32, 128, 56, 56, device="cuda",
                                                                dtype=dtype)))
    norm_fwd = elapsed_us(lambda: norm(x))
    norm_both = elapsed_us(lambda: norm(x).backward(torch.ones_like(x)))
    print(f"{dtype}: conv2d fwd {conv_fwd:.1f} us, fwd+bwd {conv_both:.1f}; "
          f"batchnorm2d fwd {norm_fwd:.1f}, fwd+bwd {norm_both:.1f}")
    # Backward data and backward filter are each a GEMM of the forward's FLOPs (in other shapes).
    assert 2 * conv_fwd < conv_both < 4 * conv_fwd
    assert norm_fwd < norm_both
print("cudnn ops: passed")
