"""Timing shared by the PyTorch side of the benchmarks: median wall-clock seconds after a warm-up."""
import time


def median(fn, warmup, reps, clock=time.perf_counter):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(reps):
        t0 = clock()
        fn()
        ts.append(clock() - t0)
    ts.sort()
    return ts[len(ts) // 2]
