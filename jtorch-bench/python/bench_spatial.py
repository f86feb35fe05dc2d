"""PyTorch side of jtorch-bench's SpatialBench: the same pooling ops and keys, medians in milliseconds."""
import statistics
import sys
import time

import torch
import torch.nn.functional as F

torch.manual_seed(0)
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 15


def report(key, n, fn):
    for _ in range(max(5, n // 2)):
        fn()
    t = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    print(f"{key} {statistics.median(t) * 1e3:.4f}")


with torch.no_grad():
    x = torch.randn(32, 64, 56, 56)
    report("maxpool3x3s2_fwd_32x64x56x56_ms", reps, lambda: torch.ops.aten.max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1]))
    v, i = torch.ops.aten.max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1])
    g = torch.randn_like(v)
    report("maxpool3x3s2_bwd_32x64x56x56_ms", reps,
           lambda: torch.ops.aten.max_pool2d_with_indices_backward(g, x, [3, 3], [2, 2], [1, 1], [1, 1], False, i))
    report("maxpool2x2s2_fwd_32x64x56x56_ms", reps, lambda: torch.ops.aten.max_pool2d_with_indices(x, [2, 2], [2, 2]))
    report("avgpool2x2s2_fwd_32x64x56x56_ms", reps, lambda: F.avg_pool2d(x, 2))
    g2 = torch.randn(32, 64, 28, 28)
    report("avgpool2x2s2_bwd_32x64x56x56_ms", reps,
           lambda: torch.ops.aten.avg_pool2d_backward(g2, x, [2, 2], [2, 2], [0, 0], False, True, None))
    x = torch.randn(128, 64, 8, 8)
    gg = torch.randn(128, 64, 1, 1)
    report("gap_fwd_128x64x8x8_ms", reps * 10, lambda: F.adaptive_avg_pool2d(x, 1))
    report("gap_bwd_128x64x8x8_ms", reps * 10, lambda: torch.ops.aten._adaptive_avg_pool2d_backward(gg, x))
