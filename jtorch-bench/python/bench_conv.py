"""PyTorch side of `jtorch bench conv`: the same measurements, printed as 'name value' lines.

Usage: bench_conv.py [THREADS] [--quick] [--cputime] [--only NAME]. With --cputime (meant for one thread, where the
ops run on this thread), times are thread CPU time, as jtorch's --cputime. The fractions of peak are jtorch's
(`jtorch bench peak`); this side prints times only.
"""
import sys
import time

import torch
import torch.nn.functional as F

from timing import median

SHAPES = [
    ("conv2d_128x64x32x32_k3", 128, 64, 64, 32, 3, 1, 1),
    ("resnet20_16c_32px", 128, 16, 16, 32, 3, 1, 1),
    ("resnet20_32c_16px", 128, 32, 32, 16, 3, 1, 1),
    ("resnet20_64c_8px", 128, 64, 64, 8, 3, 1, 1),
    ("resnet20_16to32c_s2", 128, 16, 32, 32, 3, 2, 1),
    ("resnet20_32to64c_s2", 128, 32, 64, 16, 3, 2, 1),
    ("resnet50_stem_7x7s2", 8, 3, 64, 224, 7, 2, 3),
    ("resnet50_1x1_256to64_56px", 8, 256, 64, 56, 1, 1, 0),
    ("resnet50_1x1_64to256_56px", 8, 64, 256, 56, 1, 1, 0),
    ("resnet50_1x1_1024to256_14px", 8, 1024, 256, 14, 1, 1, 0),
    ("resnet50_1x1_2048to512_7px", 8, 2048, 512, 7, 1, 1, 0),
    ("resnet50_1x1s2_256to512_56px", 8, 256, 512, 56, 1, 2, 0),
    ("resnet50_3x3_64c_56px", 8, 64, 64, 56, 3, 1, 1),
    ("resnet50_3x3_128c_28px", 8, 128, 128, 28, 3, 1, 1),
    ("resnet50_3x3_256c_14px", 8, 256, 256, 14, 3, 1, 1),
    ("resnet50_3x3_512c_7px", 8, 512, 512, 7, 3, 1, 1),
    ("resnet50_3x3s2_128c_56px", 8, 128, 128, 56, 3, 2, 1),
    ("resnet50_3x3s2_256c_28px", 8, 256, 256, 28, 3, 2, 1),
    ("resnet50_3x3s2_512c_14px", 8, 512, 512, 14, 3, 2, 1),
    ("resnet18_64px_stem_7x7s2", 32, 3, 64, 64, 7, 2, 3),
    ("resnet18_64px_3x3_64c_16px", 32, 64, 64, 16, 3, 1, 1),
    ("resnet18_64px_3x3_128c_8px", 32, 128, 128, 8, 3, 1, 1),
    ("resnet18_64px_3x3_256c_4px", 32, 256, 256, 4, 3, 1, 1),
    ("resnet18_64px_3x3_512c_2px", 32, 512, 512, 2, 3, 1, 1),
    ("resnet18_64px_3x3s2_128to256_8px", 32, 128, 256, 8, 3, 2, 1),
    ("resnet18_64px_3x3s2_256to512_4px", 32, 256, 512, 4, 3, 2, 1),
]


def main():
    quick = "--quick" in sys.argv
    clock = time.thread_time if "--cputime" in sys.argv else time.perf_counter
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    if len(sys.argv) > 1 and sys.argv[1].isdigit():
        torch.set_num_threads(int(sys.argv[1]))
    reps = 5 if quick else 11
    r = {}
    for name, n, cin, cout, size, k, stride, pad in SHAPES:
        if only is not None and only not in name:
            continue
        main_shape = name.startswith("conv2d_")
        x = torch.randn(n, cin, size, size)
        w = torch.randn(cout, cin, k, k)
        b = torch.randn(cout)
        with torch.no_grad():
            t = median(lambda: F.conv2d(x, w, b, stride, pad), 5 if main_shape else 10, reps, clock)
        r[name + "_fwd_ms"] = t * 1e3
        x.requires_grad_(True)
        w.requires_grad_(True)
        b.requires_grad_(True)

        def step():
            y = F.conv2d(x, w, b, stride, pad)
            y.backward(torch.ones_like(y))
            x.grad = None
            w.grad = None
            b.grad = None
        t = median(step, 3 if main_shape else 6, reps, clock)
        r[name + "_fwd_bwd_ms"] = t * 1e3
    for k, v in r.items():
        print(f"{k} {v:.4f}")


if __name__ == "__main__":
    main()
