"""DCGAN (pytorch/examples at 32x32, batch 64: ExamplesBench's dcgan) per-op costs in PyTorch, with one thread, in the
calling thread's CPU time: each (transposed) convolution's forward, input gradient and weight gradient, batch norm, the
activations, ms a call and ms a step (a call times the calls a step makes), grouped as jtorch's kernel profile
(`JTORCH_NUM_THREADS=1 ./jtorch bench examples --only dcgan --cputime --profile`) names them: jtorch runs a transposed
convolution's forward as `convolution_transpose` (a convolution's input gradient) and its input gradient as
`convolution`, so each row is one kernel shape, whichever layer calls it (docs/BENCHMARKS.md, issue 20, branch dcgan26).
Warm-up: 3 s of thread CPU over all the calls first. Then the whole step (bench_examples.py's dcgan, its own set-up),
after 5 s of thread CPU of steps: the median and the least of 30 steps.

  LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/venv-torch213/bin/python tools/dcgan_ops_torch.py
"""
import os
import sys
import time
import torch
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)
aten = torch.ops.aten
B = 64


def per_call(fn, reps=3, rounds=7):
    ts = []
    for _ in range(rounds):
        t0 = time.thread_time()
        for _ in range(reps):
            fn()
        ts.append((time.thread_time() - t0) / reps)
    return sorted(ts)[rounds // 2] * 1e3


def conv_grads(x, w, g, stride, pad, transposed, mask):
    return aten.convolution_backward(g, x, w, None, [stride] * 2, [pad] * 2, [1, 1], transposed, [0, 0], 1, mask)


def layer(cin, cout, px, stride, pad, transposed):
    x = torch.randn(B, cin, px, px)
    w = torch.randn(cin, cout, 4, 4) * 0.02 if transposed else torch.randn(cout, cin, 4, 4) * 0.02
    op = F.conv_transpose2d if transposed else F.conv2d
    g = torch.randn_like(op(x, w, None, stride, pad))
    return (lambda: op(x, w, None, stride, pad),
            lambda: conv_grads(x, w, g, stride, pad, transposed, [True, False, False]),
            lambda: conv_grads(x, w, g, stride, pad, transposed, [False, True, False]))


# The discriminator's convolutions D1-D4 and the generator's transposed convolutions G1-G4 (bench_examples.py's dcgan).
D1, D2, D3, D4 = layer(1, 64, 32, 2, 1, False), layer(64, 128, 16, 2, 1, False), layer(128, 256, 8, 2, 1, False), layer(256, 1, 4, 1, 0, False)
G1, G2, G3, G4 = layer(100, 256, 1, 1, 0, True), layer(256, 128, 4, 2, 1, True), layer(128, 64, 8, 2, 1, True), layer(64, 1, 16, 2, 1, True)
FWD, IN, WT = 0, 1, 2
# (jtorch's kernel [its output shape], PyTorch's calls in one step: (layer, pass, calls)). The discriminator runs three
# times a step (real, detached fake, fake); its first layer's input gradient only in the generator's pass.
rows = [
    ("convolution [64, 256, 4, 4]", [(D3, FWD, 3), (G2, IN, 1)]),
    ("convolution [64, 128, 8, 8]", [(D2, FWD, 3), (G3, IN, 1)]),
    ("convolution [64, 64, 16, 16]", [(D1, FWD, 3), (G4, IN, 1)]),
    ("convolution [64, 1, 1, 1]", [(D4, FWD, 3)]),
    ("convolution_transpose [64, 128, 8, 8]", [(D3, IN, 3), (G2, FWD, 1)]),
    ("convolution_transpose [64, 64, 16, 16]", [(D2, IN, 3), (G3, FWD, 1)]),
    ("convolution_transpose [64, 1, 32, 32]", [(D1, IN, 1), (G4, FWD, 1)]),
    ("convolution_transpose [64, 256, 4, 4]", [(D4, IN, 3), (G1, FWD, 1)]),
    ("convolution_weight_grad [256, 128, 4, 4]", [(D3, WT, 3), (G2, WT, 1)]),
    ("convolution_weight_grad [128, 64, 4, 4]", [(D2, WT, 3), (G3, WT, 1)]),
    ("convolution_weight_grad [64, 1, 4, 4]", [(D1, WT, 3), (G4, WT, 1)]),
    ("convolution_weight_grad [100, 256, 4, 4]", [(G1, WT, 1)]),
    ("convolution_weight_grad [1, 256, 4, 4]", [(D4, WT, 3)]),
]
for c, px, calls in ((64, 16, 1), (128, 8, 4), (256, 4, 4)):
    x = torch.randn(B, c, px, px); w = torch.rand(c); b = torch.rand(c); rm = torch.zeros(c); rv = torch.ones(c)
    out, sm, si = aten.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5); g = torch.randn_like(x)
    # Default arguments bind this iteration's tensors (a closure would read the loop's last).
    rows.append((f"native_batch_norm [64, {c}, {px}, {px}]",
                 [((lambda x=x, w=w, b=b, rm=rm, rv=rv: aten.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5),), 0, calls)]))
    rows.append((f"native_batch_norm_backward [64, {c}, {px}, {px}]",
                 [((lambda g=g, x=x, w=w, rm=rm, rv=rv, sm=sm, si=si:
                    aten.native_batch_norm_backward(g, x, w, rm, rv, sm, si, True, 1e-5, [True, True, True]),), 0, calls)]))
for c, px in ((64, 16), (128, 8), (256, 4)):
    x = torch.randn(B, c, px, px); g = torch.randn_like(x)
    # Out of place: main.py's in-place call, repeated on one tensor, would shrink its negatives into denormals.
    rows.append((f"leaky_relu [64, {c}, {px}, {px}]", [((lambda x=x: F.leaky_relu(x, 0.2),), 0, 3)]))
    rows.append((f"leaky_relu_backward [64, {c}, {px}, {px}]", [((lambda g=g, x=x: aten.leaky_relu_backward(g, x, 0.2, True),), 0, 3)]))
    rows.append((f"relu [64, {c}, {px}, {px}]", [((lambda x=x: torch.relu(x),), 0, 1)]))
    rows.append((f"threshold_backward [64, {c}, {px}, {px}]", [((lambda g=g, x=x: aten.threshold_backward(g, x, 0),), 0, 1)]))

t0 = time.thread_time()
while time.thread_time() - t0 < 3:
    for _, parts in rows:
        for fns, p, _ in parts:
            fns[p]()
print(f"torch {torch.__version__}, 1 thread, thread CPU ms")
print(f"{'kernel (jtorch name)':44s} {'calls':>5s} {'ms a step':>10s}  (ms a call per layer pass)")
tot = 0
for name, parts in rows:
    step, calls, detail = 0, 0, []
    for fns, p, n in parts:
        ms = per_call(fns[p])
        step += ms * n; calls += n; detail.append(f"{n}x {ms:.3f}")
    tot += step
    print(f"{name:44s} {calls:5d} {step:10.3f}  ({', '.join(detail)})")
print(f"{'total of these':44s} {'':5s} {tot:10.3f}")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jtorch-bench", "python"))
import bench_examples  # noqa: E402 (after the path it lives on)
torch.manual_seed(0)
step = bench_examples.dcgan(torch)
t0 = time.thread_time()
while time.thread_time() - t0 < 5:
    step()
steps = []
for _ in range(30):
    t0 = time.thread_time()
    step()
    steps.append((time.thread_time() - t0) * 1e3)
steps.sort()
print(f"dcgan step (thread CPU ms): median {steps[15]:.2f}, least {steps[0]:.2f}")
