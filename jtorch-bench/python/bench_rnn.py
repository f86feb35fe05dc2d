"""PyTorch side of RnnBench: LSTM and GRU layers of the word language model's shape (seq 35, batch 20, hidden 200,
2 layers), forward and forward+backward, 'name ms' lines. [--quick] [--threads N] [--cputime] (thread CPU time instead of
wall time, for --threads 1)."""
import sys
import time

import torch

import timing

CLOCK = time.thread_time if "--cputime" in sys.argv else time.perf_counter

def main():
    reps = 5 if "--quick" in sys.argv else 15
    if "--threads" in sys.argv:
        torch.set_num_threads(int(sys.argv[sys.argv.index("--threads") + 1]))
    torch.manual_seed(1)
    x = torch.randn(35, 20, 200)
    up = torch.randn(35, 20, 200)
    for name, cls in (("lstm", torch.nn.LSTM), ("gru", torch.nn.GRU)):
        m = cls(200, 200, num_layers=2)

        def fwd():
            with torch.no_grad():
                m(x)
        print(f"{name}_fwd_35x20x200_2l_ms {timing.median(fwd, 3, reps, clock=CLOCK) * 1e3:.4f}")
        xg = x.clone().requires_grad_(True)

        def step():
            m.zero_grad(set_to_none=True)
            (m(xg)[0] * up).sum().backward()
            xg.grad = None
        print(f"{name}_fwdbwd_35x20x200_2l_ms {timing.median(step, 3, reps, clock=CLOCK) * 1e3:.4f}")


if __name__ == "__main__":
    main()
