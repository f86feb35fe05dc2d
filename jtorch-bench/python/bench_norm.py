"""PyTorch side of NormBench: BatchNorm2d training forward and forward+backward, 'name ms' lines.
[--quick] [--threads N] [--cputime] (thread CPU time instead of wall time, for --threads 1)."""
import sys
import time

import torch

import timing


CLOCK = time.thread_time if "--cputime" in sys.argv else time.perf_counter


def main():
    reps = 7 if "--quick" in sys.argv else 15
    if "--threads" in sys.argv:
        torch.set_num_threads(int(sys.argv[sys.argv.index("--threads") + 1]))
    for s in [(128, 64, 32, 32), (128, 16, 32, 32), (128, 32, 16, 16), (128, 64, 8, 8)]:
        name = "x".join(map(str, s))
        bn = torch.nn.BatchNorm2d(s[1])
        x = torch.randn(*s)
        g = torch.randn(*s)
        print(f"bn2d_fwd_{name}_ms {timing.median(lambda: bn(x), 5, reps, clock=CLOCK) * 1e3:.4f}")
        x.requires_grad_(True)

        def step():
            bn(x).backward(g)
            x.grad = None
            bn.weight.grad = None
            bn.bias.grad = None
        print(f"bn2d_fwdbwd_{name}_ms {timing.median(step, 5, reps, clock=CLOCK) * 1e3:.4f}")


if __name__ == "__main__":
    main()
