"""PyTorch side of `jtorch bench conv`: the same measurements, printed as 'name value' lines."""
import sys

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
]


def main():
    quick = "--quick" in sys.argv
    reps = 5 if quick else 11
    r = {}
    for name, n, cin, cout, size, k, stride, pad in SHAPES:
        main_shape = name.startswith("conv2d_")
        x = torch.randn(n, cin, size, size)
        w = torch.randn(cout, cin, k, k)
        b = torch.randn(cout)
        with torch.no_grad():
            t = median(lambda: F.conv2d(x, w, b, stride, pad), 5 if main_shape else 10, reps)
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
        t = median(step, 3 if main_shape else 6, reps)
        r[name + "_fwd_bwd_ms"] = t * 1e3
    for k, v in r.items():
        print(f"{k} {v:.4f}")


if __name__ == "__main__":
    main()
