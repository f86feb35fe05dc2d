"""PyTorch side of `jtorch bench sort`: the same cases as SortBench.java, printed as 'name ms' lines."""
import sys

import torch

from timing import median


def main():
    quick = "--quick" in sys.argv
    reps = 3 if quick else 10
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1024, 1024, generator=g)
    v = torch.randn(1 << 20, generator=g)
    ints = torch.randint(0, 1000, (1 << 20,), generator=g)
    bounds = torch.randn(1000).sort().values
    q = torch.randn(10000)
    probs = torch.rand(1000)
    cases = {
        "sort_1024x1024_dim1_ms": lambda: x.sort(1),
        "sort_1024x1024_dim0_ms": lambda: x.sort(0),
        "argsort_1M_ms": lambda: v.argsort(),
        "topk10_1024x1024_ms": lambda: x.topk(10),
        "median_1024x1024_dim1_ms": lambda: x.median(1),
        "unique_1M_int64_inverse_counts_ms": lambda: torch.unique(ints, return_inverse=True, return_counts=True),
        "searchsorted_1000_bounds_10000_values_ms": lambda: torch.searchsorted(bounds, q),
        "multinomial_1000_cats_10000_samples_ms": lambda: torch.multinomial(probs, 10000, True),
        "multinomial_1000_cats_100_no_replacement_ms": lambda: torch.multinomial(probs, 100, False),
    }
    for name, fn in cases.items():
        print(f"{name} {median(fn, 10, reps) * 1e3:.4f}")


if __name__ == "__main__":
    torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else torch.get_num_threads())
    main()
