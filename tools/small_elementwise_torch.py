"""Per-call cost of ResNet-20's small elementwise ops (add, add_, relu, threshold_backward) at [128, C, P, P] for (16, 32), (32, 16),
(64, 8), one thread, the calling thread's CPU, medians of 201 calls after 1 s; "hot": the same operands every call, "cold": 12 operand
sets in rotation (about 24-96 MiB, out of the caches), as a training step meets them (docs/BENCHMARKS.md, issue 20/22, branch ew23).

  env -u OPENBLAS_CORETYPE LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /usr/bin/python3 tools/small_elementwise_torch.py
"""
import sys, time, torch
torch.set_num_threads(1); torch.manual_seed(0)
aten = torch.ops.aten
def med(fn, reps=201):
    t_end = time.perf_counter() + 1.0
    while time.perf_counter() < t_end: fn()
    ts = []
    for _ in range(reps):
        t0 = time.thread_time(); fn(); ts.append(time.thread_time() - t0)
    ts.sort(); return ts[reps // 2] * 1e3
for cold in (False, True):
    line = [torch.__version__, "cold" if cold else "hot"]
    res = {}
    for c, px in ((16, 32), (32, 16), (64, 8)):
        n = 12 if cold else 1
        A = [torch.randn(128, c, px, px) for _ in range(n)]; B = [torch.randn(128, c, px, px) for _ in range(n)]
        k = [0]
        def nxt():
            i = k[0] % n; k[0] += 1; return A[i], B[i]
        def add():
            a, b = nxt(); a + b
        def add_():
            a, b = nxt(); a.add_(b)
        def relu():
            a, b = nxt(); torch.relu(a)
        def thr():
            a, b = nxt(); aten.threshold_backward(b, a, 0)
        for name, f in (("add", add), ("add_", add_), ("relu", relu), ("thrbw", thr)):
            res.setdefault(name, []).append("%dc%dpx %.3f" % (c, px, med(f)))
            if name == "add_":
                for a in A: a.zero_()
    for name, v in res.items(): print(line[0], line[1], name, "  ".join(v), flush=True)
