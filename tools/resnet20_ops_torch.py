"""ResNet-20 (batch 128) per-op costs in PyTorch at the examples step's shapes (docs/BENCHMARKS.md, issue 20, branch resnet20b):
the calling thread's CPU time with one thread (wall with more), ms a call and ms a step (a call times the calls a step).

  env -u OPENBLAS_CORETYPE LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /usr/bin/python3 tools/resnet20_ops_torch.py 1
"""
import sys, time
import torch
import torch.nn.functional as F
threads = int(sys.argv[1]); torch.set_num_threads(threads); torch.manual_seed(0)
clock = time.thread_time if threads == 1 else time.perf_counter
aten = torch.ops.aten
def per_call(fn, reps=6, rounds=5):
    fn(); fn()
    ts = []
    for _ in range(rounds):
        t0 = clock()
        for _ in range(reps): fn()
        ts.append((clock() - t0) / reps)
    return sorted(ts)[rounds // 2] * 1e3
rows = []
def conv(name, cin, cout, px, stride, calls, input_grad=True):
    x = torch.randn(128, cin, px, px); w = torch.randn(cout, cin, 3, 3) * 0.1
    y = F.conv2d(x, w, None, stride, 1); g = torch.randn_like(y)
    rows.append((f"conv fwd {name}", calls, per_call(lambda: F.conv2d(x, w, None, stride, 1))))
    if input_grad:
        rows.append((f"conv input grad {name}", calls, per_call(lambda: aten.convolution_backward(g, x, w, None, [stride]*2, [1, 1], [1, 1], False, [0, 0], 1, [True, False, False]))))
    rows.append((f"conv weight grad {name}", calls, per_call(lambda: aten.convolution_backward(g, x, w, None, [stride]*2, [1, 1], [1, 1], False, [0, 0], 1, [False, True, False]))))
conv("3->16 32px", 3, 16, 32, 1, 1, input_grad=False)
conv("16->16 32px", 16, 16, 32, 1, 6)
conv("16->32 s2", 16, 32, 32, 2, 1)
conv("32->32 16px", 32, 32, 16, 1, 5)
conv("32->64 s2", 32, 64, 16, 2, 1)
conv("64->64 8px", 64, 64, 8, 1, 5)
for c, px, calls in ((16, 32, 7), (32, 16, 6), (64, 8, 6)):
    x = torch.randn(128, c, px, px); w = torch.rand(c); b = torch.rand(c); rm = torch.zeros(c); rv = torch.ones(c)
    out, sm, si = aten.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5); g = torch.randn_like(x)
    rows.append((f"bn fwd {c}c {px}px", calls, per_call(lambda: aten.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5))))
    rows.append((f"bn bwd {c}c {px}px", calls, per_call(lambda: aten.native_batch_norm_backward(g, x, w, rm, rv, sm, si, True, 1e-5, [True, True, True]))))
    rows.append((f"relu {c}c {px}px", calls, per_call(lambda: torch.relu(x))))
    rows.append((f"relu bwd {c}c {px}px", calls, per_call(lambda: aten.threshold_backward(g, x, 0))))
    rows.append((f"add {c}c {px}px", 3, per_call(lambda: x + g)))
x = torch.randn(128, 64, 8, 8)
rows.append(("avgpool fwd", 1, per_call(lambda: F.adaptive_avg_pool2d(x, 1))))
tot = 0
print(f"torch {torch.__version__}, {threads} thread(s), {'thread CPU' if threads == 1 else 'wall'} ms")
for n, c, ms in rows:
    tot += ms * c
    print(f"{n:28s} {c:3d} {ms:9.3f} {ms*c:9.3f}")
print(f"{'total of these':28s}     {'':9s} {tot:9.3f}")
