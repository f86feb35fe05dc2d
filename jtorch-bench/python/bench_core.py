"""PyTorch side of `jtorch bench core`: the same measurements, printed as 'name value' lines."""
import sys

import torch

from timing import median

BIG = 1 << 24


def per_iteration(fn, batches, inner):
    def batch():
        for _ in range(inner):
            fn()
    return median(batch, max(3, batches // 4), batches) / inner


def main():
    quick = "--quick" in sys.argv
    reps = 5 if quick else 15
    r = {}
    a1, b1 = torch.ones(1), torch.ones(1)
    r["eager_add_1elem_us"] = per_iteration(lambda: a1.add(b1), reps * 4, 100_000) * 1e6
    m4 = torch.ones(4, 4)
    r["eager_view_us"] = per_iteration(lambda: m4.view(16), reps * 4, 100_000) * 1e6
    r["eager_transpose_us"] = per_iteration(lambda: m4.transpose(0, 1), reps * 4, 100_000) * 1e6
    r["eager_narrow_us"] = per_iteration(lambda: m4.narrow(1, 1, 2), reps * 4, 100_000) * 1e6
    a, b, out = torch.rand(BIG), torch.rand(BIG), torch.empty(BIG)
    t = median(lambda: out.copy_(a), 12, reps)
    r["copy_16M_f32_GBps"] = 2.0 * 4 * BIG / t / 1e9
    t = median(lambda: a.add(b), 12, reps)
    r["add_16M_f32_GBps"] = 3.0 * 4 * BIG / t / 1e9
    r["add_16M_f32_ms"] = t * 1e3
    t = median(lambda: a.mul(2.0), 12, reps)
    r["mul_scalar_16M_f32_GBps"] = 2.0 * 4 * BIG / t / 1e9
    t = median(lambda: a.relu(), 12, reps)
    r["relu_16M_f32_GBps"] = 2.0 * 4 * BIG / t / 1e9
    t = median(lambda: a.exp(), 12, reps)
    r["exp_16M_f32_GBps"] = 2.0 * 4 * BIG / t / 1e9
    t = median(lambda: a.sum(), 12, reps)
    r["sum_16M_f32_GBps"] = 4.0 * BIG / t / 1e9
    m = a.view(4096, 4096)
    t = median(lambda: m.sum(1), 12, reps)
    r["sum_rows_4096x4096_GBps"] = 4.0 * BIG / t / 1e9
    t = median(lambda: m.softmax(1), 5, reps)
    r["softmax_rows_4096x4096_GBps"] = 2.0 * 4 * BIG / t / 1e9
    for k, v in r.items():
        print(f"{k} {v:.4f}")


if __name__ == "__main__":
    torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else torch.get_num_threads())
    main()
