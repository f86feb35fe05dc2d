"""PyTorch side of RnnBench: LSTM and GRU layers of the word language model's shape (seq 35, batch 20, hidden 200,
2 layers), forward and forward+backward, 'name ms' lines. [--quick]"""
import sys

import torch

import timing


def main():
    reps = 5 if "--quick" in sys.argv else 15
    torch.manual_seed(1)
    x = torch.randn(35, 20, 200)
    up = torch.randn(35, 20, 200)
    for name, cls in (("lstm", torch.nn.LSTM), ("gru", torch.nn.GRU)):
        m = cls(200, 200, num_layers=2)

        def fwd():
            with torch.no_grad():
                m(x)
        print(f"{name}_fwd_35x20x200_2l_ms {timing.median(fwd, 3, reps) * 1e3:.4f}")
        xg = x.clone().requires_grad_(True)

        def step():
            m.zero_grad(set_to_none=True)
            (m(xg)[0] * up).sum().backward()
            xg.grad = None
        print(f"{name}_fwdbwd_35x20x200_2l_ms {timing.median(step, 3, reps) * 1e3:.4f}")


if __name__ == "__main__":
    main()
