"""Per-call cost of batch norm in training mode at ResNet-20's [128, C, P, P] for (64, 8), (32, 16), (16, 32), one thread, the
calling thread's CPU (time.thread_time), medians of CALLS calls after WARM seconds of thread CPU, the same operands every call:
aten.native_batch_norm (fwd), native_batch_norm_backward with all three gradients (full) and with the weight's and bias's only
(sums: the per-channel sums without the input-gradient pass) (docs/BENCHMARKS.md, issues 20 and 22, branch bnback24).

  env -u OPENBLAS_CORETYPE LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /usr/bin/python3 tools/batch_norm_torch.py 1 201
"""
import sys, time, torch
torch.set_num_threads(1)
warm = float(sys.argv[1]); calls = int(sys.argv[2])
aten = torch.ops.aten
for n, c, p in [(128, 64, 8), (128, 32, 16), (128, 16, 32)]:
    torch.manual_seed(0)
    x = torch.randn(n, c, p, p); g = torch.randn(n, c, p, p)
    w = torch.rand(c) + 0.5; b = torch.randn(c)
    rm = torch.zeros(c); rv = torch.ones(c)
    out, sm, si = aten.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5)
    fns = {
        'fwd': lambda: aten.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5),
        'full': lambda: aten.native_batch_norm_backward(g, x, w, rm, rv, sm, si, True, 1e-5, [True, True, True]),
        'sums': lambda: aten.native_batch_norm_backward(g, x, w, rm, rv, sm, si, True, 1e-5, [False, True, True]),
    }
    for name, f in fns.items():
        t0 = time.thread_time()
        while time.thread_time() - t0 < warm: f()
        t = []
        for _ in range(calls):
            a = time.thread_time(); f(); t.append((time.thread_time() - a) * 1e3)
        t.sort()
        print(f"{c}c {p}px {name:5s} median {t[calls//2]:.3f} ms  q1 {t[calls//4]:.3f} q3 {t[3*calls//4]:.3f}", flush=True)
