"""PyTorch side of `jtorch bench reduce`: the same reductions and softmax, printed as 'name value' lines (GB/s)."""
import sys
import time

import torch

from timing import median

BIG = 1 << 24


def main():
    quick = "--quick" in sys.argv
    # --cputime (with one thread, where the ops run on this thread): thread CPU time, as jtorch's --cputime.
    clock = time.thread_time if "--cputime" in sys.argv else time.perf_counter
    reps = 5 if quick else 15
    a = torch.rand(BIG)
    m = a.view(4096, 4096)
    ops = {
        "sum_16M": lambda: a.sum(),
        "sum_rows_4096x4096": lambda: m.sum(1),
        "sum_cols_4096x4096": lambda: m.sum(0),
        "mean_16M": lambda: a.mean(),
        "amax_16M": lambda: a.max(),
        "amax_rows_4096x4096": lambda: m.amax(1),
        "argmax_16M": lambda: a.argmax(),
        "argmax_rows_4096x4096": lambda: m.argmax(1),
        "argmax_cols_4096x4096": lambda: m.argmax(0),
        "var_16M": lambda: a.var(),
        "var_rows_4096x4096": lambda: m.var(1),
        "norm_16M": lambda: a.norm(),
        "softmax_rows_4096x4096": lambda: m.softmax(1),
        "log_softmax_rows_4096x4096": lambda: m.log_softmax(1),
        "softmax_cols_4096x4096": lambda: m.softmax(0),
        "log_softmax_cols_4096x4096": lambda: m.log_softmax(0),
    }
    for name, op in ops.items():
        softmax = "softmax" in name
        # As on the jtorch side: a second of warm-up (at least 5 calls), fewer timed runs for slow ops.
        t0, calls = time.perf_counter(), 0
        while calls < 5 or time.perf_counter() - t0 < 1.0:
            op()
            calls += 1
        once = (time.perf_counter() - t0) / calls
        t = median(op, 0, int(max(5, min(reps, 2 / once))), clock)
        print(f"{name}_GBps {(8.0 if softmax else 4.0) * BIG / t / 1e9:.4f}")


if __name__ == "__main__":
    torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else torch.get_num_threads())
    main()
