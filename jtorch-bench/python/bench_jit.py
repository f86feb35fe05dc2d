"""PyTorch side of `jtorch bench jit`: the same pointwise chains eager and compiled by torch.compile (Inductor, CPU).

Needs PyTorch 2 (the 2.13 wheel in a virtual environment) and a C++ compiler for Inductor.
Prints `name value` lines as JitBench does.
"""
import sys
import time

import torch

from timing import median

quick = "--quick" in sys.argv
torch.manual_seed(0)


def measure(name, f, x):
    reps = 20 if quick else 60
    t0 = time.perf_counter()
    compiled = torch.compile(f)
    compiled(x)
    print(f"{name}_first_call_ms {(time.perf_counter() - t0) * 1e3:.3f}")
    eager = fused = 0.0
    for _ in range(3):
        eager += median(lambda: f(x), 5, reps)
        fused += median(lambda: compiled(x), 5, reps)
    print(f"{name}_eager_ms {eager / 3 * 1e3:.3f}")
    print(f"{name}_compiled_ms {fused / 3 * 1e3:.3f}")


with torch.no_grad():
    for n in ([1 << 20] if quick else [1 << 20, 1 << 24]):
        size = "1M" if n == 1 << 20 else "16M"
        x, c, w, b = (torch.randn(n) for _ in range(4))
        measure(f"relu_add_{size}", lambda t: t.relu() + c, x)
        measure(f"bias_gelu_{size}", lambda t: torch.nn.functional.gelu(t * w + b), x)
        measure(f"tanh_chain_{size}", lambda t: torch.sigmoid(torch.tanh(t * 0.5) * t + 1.0) * c, x)
