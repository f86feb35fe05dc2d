"""PyTorch side of OptimBench: one step of Adam, NAdam, RAdam, Adamax and SparseAdam (its gradient as
grad.to_sparse(1), every row touched) on a 1024x1024 float32 parameter, and one LBFGS step with the strong-Wolfe
line search (10 iterations, tolerances 0) on least squares (X 1024x512, W 128x512), 'name value' lines. [--quick]"""
import sys

import torch

import timing


def main():
    reps = 5 if "--quick" in sys.argv else 21
    torch.manual_seed(1)
    grad = torch.randn(1024, 1024)
    steps = {"adam": lambda ps: torch.optim.Adam(ps, lr=1e-3), "nadam": torch.optim.NAdam, "radam": torch.optim.RAdam,
             "adamax": torch.optim.Adamax, "sparse_adam": torch.optim.SparseAdam}
    for name, make in steps.items():
        p = torch.randn(1024, 1024, requires_grad=True)
        opt = make([p])
        p.grad = grad.to_sparse(1) if name == "sparse_adam" else grad.clone()
        print(f"{name}_step_1024x1024_ms {timing.median(opt.step, 40, reps) * 1e3:.4f}")

    x = torch.randn(1024, 512)
    target = torch.randn(1024, 128)
    start = torch.randn(128, 512) * 0.01
    w = start.clone().requires_grad_(True)
    evals = [0]

    def step():
        with torch.no_grad():
            w.copy_(start)
        opt = torch.optim.LBFGS([w], line_search_fn="strong_wolfe", max_iter=10, tolerance_grad=0, tolerance_change=0)

        def closure():
            opt.zero_grad()
            loss = ((x @ w.t() - target) ** 2).mean()
            loss.backward()
            return loss
        opt.step(closure)
        evals[0] = opt.state[w]["func_evals"]
    print(f"lbfgs_strong_wolfe_10_iter_65536_params_ms {timing.median(step, 3, 3 if '--quick' in sys.argv else 7) * 1e3:.4f}")
    print(f"lbfgs_strong_wolfe_10_iter_closure_evals {evals[0]}")


if __name__ == "__main__":
    main()
